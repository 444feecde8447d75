"""What a second Ctrl-C means, decided once for every place that reads one.

The first Ctrl-C (like Esc, SIGINT or SIGTERM) stops the running turn, which ends
paused. A second Ctrl-C less than :data:`SECOND_INTERRUPT_WINDOW` seconds after the
first leaves at once, wherever it lands: during the turn, while it stops, or at the
prompt after it. Leaving at once kills the running commands first, then records the
turn as paused, then exits with the paused turn's code, 130. What a key or a signal
does with the rule is :func:`treadle.domain.rules.keys.route`'s.

Example::

    >>> is_second_interrupt(10.0, 11.5), is_second_interrupt(10.0, 12.0)
    (True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SECOND_INTERRUPT_WINDOW: Final = 2.0


def is_second_interrupt(previous: float | None, now: float) -> bool:
    """A Ctrl-C at ``now`` leaves at once when another came less than the window before."""
    return previous is not None and 0.0 <= now - previous < SECOND_INTERRUPT_WINDOW


@dataclass(slots=True)
class CtrlC:
    """The one memory of when the last Ctrl-C came, kept for :func:`~.keys.route`: the
    terminal's keys and the SIGINTs of one process share it, and only the router's
    answer changes it."""

    last: float | None = None
