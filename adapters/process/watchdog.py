"""A watchdog that outlives treadle: when treadle dies, even by kill -9, it kills
whatever treadle's commands left running.

Every command's environment carries this process's owner marker; descendants inherit
it. The watchdog, a small separate process, waits for treadle to close its end of a
pipe (which any death does), then kills every process still carrying the marker.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

from treadle.adapters.process.tree import active_commands

OWNER_MARKER = f"TREADLE_RUN_OWNER_{os.urandom(16).hex()}"
"""Set to 1 in every command's environment (a ``TREADLE_RUN_`` name, like run markers)."""

_WATCHDOG = r"""
import os, signal, sys
tag = b"\0" + sys.argv[1].encode() + b"="
try:
    sys.stdin.buffer.read()
except BaseException:
    pass
me = os.getpid()
for _ in range(5):
    found = False
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as source:
                environ = b"\0" + source.read()
        except OSError:
            continue
        if tag in environ:
            try:
                os.kill(int(name), signal.SIGKILL)
                found = True
            except OSError:
                pass
    if not found:
        break
"""

_started: list[subprocess.Popen[bytes]] = []


def ensure_watchdog() -> None:
    """Start the watchdog once per process (Linux with /proc only; best effort)."""
    if _started or not os.path.isdir("/proc/self"):
        return
    with contextlib.suppress(OSError):
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, OWNER_MARKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C at the terminal must not reach it
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        # Not a leftover of any command: cleanup must neither kill nor reap it.
        active_commands.add(watchdog.pid)
        _started.append(watchdog)
