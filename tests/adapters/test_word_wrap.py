"""Streamed text word-wrapped to a width (``--print`` on a terminal): pieces in, the
same text out with its long rows broken between words."""

from __future__ import annotations

import io

import pytest

from treadle.adapters.terminal.plain_terminal import PlainTerminal
from treadle.adapters.terminal.word_wrap import WordWrap, width_of
from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.events import AnswerDelta, ToolFinished, ToolStarted, TurnEnded
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome

TEXT = (
    "The deadline is missed because its clock is never stopped.\n"
    "- a list item long enough to wrap under itself\n"
    "  1. nested, and it wraps too\n"
    "\n"
    "supercalifragilisticexpialidocious_and_then_some end"
)


def wrapped(text: str, width: int, pieces: int) -> str:
    wrap = WordWrap(lambda: width)
    size = max(1, len(text) // pieces)
    out = [wrap.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return "".join(out) + wrap.flush()


@pytest.mark.parametrize("pieces", [1, 7, len(TEXT)], ids=["whole", "chunks", "by-character"])
def test_rows_break_between_words_with_hanging_indents_however_the_text_streams(pieces):
    assert wrapped(TEXT, 20, pieces).split("\n") == [
        "The deadline is",
        "missed because its",
        "clock is never",
        "stopped.",
        "- a list item long",
        "  enough to wrap",
        "  under itself",
        "  1. nested, and it",
        "     wraps too",
        "",
        "supercalifragilistic",
        "expialidocious_and_t",
        "hen_some end",
    ]


@pytest.mark.parametrize("width", [20, 33, 47, 80])
def test_no_row_is_wider_than_the_terminal_and_only_spaces_are_lost(width):
    out = wrapped(TEXT * 3, width, 13)
    assert max(width_of(row) for row in out.split("\n")) <= width
    assert out.replace("\n", "").replace(" ", "") == (TEXT * 3).replace("\n", "").replace(" ", "")


def test_wide_characters_count_two_columns():
    assert wrapped("日本語 日本語 日本語", 14, 1) == "日本語 日本語\n日本語"


def test_a_short_text_is_unchanged():
    assert wrapped("Fixed: the test passes.\n", 80, 3) == "Fixed: the test passes.\n"


def test_print_on_a_terminal_wraps_the_answer_and_lines_after_it_start_their_own_row():
    out = io.StringIO()
    terminal = PlainTerminal(out, width=lambda: 16)
    call = ToolCall("c1", "bash", '{"command": "ls"}')
    for piece in ("Listing the ", "folder now, then", " done"):
        terminal.show(AnswerDelta(piece))
    terminal.show(ToolStarted(call, "ls"))
    terminal.show(ToolFinished(call, "exit 0", False, 0.1))
    terminal.show(AnswerDelta("All listed."))
    terminal.show(TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(), 1, 1.0))
    assert out.getvalue().split("\n")[:6] == [
        "Listing the",
        "folder now, then",
        "done",
        "→ bash: ls",
        "  ✓ bash: exit 0",
        "All listed.",
    ]


def test_print_into_a_pipe_leaves_the_answer_as_it_came():
    out = io.StringIO()
    terminal = PlainTerminal(out)
    terminal.show(AnswerDelta("Listing the folder now, then done  "))
    assert out.getvalue() == "Listing the folder now, then done  "
