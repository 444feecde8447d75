"""kill -9 of treadle mid-command leaves nothing running: its watchdog cleans up."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import ROOT, gone_within, is_running, treadle_env, wait_for_pid
from treadle.adapters.process.watchdog_script import LOOK_EVERY

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc"),
]

# What a command may leave behind: a plain child, one in its own session, and two that
# also clear their environment (no marker), one of them already re-parented to treadle.
LEFTOVERS = (
    "setsid sleep 300 & echo $! > setsid.pid; sleep 301 & echo $! > plain.pid; "
    "setsid env -i sleep 302 & echo $! > hidden.pid; "
    "(setsid env -i sleep 303 & echo $! > orphan.pid); wait"
)
NAMES = ("setsid.pid", "plain.pid", "hidden.pid", "orphan.pid")

# A program that runs one command through the runner, without cgroups: only the
# watchdog's own records can find the orphan once its runner is gone.
RUN_WITHOUT_CGROUPS = """
import asyncio, sys
from treadle.adapters.process import SubprocessRunner
from treadle.domain.values.process import ProcessSpec
spec = ProcessSpec(sys.argv[1], cwd=".", timeout=300)
asyncio.run(SubprocessRunner(cgroups=False).run(spec))
"""


def _killed_leaves_nothing(process: subprocess.Popen[bytes], folder: Path) -> None:
    pids: list[int] = []
    try:
        pids = [wait_for_pid(folder / name) for name in NAMES]
        assert all(is_running(pid) for pid in pids)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        alive = [name for name, pid in zip(NAMES, pids, strict=True) if not gone_within(pid, 10)]
        assert alive == [], "a command outlived treadle"
    finally:
        process.kill()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_commands_die_with_treadle_even_when_it_is_killed_with_sigkill(tmp_path: Path) -> None:
    script = tmp_path / "turn.json"
    script.write_text(
        json.dumps(
            {"responses": [{"tool_calls": [{"name": "bash", "arguments": {"command": LEFTOVERS}}]}]}
        )
    )
    treadle = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", "--print", "go"],
        cwd=tmp_path,
        env=treadle_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _killed_leaves_nothing(treadle, tmp_path)


def test_without_cgroups_the_watchdog_still_finds_what_was_reparented(tmp_path: Path) -> None:
    runner = subprocess.Popen(
        [sys.executable, "-c", RUN_WITHOUT_CGROUPS, LEFTOVERS],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_pid(tmp_path / "orphan.pid")
    time.sleep(3 * LOOK_EVERY)  # the watchdog's records are a sample: give it a few
    _killed_leaves_nothing(runner, tmp_path)


def test_a_hook_dies_with_treadle_when_it_is_killed_with_sigkill(tmp_path: Path) -> None:
    """A hook runs under the rules for commands (issue 23): treadle killed mid-hook
    leaves none of what the hook started."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.toml").write_text(
        "[[hooks.PreToolUse]]\n"
        f'hooks = [{{ type = "command", command = {json.dumps(LEFTOVERS)}, timeout = 600 }}]\n'
    )
    script = tmp_path / "turn.json"
    script.write_text(
        json.dumps(
            {"responses": [{"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}]}]}
        )
    )
    treadle = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", "--print", "go"],
        cwd=tmp_path,
        env=treadle_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _killed_leaves_nothing(treadle, tmp_path)
