"""kill -9 of treadle mid-command leaves nothing running: its watchdog cleans up."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_commands_die_with_treadle_even_when_it_is_killed_with_sigkill(tmp_path: Path) -> None:
    command = "setsid sleep 300 & echo $! > setsid.pid; sleep 301 & echo $! > plain.pid; wait"
    script = tmp_path / "turn.json"
    script.write_text(
        json.dumps(
            {"responses": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}]}
        )
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TREADLE_STATE_DIR": str(tmp_path / "state"),
        "TREADLE_CONFIG_DIR": str(tmp_path / "config"),
    }
    treadle = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", "--print", "go"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid_files = [tmp_path / "setsid.pid", tmp_path / "plain.pid"]
    try:
        assert wait_for(lambda: all(f.exists() and f.read_text().strip() for f in pid_files))
        pids = [int(f.read_text()) for f in pid_files]
        assert all(alive(pid) for pid in pids)
        treadle.send_signal(signal.SIGKILL)
        treadle.wait(timeout=10)
        assert wait_for(lambda: not any(alive(pid) for pid in pids)), "a command outlived treadle"
    finally:
        treadle.kill()
        for f in pid_files:
            if f.exists() and f.read_text().strip():
                with contextlib.suppress(OSError):
                    os.kill(int(f.read_text()), signal.SIGKILL)
