"""The interactive session's loop: many turns, one conversation, and how it ends."""

from __future__ import annotations

import signal

from treadle.adapters.fakes import RecordingTerminal, ScriptedResponse
from treadle.domain.loop.stop import StopSignal
from treadle.domain.values.events import TurnStarted
from treadle.entrypoints.interactive import SessionInterrupts, run_interactive


class TypedTasks(RecordingTerminal):
    """A terminal whose person types the given lines at the prompt, then leaves."""

    def __init__(self, *lines: str) -> None:
        super().__init__()
        self.lines = list(lines)
        self.prompts = 0
        self.stopped = 0

    async def read_task(self) -> str | None:
        self.prompts += 1
        return self.lines.pop(0) if self.lines else None

    def stop_prompt(self) -> None:
        self.stopped += 1


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
