"""What a person (or a script) types that is wrong gets one line and exit 2, never a
traceback; bytes that are not UTF-8 are read, not fatal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import run_treadle, treadle_env, write_script


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return treadle_env(tmp_path)


@pytest.mark.parametrize("url", ["http://", "https://:99999", "http://[::1", "ftp://host"])
def test_a_bad_base_url_on_the_command_line_is_one_line_and_exit_2(tmp_path, home, url):
    result = run_treadle(
        "--model", "openai:m", "--base-url", url, "--print", "x", cwd=tmp_path, env=home
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("treadle: flag --base-url: must be an http:// or https:// address")


def test_a_bad_base_url_in_the_project_file_names_the_file(tmp_path, home):
    (tmp_path / ".treadle.toml").write_text('base_url = "http://[::1"\n')
    result = run_treadle("--model", "openai:m", "--print", "x", cwd=tmp_path, env=home)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert ".treadle.toml" in line and "base_url" in line


def run_bytes(args: list[bytes], cwd: Path, env: dict[str, str], stdin: bytes | None = None):
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"treadle", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=60,
    )


def test_a_task_with_bytes_that_are_not_utf8_runs_and_the_json_stream_still_ends(tmp_path, home):
    script = write_script(tmp_path, {"text": ["Done."]})
    model = f"script:{script}".encode()
    result = run_bytes([b"--model", model, b"--json", b"fix \xff\xfe that"], tmp_path, home)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    events = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert events[0] == {"type": "turn_started", "task": "fix \ufffd\ufffd that", "agent": ""}
    assert events[-1]["type"] == "turn_ended" and events[-1]["exit_code"] == 0


def test_a_task_on_stdin_that_is_not_utf8_is_read(tmp_path, home):
    script = write_script(tmp_path, {"text": ["Done."]})
    model = f"script:{script}".encode()
    result = run_bytes([b"--model", model, b"--print"], tmp_path, home, stdin=b"go \xc3\x28 on\n")
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stdout.decode().splitlines()[0] == "Task: go \ufffd( on"
