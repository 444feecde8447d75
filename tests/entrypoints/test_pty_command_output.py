"""A command's output on a real terminal, read through a terminal emulator (pyte) as a
person sees it: its last lines live under its row while it runs, then a preview of it
kept in the transcript on the screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.emulated_terminal import EmulatedTerminal
from tests.processes import write_script

pytestmark = pytest.mark.slow

# Seven ticks, then it waits for the test to let it finish, then thirty lines more.
COMMAND = (
    "for i in 1 2 3 4 5 6 7; do echo tick $i; done; printf '\\033[2J\\033]0;x\\007half'; "
    "for i in $(seq 200); do [ -e go ] && break; sleep 0.05; done; echo; seq 1 30"
)


def test_a_commands_output_shows_live_and_stays_as_a_preview(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": COMMAND}}]},
        {"text": "It counted."},
    )
    columns = 60
    args = ["--model", f"script:{script}", "--approval", "auto", "count"]
    terminal = EmulatedTerminal(tmp_path, args, columns=columns, rows=30)
    shown = terminal.read_until(lambda shown: "  │ half" in shown)
    # Live: the running command's row, then its last five lines, newest at the bottom
    # (the unfinished one too), its escape sequences gone; then the status line.
    running = next(i for i, row in enumerate(shown) if "bash for i in" in row)
    assert len(shown[running]) < columns and shown[running].endswith(" s")
    assert shown[running + 1 : running + 6] == [
        "  │ tick 4",
        "  │ tick 5",
        "  │ tick 6",
        "  │ tick 7",
        "  │ half",
    ]
    assert shown[running + 6].startswith("running bash")
    assert not any("tick 3" in row for row in shown)
    assert terminal.screen.title != "x"  # the OSC never reached the terminal
    (tmp_path / "go").touch()
    shown = terminal.finish()
    assert any("Turn finished" in row for row in shown)
    # Kept: the finished line with its exit code, and the head and tail of the output.
    finished = next(i for i, row in enumerate(shown) if row.startswith("✓ bash for i in"))
    assert "exit 0" in shown[finished]
    assert shown[finished + 1 : finished + 12] == [
        "  │ tick 1",
        "  │ tick 2",
        "  │ tick 3",
        "  │ tick 4",
        "  │ tick 5",
        "  │ … 28 more lines · ctrl-o to expand",
        *(f"  │ {n}" for n in range(26, 31)),
    ]
    assert not any(row.startswith("  │ ") for row in shown[finished + 12 :])


def test_a_sub_agents_command_stays_as_a_preview_under_its_name(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    command = "seq 1 20"
    script.write_text(
        json.dumps(
            {
                "responses": [
                    {"tool_calls": [{"name": "agent", "arguments": {"task": "count to 20"}}]},
                    {"text": "It counted."},
                ],
                "agents": {
                    "count to 20": [
                        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                        {"text": "Counted to 20."},
                    ]
                },
            }
        )
    )
    args = ["--model", f"script:{script}", "--approval", "auto", "count"]
    shown = EmulatedTerminal(tmp_path, args, columns=60, rows=40).finish()
    assert any("Turn finished" in row for row in shown)
    finished = next(i for i, row in enumerate(shown) if row.startswith("✓ [agent-1] bash seq"))
    assert "exit 0" in shown[finished]
    assert shown[finished + 1 : finished + 12] == [
        *(f"  │ {n}" for n in range(1, 6)),
        "  │ … 10 more lines · ctrl-o to expand",
        *(f"  │ {n}" for n in range(16, 21)),
    ]
