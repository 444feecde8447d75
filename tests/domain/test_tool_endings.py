"""How a tool call ended is a closed value beside its display line."""

from __future__ import annotations

import pytest

from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import ToolFinished, ToolMark
from treadle.domain.values.tools import ToolEnding, ToolResult

CALL = ToolCall("c1", "agent", "{}")


@pytest.mark.parametrize(
    ("result", "ending"),
    [
        (ToolResult("ok", status="exit 0 · 0.1 s"), ToolEnding.FINISHED),
        (ToolResult("no", is_error=True, status="exit 1 · 0.1 s"), ToolEnding.FAILED),
        (ToolResult("no", True, "refused", ending=ToolEnding.REFUSED), ToolEnding.REFUSED),
        (ToolResult("report", status="x", ending=ToolEnding.DEADLINE), ToolEnding.DEADLINE),
    ],
)
def test_a_result_says_how_it_ended_or_is_finished_or_failed(result, ending):
    assert result.ended is ending


@pytest.mark.parametrize(
    ("finished", "mark"),
    [
        (ToolFinished(CALL, "finished", False, 1.0), ToolMark.DONE),
        # The line is for people: a deadline is the ending, not the words.
        (ToolFinished(CALL, "deadline", False, 1.0), ToolMark.DONE),
        (
            ToolFinished(CALL, "at its deadline", False, 1.0, ending=ToolEnding.DEADLINE),
            ToolMark.STOPPED,
        ),
        (ToolFinished(CALL, "stopped", True, 1.0, ending=ToolEnding.STOPPED), ToolMark.FAILED),
    ],
)
def test_the_mark_on_the_screen_goes_by_the_ending(finished, mark):
    assert finished.mark is mark


def test_the_endings_that_end_a_turn_are_spelled_as_the_turns_outcomes():
    from treadle.domain.values.outcome import OutcomeKind

    assert ToolEnding.BLOCKED.value == OutcomeKind.BLOCKED.value
    assert ToolEnding.WAITING.value == OutcomeKind.WAITING.value
