"""The log's own lines, broken between words to the width (notices, totals, greetings)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from treadle.adapters.blessed_terminal.screen import cell_width
from treadle.adapters.terminal.log_wrap import wrap_rows

DIM, GREEN, RESET = "\x1b[2m", "\x1b[32m", "\x1b[m"
ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def visible(row: str) -> str:
    return ESCAPE.sub("", row)


def test_a_line_that_fits_is_unchanged() -> None:
    assert wrap_rows(["Turn finished", DIM + "6 requests" + RESET], 40) == [
        "Turn finished",
        DIM + "6 requests" + RESET,
    ]


def test_a_long_line_breaks_between_words_and_hangs_under_its_text() -> None:
    line = "↻ retrying in 1 s — connection reset by peer, attempt 2 of 3"
    assert wrap_rows([line], 25) == [
        "↻ retrying in 1 s —",
        "  connection reset by",
        "  peer, attempt 2 of 3",
    ]


def test_a_sub_agents_line_hangs_under_its_name() -> None:
    line = "[agent-1] started: Find the five largest files here (deadline 3 s)"
    rows = wrap_rows([line], 40)
    assert rows[0] == "[agent-1] started: Find the five"
    assert all(row.startswith(" " * 10) and row[10] != " " for row in rows[1:])
    assert " ".join(row.strip() for row in rows) == line


def test_a_diff_line_keeps_its_gutter_free_on_the_rows_after_it() -> None:
    line = "  " + GREEN + "+    return compute(the_first_argument, the_second_one)" + RESET
    rows = [visible(row) for row in wrap_rows([line], 40)]
    assert rows[0].startswith("  +    return")
    assert all(row.startswith("   ") and row[3] != " " for row in rows[1:])


def test_a_style_running_at_a_break_ends_on_its_row_and_starts_again_on_the_next() -> None:
    rows = wrap_rows([DIM + "one two three four five six seven eight nine ten" + RESET], 20)
    assert len(rows) > 1
    for row in rows:
        assert row.lstrip(" ").startswith(DIM) and row.endswith(RESET)


def test_a_word_wider_than_a_row_is_cut_at_the_rows_end() -> None:
    assert wrap_rows(["x" * 50], 21) == ["x" * 20, "x" * 20, "x" * 10]


@given(st.lists(st.text(st.sampled_from("ab 世·"), max_size=80), max_size=4), st.integers(11, 300))
def test_no_row_is_wider_than_the_window_and_no_character_is_lost(
    lines: list[str], width: int
) -> None:
    rows = wrap_rows([DIM + line + RESET for line in lines], width)
    assert all(cell_width(visible(row)) <= width - 1 for row in rows)
    kept = "".join(visible(row) for row in rows).replace(" ", "")
    assert kept == "".join(lines).replace(" ", "")
