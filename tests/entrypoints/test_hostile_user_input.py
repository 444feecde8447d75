"""What a person (or a script) types that is wrong gets one line and exit 2, never a
traceback; bytes that are not UTF-8 are read, not fatal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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


def run_bytes(
    args: list[bytes], cwd: Path | bytes, env: dict[str, str], stdin: bytes | None = None
):
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


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler of its own for ``signum`` (from /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(
        next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16
    )
    return bool(caught >> (signum - 1) & 1)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.03, 0.1, 0.2])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_treadle_starts_leaves_130_with_its_last_line_and_no_traceback(
    tmp_path, home, delay, signum
):
    process = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", "demo", "--json", "look around"],
        cwd=tmp_path,
        env=home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # From the moment treadle holds the signal (before that, only Python's own start
    # is running), then a little later: importing, configuring, starting the session.
    while not catches(process.pid, signal.SIGTERM):
        time.sleep(0.001)
    time.sleep(delay)  # where the signal lands, not a wait for a result
    process.send_signal(signum)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    last = json.loads(out.splitlines()[-1])
    assert (last["type"], last["exit_code"], last["line"]) == ("turn_ended", 130, "Turn paused")


def test_a_folder_whose_name_is_not_utf8_is_worked_in(tmp_path, home):
    folder = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(folder)
    script = write_script(tmp_path, {"text": ["Done."]})
    result = run_bytes([b"--model", f"script:{script}".encode(), b"--print", b"hi"], folder, home)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    listed = run_bytes([b"sessions"], folder, home)
    assert listed.returncode == 0 and b"Traceback" not in listed.stderr


@pytest.mark.parametrize("flag", [b"--model", b"--base-url"])
def test_a_flag_that_is_not_utf8_is_one_line_and_exit_2(tmp_path, home, flag):
    result = run_bytes([flag, b"openai:m\xff", b"--print", b"hi"], tmp_path, home)
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr
    (line,) = result.stderr.decode().splitlines()
    assert "not UTF-8" in line or "http" in line


@pytest.mark.parametrize(
    "script",
    ["[]", "5", '{"responses": [5]}', '{"responses": [{"usage": 5}]}', '{"responses": {"*": 5}}'],
)
def test_a_script_of_the_wrong_shape_is_one_line_not_a_traceback(tmp_path, home, script):
    path = tmp_path / "turn.json"
    path.write_text(script)
    result = run_treadle("--model", f"script:{path}", "--print", "x", cwd=tmp_path, env=home)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode in (2, 3)
    assert result.stdout.strip().splitlines()[-1].startswith("Turn blocked: cannot load the script")


def test_a_bad_value_of_a_setting_named_like_a_secret_is_shown_in_its_error(tmp_path, home):
    env = {**home, "TREADLE_MAX_TOKENS": "123456789abc"}
    result = run_treadle("--model", "demo", "--print", "x", cwd=tmp_path, env=env)
    assert result.returncode == 2
    assert "123456789abc" in result.stderr and "[redacted]" not in result.stderr
