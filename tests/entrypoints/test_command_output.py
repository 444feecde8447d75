"""What a command printed, headless: ``--print`` shows its preview indented under the
call; ``--json`` sends a few bounded ``tool_output`` events while it runs, and the
preview in its ``tool_finished`` event; the transcript keeps what the model was sent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.processes import treadle_env, write_script

# Three ticks while it runs, a colour code to neutralise, many lines, then a failure.
TICKS = "for i in 1 2 3; do echo tick $i; sleep 0.4; done; printf '\\033[31mred\\033[0m\\n'"
MANY = "seq 1 100000; sleep 0.3; echo done"
FAILING = "echo 'bash: nope: command not found' >&2; exit 3"


def run(folder: Path, *flags: str) -> str:
    calls = [
        {"name": "bash", "arguments": {"command": command}} for command in (TICKS, MANY, FAILING)
    ]
    script = write_script(folder, {"tool_calls": calls}, {"text": "Done."})
    process = subprocess.run(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", *flags, "run them"],
        cwd=folder,
        env=treadle_env(folder),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr
    return process.stdout


def test_print_shows_each_commands_preview_indented_under_its_call(tmp_path: Path) -> None:
    out = run(tmp_path, "--print")
    assert "\x1b" not in out
    lines = out.splitlines()
    ticks = lines.index(next(line for line in lines if line.startswith("  ✓ bash: exit 0")))
    assert lines[ticks + 1 : ticks + 5] == ["    tick 1", "    tick 2", "    tick 3", "    red"]
    many = lines.index(next(line for line in lines[ticks + 5 :] if "✓ bash: exit 0" in line))
    assert lines[many + 1 : many + 12] == [
        *(f"    {n}" for n in range(1, 6)),
        "    … 99,991 more lines",
        *(f"    {n}" for n in range(99997, 100001)),
        "    done",
    ]
    failed = next(i for i, line in enumerate(lines) if line.startswith("  ✗ bash: exit 3"))
    assert lines[failed + 1] == "    bash: nope: command not found"


def test_json_sends_bounded_output_while_a_command_runs_and_the_preview_at_its_end(
    tmp_path: Path,
) -> None:
    records = [json.loads(line) for line in run(tmp_path, "--json").splitlines()]
    started = {r["call"]["id"]: r["summary"] for r in records if r["type"] == "tool_started"}
    by_command: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record["type"] == "tool_output":
            by_command.setdefault(started[record["call_id"]], []).append(record)
    ticks = [record["lines"] for record in by_command[TICKS]]
    assert ticks[0] == ["tick 1"] and ["tick 1", "tick 2"] in ticks  # live, as it ran
    # A hundred thousand lines make a few events of a few lines, never one per read.
    many = by_command[MANY]
    assert 1 <= len(many) <= 20
    assert all(len(r["lines"]) <= 5 and all(len(line) <= 400 for line in r["lines"]) for r in many)
    finished = {r["call"]["id"]: r for r in records if r["type"] == "tool_finished"}
    previews = {started[key]: record.get("preview") for key, record in finished.items()}
    assert previews[TICKS] == "tick 1\ntick 2\ntick 3\nred"
    assert previews[MANY].split("\n")[5] == "… 99,991 more lines"
    assert previews[FAILING] == "bash: nope: command not found"


def test_the_transcript_keeps_the_results_and_previews_not_the_live_lines(tmp_path: Path) -> None:
    run(tmp_path, "--json")
    (transcript,) = (tmp_path / "state").rglob("transcript.jsonl")
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    kinds = {record["type"] for record in records}
    assert "tool_output" not in kinds
    results = [
        r["message"]["text"]
        for r in records
        if r["type"] == "message_added" and r["message"]["role"] == "tool"
    ]
    assert "tick 1\ntick 2\ntick 3\n\x1b[31mred\x1b[0m\n" in results[0]  # what the model read
    assert any("preview" in r for r in records if r["type"] == "tool_finished")
