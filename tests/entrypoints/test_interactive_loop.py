"""The interactive session's loop: many turns, one conversation, and how it ends."""

from __future__ import annotations

import signal

from treadle.adapters.demo import demo_model
from treadle.adapters.fakes import (
    FakeClock,
    FakeRunner,
    MemoryTranscript,
    RecordingTerminal,
    ScriptedResponse,
)
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.stop import StopSignal
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.values.events import TurnEnded, TurnStarted
from treadle.entrypoints.interactive import SessionInterrupts, run_interactive


class TypedTasks(RecordingTerminal):
    """A terminal whose person types the given lines at the prompt, then leaves."""

    def __init__(self, *lines: str) -> None:
        super().__init__()
        self.lines = list(lines)
        self.prompts = 0
        self.stopped = 0
        self.said: list[tuple[list[str], bool]] = []

    async def read_task(self) -> str | None:
        self.prompts += 1
        return self.lines.pop(0) if self.lines else None

    def stop_prompt(self) -> None:
        self.stopped += 1

    def report(self, lines: list[str], *, problem: bool = False) -> None:
        self.said.append((lines, problem))


async def test_turns_go_on_one_conversation_until_the_person_leaves(rig) -> None:
    prompt = TypedTasks("first task", "", "   ", "second task")
    built = rig(
        [ScriptedResponse.saying("First answer."), ScriptedResponse.saying("Second answer.")],
        terminal=prompt,
    )
    assert await run_interactive(built.agent, prompt) == 0
    started = [e.task for e in prompt.events if isinstance(e, TurnStarted)]
    assert started == ["first task", "second task"]
    second = built.model.requests[1].messages
    assert [(m.role, m.text) for m in second] == [
        ("user", "first task"),
        ("assistant", "First answer."),
        ("user", "second task"),
    ]
    assert prompt.prompts == 5  # the fifth prompt met Ctrl-D


async def test_exit_ends_the_session_without_reading_on(rig) -> None:
    prompt = TypedTasks("/exit", "never run")
    built = rig([ScriptedResponse.saying("unused")], terminal=prompt)
    assert await run_interactive(built.agent, prompt) == 0
    assert prompt.lines == ["never run"] and not built.model.requests


async def test_help_and_an_unknown_word_are_answered_and_never_reach_the_model(rig) -> None:
    prompt = TypedTasks("/help", "/nonsense", "/dif", "real task")
    built = rig([ScriptedResponse.saying("Done.")], terminal=prompt)
    commands = {"/diff": _never, "/undo": _never}
    assert await run_interactive(built.agent, prompt, commands=commands) == 0
    assert [m.text for m in built.model.requests[0].messages] == ["real task"]
    assert len(built.model.requests) == 1
    (listing, problem), (nonsense, bad), (typo, _) = prompt.said
    assert not problem and [line.split()[0] for line in listing[:-1]] == [
        "/help",
        "/diff",
        "/undo",
        "/exit",
    ]
    assert bad and nonsense == ["unknown command /nonsense (/help lists them; nothing was sent)"]
    assert "did you mean /diff?" in typo[0]


async def _never() -> None:
    raise AssertionError("the command ran")


async def test_the_demo_answers_any_number_of_tasks_in_one_session() -> None:
    from tests.golden.demo_scenario import DEMO_COMMANDS

    clock = FakeClock()
    prompt_tasks = ["show me", "now fix the bug", "and a third"]
    prompt = TypedTasks(*prompt_tasks)
    model = demo_model(clock)
    ports = TurnPorts(model, clock, FakeRunner(clock, DEMO_COMMANDS), prompt, MemoryTranscript())
    agent = Agent(ports, TurnSettings(approval="auto"), core_tools())
    assert await run_interactive(agent, prompt) == 0
    started = [e.task for e in prompt.events if isinstance(e, TurnStarted)]
    assert [task for task in started if task in prompt_tasks] == prompt_tasks
    ended = [e.outcome.screen_line for e in prompt.events if isinstance(e, TurnEnded)]
    assert ended.count("Turn finished") == 3 and "Turn failed" not in " ".join(ended)
    answers = [m.text for m in agent.history.messages if m.role == "assistant" and not m.tool_calls]
    assert "now fix the bug" in answers[-2] and "and a third" in answers[-1]
    assert all("--model" in answer for answer in answers[-2:])


class Time:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_signal_stops_the_running_turn_or_ends_the_prompt() -> None:
    prompt, time = TypedTasks(), Time()
    interrupts = SessionInterrupts(prompt, now=time)
    interrupts.stop = StopSignal()
    interrupts.signalled(signal.SIGINT)
    assert interrupts.stop.is_set and not interrupts.ending
    interrupts.stop = None
    time.now += 5.0
    interrupts.signalled(signal.SIGINT)
    assert interrupts.ending and prompt.stopped == 1


def test_a_second_sigint_within_the_window_leaves_at_once_wherever_it_lands() -> None:
    left: list[str] = []
    prompt, time = TypedTasks(), Time()
    interrupts = SessionInterrupts(prompt, lambda: left.append("now"), now=time)
    interrupts.stop = StopSignal()
    interrupts.signalled(signal.SIGINT)
    interrupts.stop = None  # the turn ended: the second lands at the prompt
    time.now += 1.5
    interrupts.signalled(signal.SIGINT)
    assert left == ["now"] and prompt.stopped == 0
    time.now += 10.0
    interrupts.signalled(signal.SIGTERM)  # SIGTERM never leaves at once
    assert left == ["now"] and prompt.stopped == 1


def test_sigterm_during_a_turn_ends_the_session_after_it() -> None:
    interrupts = SessionInterrupts(TypedTasks())
    interrupts.stop = StopSignal()
    interrupts.signalled(signal.SIGTERM)
    assert interrupts.stop.is_set and interrupts.ending


async def test_a_session_ended_by_a_signal_exits_130(rig) -> None:
    prompt = TypedTasks("a task", "another")
    built = rig([ScriptedResponse.saying("ok"), ScriptedResponse.saying("ok")], terminal=prompt)
    interrupts = SessionInterrupts(prompt)
    interrupts.ending = True  # a SIGTERM came before the first prompt
    assert await run_interactive(built.agent, prompt, interrupts) == 130
    assert not built.model.requests


def test_a_ctrl_c_key_and_a_sigint_share_one_memory_of_the_last_ctrl_c() -> None:
    import io

    from blessed import Terminal

    from treadle.adapters.blessed_terminal import BlessedTerminal
    from treadle.adapters.blessed_terminal.line_editor import Key

    left: list[str] = []
    time = Time()
    term = Terminal(kind="xterm-256color", stream=io.StringIO(), force_styling=True)
    terminal = BlessedTerminal(
        term, input_fd=None, now=time, live=False, leave_now=lambda: left.append("now")
    )
    interrupts = SessionInterrupts(terminal, terminal.leave_now, now=time, ctrl_c=terminal.ctrl_c)
    stop = interrupts.stop = StopSignal()
    terminal.bind_interrupt(lambda: stop.set("interrupted"))
    terminal.press(Key.CTRL_C)  # the key: stops the turn
    assert stop.is_set and left == []
    time.now += 1.0
    interrupts.signalled(signal.SIGINT)  # a kill -INT a second later: the second Ctrl-C
    assert left == ["now"]
