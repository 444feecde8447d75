"""The headless terminals: plain lines and JSON lines, never an escape code."""

from __future__ import annotations

import io
import json

import pytest

from treadle.adapters.terminal.plain_terminal import JsonLinesTerminal, PlainTerminal
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    MessageAdded,
    Notice,
    RetryScheduled,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome
from treadle.domain.values.text import printable
from treadle.domain.values.tools import ToolEnding

HOSTILE = "\x1b]0;owned\x07\x1b[31mred\x9b2J\r"
CALL = ToolCall("c1", "bash", '{"command": "ls"}')


def a_turn(terminal: PlainTerminal) -> None:
    terminal.show(TurnStarted("task " + HOSTILE))
    terminal.show(MessageAdded(Message.user("task")))
    terminal.show(AnswerDelta("Looking " + HOSTILE))
    terminal.show(ToolStarted(CALL, "ls " + HOSTILE))
    terminal.show(ToolFinished(CALL, "exit 0 · 0.01 s", False, 0.01))
    terminal.show(RetryScheduled(2, 3, 2.0, "503 Service Unavailable"))
    terminal.show(TurnEnded(TurnOutcome(OutcomeKind.PAUSED), Usage(10, 5), 2, 1.5))


def test_plain_lines_carry_no_escape_code_whatever_the_model_writes() -> None:
    out = io.StringIO()
    a_turn(PlainTerminal(out, resume_hint=" — resume with: treadle --resume S1"))
    text = out.getvalue()
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text and "\r" not in text
    assert text.splitlines() == [
        "Task: task red",
        "Looking red",
        "→ bash: ls red",
        "  ✓ bash: exit 0 · 0.01 s",
        "retrying in 2 s — 503 Service Unavailable, attempt 2 of 3",
        "2 requests · 10 in / 5 out tokens · 1.5 s",
        "Turn paused — resume with: treadle --resume S1",
    ]


def test_json_lines_skip_messages_and_end_with_the_outcome() -> None:
    out = io.StringIO()
    a_turn(JsonLinesTerminal(out, resume_hint=" — resume with: treadle --resume S1"))
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert "message_added" not in [r["type"] for r in records]
    assert records[0] == {"type": "turn_started", "task": "task " + HOSTILE, "agent": ""}
    assert records[-1]["type"] == "turn_ended"
    assert records[-1]["exit_code"] == 130 and records[-1]["line"] == "Turn paused"
    assert records[-1]["resume_hint"] == "resume with: treadle --resume S1"


@pytest.mark.parametrize("kind", [k for k in OutcomeKind if k is not OutcomeKind.FINISHED])
def test_every_outcome_but_finished_carries_the_resume_hint(kind: OutcomeKind) -> None:
    hint = " — resume with: treadle --resume S1"
    plain, lines = io.StringIO(), io.StringIO()
    for terminal in (
        PlainTerminal(plain, resume_hint=hint),
        JsonLinesTerminal(lines, resume_hint=hint),
    ):
        terminal.show(TurnEnded(TurnOutcome(kind, "why"), Usage(1, 1), 1, 0.1))
    assert plain.getvalue().splitlines()[-1].endswith(hint)
    assert json.loads(lines.getvalue().splitlines()[-1])["resume_hint"] == hint.strip(" —")


def test_a_finished_turn_carries_no_resume_hint() -> None:
    hint = " — resume with: treadle --resume S1"
    plain, lines = io.StringIO(), io.StringIO()
    for terminal in (
        PlainTerminal(plain, resume_hint=hint),
        JsonLinesTerminal(lines, resume_hint=hint),
    ):
        terminal.show(TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(1, 1), 1, 0.1))
    assert plain.getvalue().splitlines()[-1] == "Turn finished"
    assert "resume_hint" not in json.loads(lines.getvalue().splitlines()[-1])


def test_json_lines_escape_every_control_character() -> None:
    out = io.StringIO()
    a_turn(JsonLinesTerminal(out))
    raw = out.getvalue()
    assert "\x1b" not in raw and "\x9b" not in raw and "\x07" not in raw and "\r" not in raw
    assert "\\u001b" in raw and "\\u009b" in raw


def test_printable_keeps_tabs_newlines_and_unicode() -> None:
    assert printable("a\tb\nc — ✓ 漢\x00\x7f") == "a\tb\nc — ✓ 漢"


def test_a_continued_answer_reads_as_one_line_with_the_note_after_it() -> None:
    from treadle.domain.values.events import AnswerDelta, ContinuationRequested

    out = io.StringIO()
    terminal = PlainTerminal(out)
    terminal.show(AnswerDelta("The quick brown "))
    terminal.show(ContinuationRequested(1, 16384))
    terminal.show(AnswerDelta("fox."))
    terminal.show(TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(1, 2), 2, 0.5))
    assert out.getvalue().splitlines() == [
        "The quick brown fox.",
        "… answer cut by its token budget; continuing (1, 16384 tokens)",
        "2 requests · 1 in / 2 out tokens · 0.5 s",
        "Turn finished",
    ]


@pytest.mark.parametrize("width", [None, 80])
def test_a_note_in_the_middle_of_a_line_comes_where_that_line_ends(width: int | None) -> None:
    from treadle.domain.values.events import AnswerDelta, ContinuationRequested

    out = io.StringIO()
    terminal = PlainTerminal(out, width=(lambda: 80) if width else None)
    terminal.show(AnswerDelta("The quick brown "))
    terminal.show(ContinuationRequested(1, 16384))
    terminal.show(AnswerDelta("fox.\nIt jumped "))
    terminal.show(AnswerDelta("over the dog.\n"))
    terminal.show(TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(1, 2), 2, 0.5))
    assert out.getvalue().splitlines() == [
        "The quick brown fox.",
        "… answer cut by its token budget; continuing (1, 16384 tokens)",
        "It jumped over the dog.",
        "2 requests · 1 in / 2 out tokens · 0.5 s",
        "Turn finished",
    ]


def test_a_reader_that_went_away_pauses_the_turn_instead_of_crashing() -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    stopped: list[bool] = []
    terminal = PlainTerminal(ClosedPipe())
    terminal.bind_interrupt(lambda: stopped.append(True))
    a_turn(terminal)
    assert terminal.reader_gone
    assert stopped == [True]


def test_a_notice_is_one_warning_line_in_print_and_an_event_in_json():
    out = io.StringIO()
    PlainTerminal(out).show(Notice("tools_dropped", "the server\ndrops tools"))
    assert out.getvalue() == "warning: the server drops tools\n"
    out = io.StringIO()
    JsonLinesTerminal(out).show(Notice("tools_dropped", "drops tools"))
    assert json.loads(out.getvalue()) == {
        "type": "notice",
        "kind": "tools_dropped",
        "text": "drops tools",
        "agent": "",
    }


def test_a_call_stopped_at_its_deadline_is_marked_stopped_not_done() -> None:
    out = io.StringIO()
    call = ToolCall("call_9", "agent", "{}")
    PlainTerminal(out).show(ToolFinished(call, "deadline", False, 3.0, ending=ToolEnding.DEADLINE))
    PlainTerminal(out).show(ToolFinished(call, "finished", False, 3.0))
    assert out.getvalue().splitlines() == ["  ■ agent: deadline", "  ✓ agent: finished"]


STOPPED = Notice("mcp_server_stopped", "MCP server slow stopped: it stopped answering.")
ENDED = TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(1, 2), 2, 0.5)


def test_with_outcome_last_what_the_sessions_end_says_comes_before_the_outcome() -> None:
    plain, lines = io.StringIO(), io.StringIO()
    for terminal in (
        PlainTerminal(plain, outcome_last=True),
        JsonLinesTerminal(lines, outcome_last=True),
    ):
        terminal.show(AnswerDelta("Done."))
        terminal.show(ENDED)
        terminal.show(STOPPED)  # an MCP server stopped while the session closed
        terminal.finish()
        terminal.finish()  # once
    assert plain.getvalue().splitlines() == [
        "Done.",
        "warning: MCP server slow stopped: it stopped answering.",
        "2 requests · 1 in / 2 out tokens · 0.5 s",
        "Turn finished",
    ]
    kinds = [json.loads(line)["type"] for line in lines.getvalue().splitlines()]
    assert kinds == ["answer_delta", "notice", "turn_ended"]


def test_with_outcome_last_a_turns_outcome_goes_before_the_next_turns_start() -> None:
    out = io.StringIO()
    terminal = JsonLinesTerminal(out, outcome_last=True)
    for task in ("one", "two"):
        terminal.show(TurnStarted(task))
        # A sub-agent's end is one more line of the turn, never held back.
        terminal.show(TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(), 1, 0.1, "agent-1"))
        terminal.show(ENDED)
    terminal.finish()
    shown = [
        (r["type"], r.get("task", r["agent"])) for r in map(json.loads, out.getvalue().splitlines())
    ]
    assert shown == [
        ("turn_started", "one"),
        ("turn_ended", "agent-1"),
        ("turn_ended", ""),
        ("turn_started", "two"),
        ("turn_ended", "agent-1"),
        ("turn_ended", ""),
    ]


def test_without_outcome_last_the_outcome_is_written_as_it_comes() -> None:
    out = io.StringIO()
    terminal = PlainTerminal(out)
    terminal.show(ENDED)
    assert out.getvalue().splitlines()[-1] == "Turn finished"
