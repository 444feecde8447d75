"""Stop signals that come while treadle starts, held until the turn can take them.

Until a turn's own handlers are installed (treadle is still importing, reading its
configuration, starting MCP servers), SIGINT, SIGTERM, SIGHUP and SIGQUIT are only
noted; the turn then starts already stopped and ends paused, with its line, as if
the signal had come a moment later. Nothing is raised at an arbitrary point.

Example::

    hold()            # at the very start
    ...               # imports, configuration
    held()            # SIGINT, if one came meanwhile
"""

from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

_held: list[int] = []
_taken = [False]


def hold() -> None:
    """From now on, note stop signals instead of acting on them."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _note)


def held() -> int | None:
    """The first stop signal that came while held, if one did."""
    return _held[0] if _held else None


def taken() -> None:
    """The turn's own handlers are in place: what happens from now on is theirs."""
    _taken[0] = True


def were_taken() -> bool:
    return _taken[0]


def ignore() -> None:
    """Treadle is leaving: a late signal changes nothing any more."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def _note(signum: int, frame: object) -> None:
    _held.append(signum)
