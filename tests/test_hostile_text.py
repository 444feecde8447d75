"""Any text at all from the model — lone surrogates, controls, escape sequences, bidi
overrides, a huge line — goes through every path to the screen, the transcript and the
tools, and the turn still ends with one true last line."""

from __future__ import annotations

import asyncio
import io
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treadle.adapters.blessed_terminal import BlessedTerminal
from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.terminal.plain_terminal import JsonLinesTerminal, PlainTerminal
from treadle.adapters.tools import file_tools
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript, read_transcript
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import TurnEvent
from treadle.domain.values.outcome import FailureKind, TurnOutcome
from treadle.domain.values.text import quoted_path
from treadle.ports.terminal import Terminal

# Every code point, surrogates and controls included, with the dangerous ones often.
HOSTILE = "\ud800\udfff\x1b[2J\x9b\x07\x00\r\u202e\u2066\u200f\u061c\u2028\ufeff\n\t"
anything = st.text(
    st.one_of(st.characters(codec=None, categories=None), st.sampled_from(HOSTILE)),
    max_size=200,
)
huge = st.builds(lambda piece, times: piece * times, anything, st.integers(0, 2_000))
NEVER_ON_SCREEN = "\x1b\x9b\x07\x00\u202e\u2066\u200f\u061c\u2028"


class Screens:
    """The turn's events shown on every kind of screen at once, and kept."""

    def __init__(self, folder: Path) -> None:
        self.plain, self.json, self.tty = io.StringIO(), io.StringIO(), io.StringIO()
        self.terminals: Sequence[Terminal] = (
            PlainTerminal(self.plain),
            JsonLinesTerminal(self.json),
            BlessedTerminal(_term(self.tty), input_fd=None, live=False),
        )
        self.transcript = JsonlTranscript(folder / "transcript.jsonl")

    def show(self, event: TurnEvent) -> None:
        for terminal in self.terminals:
            terminal.show(event)
        self.transcript.record(event)

    async def ask_approval(self, request: object) -> None:
        return None

    async def ask_question(self, question: str) -> None:
        return None

    def bind_interrupt(self, interrupt: object) -> None:
        pass


def _term(stream: io.StringIO) -> object:
    from blessed import Terminal as Blessed

    return Blessed(kind="xterm-256color", stream=stream, force_styling=True)


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(f"c-{name}", name, json.dumps(arguments, ensure_ascii=False))


async def _turn(text: str, folder: Path) -> tuple[TurnOutcome, Screens]:
    workspace = folder / "work"
    workspace.mkdir()
    calls = (
        _call("bash", command=f"echo {text}"),
        _call("update_plan", steps=[{"step": text, "status": "in_progress"}], explanation=text),
        _call("write_file", path="notes.txt", content=text),
        _call("read_file", path=text or "x"),
        ToolCall("c-broken", "bash", text),  # arguments that are whatever the model wrote
        ToolCall(text, text, "{}"),  # an unknown tool with a hostile id
    )
    script = [R((text, text), calls), R((), (_call("ask", question=text),))]
    clock = FakeClock()
    screens = Screens(folder)
    runner = FakeRunner(clock, {f"echo {text}": FakeProcess(text.encode("utf-8", "replace"))})
    ports = TurnPorts(ScriptedModel(script, clock), clock, runner, screens)
    budget = TokenBudget(initial=1_000_000, cap=1_000_000)  # the text may be huge: let it be
    settings = TurnSettings(workspace=str(workspace), session_dir=str(folder), budget=budget)
    agent = Agent(ports, settings, core_tools() + file_tools())
    outcome = await agent.run_turn(text or "task")
    screens.transcript.close()
    return outcome, screens


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(anything, huge))
def test_any_model_text_reaches_every_screen_the_transcript_and_the_tools(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome, screens = asyncio.run(_turn(text, Path(folder)))
        assert outcome.reason is not FailureKind.INTERNAL, outcome.detail
        assert outcome.screen_line.startswith("Turn waiting for input: ")
        for shown in (screens.plain.getvalue(), screens.json.getvalue()):
            shown.encode("utf-8")  # every character can be written to a terminal
            assert not any(bad in shown for bad in NEVER_ON_SCREEN)
        plain_lines = screens.plain.getvalue().splitlines()
        assert plain_lines[-1] == outcome.screen_line  # one true last line
        json_lines = screens.json.getvalue().splitlines()
        assert json.loads(json_lines[-1])["exit_code"] == outcome.exit_code == 4
        assert not any(bad in screens.tty.getvalue() for bad in "\x00\u202e\u2066\ud800")
        events = list(read_transcript(Path(folder) / "transcript.jsonl"))
        assert len(events) > 10


@given(anything, st.one_of(anything, st.builds(quoted_path, anything)))
def test_a_quoted_file_name_is_one_printable_line_and_tells_two_names_apart(first, second):
    shown = quoted_path(first)
    assert shown.isprintable() and not set(NEVER_ON_SCREEN) & set(shown)
    if first != second:
        assert shown != quoted_path(second)
