"""The demo's tour in a terminal 40 columns wide, read through a terminal emulator
(pyte): every line treadle writes of its own (a retry, a sub-agent's start and end,
the totals) is broken between words, as the answer is, and never left to the terminal
to break in the middle of a word at its last column."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.emulated_terminal import EmulatedTerminal

pytestmark = pytest.mark.slow

RETRY = "↻ retrying in 1 s — connection reset by peer, attempt 2 of 3"


def test_the_logs_own_lines_break_between_words_in_a_narrow_terminal(tmp_path: Path) -> None:
    args = ["--model", "demo", "--approval", "auto", "explain what you can do"]
    rows = EmulatedTerminal(tmp_path, args, columns=40, rows=80).finish()
    text = "\n".join(rows)
    assert "Turn finished" in text
    # No row reaches the last column: the terminal never had to break one itself.
    assert [row for row in rows if len(row) >= 40] == []
    # The retry's line reads back word for word, its later rows hanging under its text.
    start = next(i for i, row in enumerate(rows) if row.startswith("↻ retrying in 1 s"))
    end = next(i for i in range(start + 1, len(rows)) if not rows[i].startswith("  "))
    assert end > start + 1 and all(row[2] != " " for row in rows[start + 1 : end])
    assert " ".join(row.strip() for row in rows[start:end]) == RETRY
    started = next(i for i, row in enumerate(rows) if row.startswith("[agent-1] started:"))
    assert rows[started + 1].startswith(" " * len("[agent-1] "))
