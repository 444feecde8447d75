"""Ctrl-O on a real terminal, read through a terminal emulator (pyte): the last command's
output, folded to a preview, shown in full as the model read it; never inside a question."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.emulated_terminal import EmulatedTerminal
from tests.processes import write_script

pytestmark = pytest.mark.slow


def test_ctrl_o_after_a_turn_shows_the_folded_output_of_its_command_in_full(
    tmp_path: Path,
) -> None:
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 101 130"}}]},
        {"text": "Counted."},
    )
    args = ["--model", f"script:{script}", "--approval", "auto"]
    terminal = EmulatedTerminal(tmp_path, args, columns=60, rows=60)
    terminal.read_until(lambda shown: any("Type a task" in row for row in shown), 20)
    terminal.child.send("count\r")
    shown = terminal.read_until(lambda shown: any("Turn finished" in row for row in shown))
    assert "  │ … 20 more lines · ctrl-o to expand" in shown
    assert "  │ 115" not in shown
    terminal.child.send("\x0f")  # Ctrl-O
    # The result comes in more than one write: read until its last line is there.
    shown = terminal.read_until(
        lambda shown: (
            any("in full" in row for row in shown)
            and any(row.rstrip() == "  │ 130" for row in shown)
        )
    )
    start = next(i for i, row in enumerate(shown) if "in full, as the model read it" in row)
    assert shown[start].startswith("▸ bash seq 101 130")
    body = shown[start + 1 : start + 40]
    assert [f"  │ {n}" for n in range(101, 131)] == [row for row in body if row[4:].isdigit()]
    terminal.child.send("\x04")
    terminal.finish()
