"""Secrets never reach the state folder or the screen, whatever prints them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-planted-3f9a1c77e2b04d5c8a6e"
PASSWORD = "correct-horse-battery"


def test_a_secret_printed_by_a_tool_never_reaches_any_file_or_the_screen(tmp_path: Path) -> None:
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    (work / "notes.txt").write_text(f"db password: {PASSWORD}\n")
    command = 'echo "key=$MY_API_KEY"; cat notes.txt; printf %s "$MY_API_KEY" | rev | rev'
    half = len(SECRET) // 2
    script = {
        "responses": [
            {
                "text": "Looking.",
                "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": command}}],
            },
            # The model repeats the key, split across stream chunks.
            {"text": ["The key is ", SECRET[:half], SECRET[half:], f" and {PASSWORD}."]},
        ]
    }
    (work / "script.json").write_text(json.dumps(script))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "TREADLE_STATE_DIR": str(state),
        "TREADLE_CONFIG_DIR": str(tmp_path / "config"),
        "MY_API_KEY": SECRET,
        "DB_PASSWORD": PASSWORD,
        "TREADLE_ENV_PASSTHROUGH": "MY_API_KEY",  # so the command really sees it
    }
    for mode in ("--print", "--json"):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "treadle",
                "--model",
                "script:script.json",
                mode,
                f"check the key {SECRET}",
            ],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        for shown in (result.stdout, result.stderr):
            assert SECRET not in shown and PASSWORD not in shown
        assert "[redacted]" in result.stdout

    written = [p for p in state.rglob("*") if p.is_file()]
    assert any(p.name == "transcript.jsonl" for p in written)
    for path in written:
        data = path.read_bytes()
        for secret in (SECRET, PASSWORD):
            assert secret.encode() not in data, path
            assert secret[:half].encode() not in data, path  # not even half of it
    transcripts = "".join(p.read_text() for p in written if p.name == "transcript.jsonl")
    assert "key=[redacted]" in transcripts  # the command did print it, and it was caught
