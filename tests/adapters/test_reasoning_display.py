"""Reasoning on every screen: apart from the answer, never mixed into it. The terminal
dims it and folds it to one line with a key to see it all; plain lines show it only
with --verbose; JSON lines carry it as an event kind of its own. And the turn's last
lines say its tokens by kind and, where prices are known, what it cost."""

from __future__ import annotations

import io
import json

import pytest

from tests.adapters.test_blessed_terminal import Rig
from treadle.adapters.blessed_terminal.line_editor import Key
from treadle.adapters.terminal.plain_terminal import JsonLinesTerminal, PlainTerminal, token_counts
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import (
    AnswerDelta,
    ContinuationRequested,
    ReasoningDelta,
    RequestSent,
    ResponseReceived,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome

SPENT = Usage(12_000, 600, cache_read_tokens=9_000, cache_write_tokens=2_000, reasoning_tokens=400)
FINISHED = TurnOutcome(OutcomeKind.FINISHED)


def a_thinking_turn() -> list[TurnEvent]:
    return [
        TurnStarted("fix it"),
        RequestSent(1, 1, 8192, 1, "d"),
        ReasoningDelta("The test reads\n"),
        ReasoningDelta("a missing file."),
        AnswerDelta("It needs a fixture."),
        ResponseReceived(1, "It needs a fixture.", (), SPENT, "end_turn"),
        TurnEnded(FINISHED, SPENT, 1, 2.0, cost=0.0123),
    ]


def plain(events: list[TurnEvent], *, verbose: bool) -> list[str]:
    out = io.StringIO()
    terminal = PlainTerminal(out, verbose=verbose)
    for event in events:
        terminal.show(event)
    return out.getvalue().splitlines()


def test_plain_lines_leave_reasoning_out_unless_verbose() -> None:
    assert plain(a_thinking_turn(), verbose=False) == [
        "Task: fix it",
        "It needs a fixture.",
        "1 request · 12000 in (9000 cached, 2000 to cache) / 600 out (400 reasoning) tokens"
        " · $0.0123 · 2.0 s",
        "Turn finished",
    ]


def test_verbose_plain_lines_show_reasoning_on_lines_of_its_own_before_the_answer() -> None:
    assert plain(a_thinking_turn(), verbose=True)[:4] == [
        "Task: fix it",
        "thinking: The test reads",
        "  a missing file.",
        "It needs a fixture.",
    ]


def test_reasoning_of_a_continued_answer_waits_for_the_answer_line_to_end() -> None:
    events: list[TurnEvent] = [
        TurnStarted("go"),
        AnswerDelta("The answer "),
        ResponseReceived(1, "The answer ", (), Usage(), "max_tokens"),
        ContinuationRequested(1, 16384),
        ReasoningDelta("Where was I?"),
        AnswerDelta("goes on."),
        ResponseReceived(2, "goes on.", (), Usage(), "end_turn"),
        TurnEnded(FINISHED, Usage(), 2, 1.0),
    ]
    assert plain(events, verbose=True)[1:4] == [
        "The answer goes on.",
        "thinking: Where was I?",
        "… answer cut by its token budget; continuing (1, 16384 tokens)",
    ]


def test_json_lines_carry_reasoning_as_its_own_event_and_usage_by_kind() -> None:
    out = io.StringIO()
    terminal = JsonLinesTerminal(out)
    for event in a_thinking_turn():
        terminal.show(event)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["text"] for r in records if r["type"] == "reasoning_delta"] == [
        "The test reads\n",
        "a missing file.",
    ]
    assert [r["text"] for r in records if r["type"] == "answer_delta"] == ["It needs a fixture."]
    assert records[-1]["usage"] == {
        "input_tokens": 12_000,
        "output_tokens": 600,
        "cache_read_tokens": 9_000,
        "cache_write_tokens": 2_000,
        "reasoning_tokens": 400,
    }
    assert records[-1]["cost"] == 0.0123


@pytest.mark.parametrize(
    ("usage", "line"),
    [
        (Usage(10, 5), "10 in / 5 out tokens"),
        (Usage(1000, 5, cache_read_tokens=900), "1,000 in (900 cached) / 5 out tokens"),
        (Usage(10, 5, reasoning_tokens=3), "10 in / 5 out (3 reasoning) tokens"),
    ],
)
def test_token_counts_name_only_the_kinds_there_are(usage: Usage, line: str) -> None:
    assert token_counts(usage, ",") == line


# The interactive terminal -------------------------------------------------------------


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    monkeypatch.delenv("NO_COLOR", raising=False)
    return Rig()


def test_reasoning_streams_in_a_dim_live_row_then_folds_to_one_line(rig: Rig) -> None:
    rig.start()
    rig.terminal.show(RequestSent(1, 1, 8192, 1, "d"))
    rig.terminal.show(ReasoningDelta("The test reads\n"))
    rig.time.now += 1
    rig.terminal.show(ReasoningDelta("a missing file."))
    live = rig.lines
    assert "✻ a missing file." in live  # how it ends, as it streams
    assert any(line.startswith("thinking · 1 request") for line in live)
    rig.terminal.show(AnswerDelta("It needs a fixture."))
    rig.terminal.show(ResponseReceived(1, "It needs a fixture.", (), SPENT, "end_turn"))
    lines = rig.lines
    assert lines[1:3] == ["✻ thought for 6 words · ctrl-o to expand", "It needs a fixture."]
    assert "The test reads" not in "\n".join(lines)
    assert rig.term.dim("✻ thought for 6 words · ctrl-o to expand") in rig.out.getvalue()


def test_ctrl_o_shows_the_folded_reasoning_in_full_once(rig: Rig) -> None:
    rig.start()
    rig.terminal.show(ReasoningDelta("The test reads\na missing file."))
    rig.terminal.show(AnswerDelta("It needs a fixture."))
    rig.terminal.show(TurnEnded(FINISHED, SPENT, 1, 2.0, cost=0.0123))
    rig.terminal.press(Key.CTRL_O)
    rig.terminal.press(Key.CTRL_O)  # shown once: nothing more to show
    lines = rig.lines
    assert lines[-3:] == ["✻ thinking", "  The test reads", "  a missing file."]
    assert lines[3:5] == [  # the totals' line, broken between words at 100 columns
        "1 request · 12,000 in (9,000 cached, 2,000 to cache) / 600 out (400 reasoning) tokens"
        " · $0.0123",
        "· 2.0 s",
    ]


def test_verbose_shows_the_reasoning_in_full_at_once() -> None:
    rig = Rig()
    rig.terminal.verbose = True
    rig.start()
    rig.terminal.show(ReasoningDelta("One.\nTwo."))
    rig.terminal.show(AnswerDelta("Answer."))
    assert rig.lines[1:5] == ["✻ thinking", "  One.", "  Two.", "Answer."]


def test_a_sub_agents_reasoning_is_not_shown_on_the_main_screen(rig: Rig) -> None:
    rig.start()
    rig.terminal.show(ReasoningDelta("secret plans", agent="agent-1"))
    rig.terminal.show(AnswerDelta("Done."))
    assert not any("✻" in line for line in rig.lines)
