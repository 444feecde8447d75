"""kill -9 of treadle mid-command leaves nothing running: its watchdog cleans up."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import gone_within, is_running, treadle_env, wait_for_pid


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
    treadle = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", "--print", "go"],
        cwd=tmp_path,
        env=treadle_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pids: list[int] = []
    try:
        pids = [wait_for_pid(tmp_path / name) for name in ("setsid.pid", "plain.pid")]
        assert all(is_running(pid) for pid in pids)
        treadle.send_signal(signal.SIGKILL)
        treadle.wait(timeout=10)
        assert all(gone_within(pid, 10) for pid in pids), "a command outlived treadle"
    finally:
        treadle.kill()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
