"""treadle in a real pseudo-terminal, read through a terminal emulator (pyte) as a
person sees it: the rows on the screen, not the bytes sent."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte

from tests.processes import treadle_env


class EmulatedTerminal:
    """``treadle ARGS`` in a pty ``columns`` wide and ``rows`` high, in ``folder``."""

    def __init__(self, folder: Path, args: list[str], *, columns: int, rows: int) -> None:
        env = treadle_env(folder, TERM="xterm-256color")
        for inherited in ("NO_COLOR", "COLUMNS", "LINES"):
            env.pop(inherited, None)
        self.rows = rows
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "treadle", *args],
            cwd=str(folder),
            env=env,
            encoding="utf-8",
            timeout=30,
            dimensions=(rows, columns),
        )
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.Stream(self.screen)

    @property
    def shown(self) -> list[str]:
        return [row.rstrip() for row in self.screen.display]

    def read_until(self, done: Callable[[list[str]], bool], seconds: float = 10) -> list[str]:
        """Feed what the terminal is sent into the emulator until its rows satisfy
        ``done`` (or ``seconds`` pass); the rows then shown."""
        end = time.monotonic() + seconds
        while True:
            shown = self.shown
            if done(shown) or time.monotonic() > end:
                return shown
            with contextlib.suppress(pexpect.TIMEOUT):
                self.stream.feed(self.child.read_nonblocking(65536, timeout=0.05))

    def resize(self, columns: int) -> None:
        self.screen.resize(self.rows, columns)
        self.child.setwinsize(self.rows, columns)

    def finish(self) -> list[str]:
        """Read to the end; the rows last shown. The process must have exited with 0."""
        while True:
            try:
                self.stream.feed(self.child.read_nonblocking(65536, timeout=30))
            except pexpect.EOF:
                break
        self.child.close()
        assert self.child.exitstatus == 0
        return self.shown
