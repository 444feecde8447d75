"""What is typed while a turn runs, on a real terminal read through a terminal emulator
(pyte): shown as it is typed, queued with Enter and sent when the turn ends; kept on the
prompt unsent when Esc stops the turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.emulated_terminal import EmulatedTerminal
from tests.processes import write_script

pytestmark = pytest.mark.slow

WAITING = "for i in $(seq 400); do [ -e go ] && break; sleep 0.05; done; echo waited"


def session(folder: Path, columns: int = 80) -> EmulatedTerminal:
    script = write_script(
        folder,
        {"tool_calls": [{"name": "bash", "arguments": {"command": WAITING}}]},
        {"text": "The first is done."},
        {"text": "The second is done."},
    )
    args = ["--model", f"script:{script}", "--approval", "auto"]
    terminal = EmulatedTerminal(folder, args, columns=columns, rows=24)
    terminal.read_until(lambda shown: any("Type a task" in row for row in shown), 20)
    return terminal


def tasks_sent(folder: Path) -> list[str]:
    transcript = next((folder / "state" / "sessions").glob("*/transcript.jsonl"))
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    return [r["task"] for r in records if r["type"] == "turn_started" and not r.get("agent")]


def test_a_line_typed_during_a_turn_shows_queued_and_is_sent_when_the_turn_ends(
    tmp_path: Path,
) -> None:
    terminal = session(tmp_path)
    terminal.child.send("first\r")
    terminal.read_until(lambda shown: any("running bash" in row for row in shown))
    terminal.child.send("and then the secnd")
    terminal.child.send("\x7f\x7fond")  # edited while it waits
    shown = terminal.read_until(lambda shown: "› and then the second" in shown)
    assert "› and then the second" in shown
    status = next(i for i, row in enumerate(shown) if "Esc to stop" in row)
    assert shown[status + 1] == "› and then the second"  # under the status line
    terminal.child.send("\r")
    shown = terminal.read_until(lambda shown: "queued › and then the second" in shown)
    assert shown[status + 1] == "queued › and then the second"
    assert not any("The second is done." in row for row in shown)  # not before the turn ends
    (tmp_path / "go").touch()
    # Until its end: a Ctrl-D typed while the turn still runs edits the next line (on
    # an empty one it does nothing), and on a loaded machine the answer shows well
    # before the turn has ended, so the Ctrl-D was lost and the session waited.
    shown = terminal.read_until(lambda shown: sum("Turn finished" in row for row in shown) == 2, 30)
    assert any("The second is done." in row for row in shown)
    assert not any(row.startswith("queued ›") for row in shown)
    terminal.child.send("\x04")
    terminal.finish()
    assert tasks_sent(tmp_path) == ["first", "and then the second"]


def test_esc_stops_the_turn_at_once_and_keeps_the_queued_line_on_the_prompt_unsent(
    tmp_path: Path,
) -> None:
    terminal = session(tmp_path)
    terminal.child.send("first\r")
    terminal.read_until(lambda shown: any("running bash" in row for row in shown))
    terminal.child.send("do it another way\r")
    terminal.read_until(lambda shown: "queued › do it another way" in shown)
    terminal.child.send("\x1b")
    shown = terminal.read_until(
        lambda shown: any("Turn paused" in row for row in shown) and "› do it another way" in shown
    )
    assert any("Turn paused" in row for row in shown)
    paused = next(i for i, row in enumerate(shown) if "Turn paused" in row)
    assert shown[paused + 1 :].count("› do it another way") == 1  # on the prompt, once
    terminal.child.send("\x1b")  # a second Esc drops it
    terminal.read_until(lambda shown: "› do it another way" not in shown)
    terminal.child.send("/exit\r")
    shown = terminal.finish()
    assert tasks_sent(tmp_path) == ["first"]


def test_a_long_task_wraps_over_rows_at_every_width_and_after_each_resize(
    tmp_path: Path,
) -> None:
    terminal = session(tmp_path, columns=120)
    words = " ".join(f"word{n}" for n in range(30))
    terminal.child.send(words)
    for columns in (120, 60, 40, 100):
        terminal.resize(columns)
        terminal.child.send("x\x7f")  # a key, then the same undone: a redraw at this width

        def wrapped(shown: list[str], columns: int = columns) -> bool:
            starts = [i for i, row in enumerate(shown) if row.startswith("› word0 ")]
            rows = [row for row in shown[starts[0] :] if row] if len(starts) == 1 else []
            return " ".join(row[2:] for row in rows).split() == words.split() and all(
                len(row) < columns for row in rows
            )

        shown = terminal.read_until(wrapped)
        first = next(i for i, row in enumerate(shown) if row.startswith("› word0 "))
        rows = [row for row in shown[first:] if row]
        assert len(rows) > 1 and all(len(row) < columns for row in rows)
        assert " ".join(row[2:] for row in rows).split() == words.split()  # none lost or cut
        assert terminal.screen.cursor.y == first + len(rows) - 1
    terminal.child.send("\x15/exit\r")  # Ctrl-U clears the line
    terminal.finish()
