"""Leaving at once from the terminal, in a real pseudo-terminal: a second Ctrl-C kills
the running commands before treadle exits, whoever built the terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from tests.processes import gone_within, is_running, treadle_env, wait_for_pid

pytestmark = pytest.mark.slow

# A terminal built as a caller that gives it nothing builds it, with a turn bound whose
# stop does nothing, running a command that ignores SIGTERM: only leaving at once can
# end that command, and only by killing it. The watchdog, which kills what a dead
# treadle left (a kill -9), is kept out: leaving at once must not need it.
PROGRAM = """
import asyncio
from treadle.adapters.blessed_terminal import BlessedTerminal
from treadle.adapters.process import SubprocessRunner, runner
from treadle.domain.values.process import ProcessSpec

runner.ensure_watchdog = lambda: None

async def main():
    terminal = BlessedTerminal()
    terminal.bind_interrupt(lambda: None)
    command = "trap '' TERM; sleep 30 & echo $! > sleep.pid; wait"
    await SubprocessRunner().run(ProcessSpec(command, ".", 60.0))

asyncio.run(main())
"""


def test_a_second_ctrl_c_kills_the_running_command_before_leaving(tmp_path: Path) -> None:
    child = pexpect.spawn(
        sys.executable,
        ["-c", PROGRAM],
        cwd=str(tmp_path),
        env=treadle_env(tmp_path, TERM="xterm-256color"),
        encoding="utf-8",
        timeout=30,
        dimensions=(24, 100),
    )
    child.delaybeforesend = None
    pid = wait_for_pid(tmp_path / "sleep.pid")
    try:
        assert is_running(pid)
        child.send("\x03")
        child.expect("stopping…")  # the first Ctrl-C was taken: it asked the turn to stop
        child.send("\x03")
        child.expect(pexpect.EOF, timeout=5)
        child.close()
        assert child.exitstatus == 130
        assert gone_within(pid), f"sleep {pid} outlived treadle's leaving"
    finally:
        if is_running(pid):
            pexpect.run(f"kill -9 {pid}")
