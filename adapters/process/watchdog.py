"""A watchdog that outlives treadle: when treadle dies, even by kill -9, it kills
whatever treadle's commands left running.

Every command's environment carries this process's owner marker; descendants inherit
it. The watchdog, a small separate process (:mod:`.watchdog_script`), waits for
treadle to close its end of a pipe (which any death does), then kills every process
still carrying the marker, everything in treadle's cgroup folder, and what it saw
re-parented to treadle, with their descendants.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

from treadle.adapters.process import watchdog_script
from treadle.adapters.process.tree import active_commands

OWNER_MARKER = f"TREADLE_RUN_OWNER_{os.urandom(16).hex()}"
"""Set to 1 in every command's environment (a ``TREADLE_RUN_`` name, like run markers)."""

_started: list[subprocess.Popen[bytes]] = []
_told: set[str] = set()


def ensure_watchdog() -> None:
    """Start the watchdog once per process (Linux with /proc only; best effort)."""
    if _started or not os.path.isdir("/proc/self"):
        return
    with contextlib.suppress(OSError):
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", watchdog_script.__file__, OWNER_MARKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C at the terminal must not reach it
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        # Not a leftover of any command: cleanup must neither kill nor reap it.
        active_commands.add(watchdog.pid)
        _started.append(watchdog)


def watch_cgroup(path: str) -> None:
    """Tell the watchdog that treadle's commands run in cgroups under ``path``."""
    if path in _told or not _started or _started[0].stdin is None:
        return
    with contextlib.suppress(OSError):
        _started[0].stdin.write(f"cgroup {path}\n".encode(errors="surrogateescape"))
        _started[0].stdin.flush()
        _told.add(path)
