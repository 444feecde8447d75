"""What a second Ctrl-C means, decided once for every place that reads one.

The first Ctrl-C (like Esc, SIGINT or SIGTERM) stops the running turn, which ends
paused. A second Ctrl-C less than :data:`SECOND_INTERRUPT_WINDOW` seconds after the
first leaves at once, wherever it lands: during the turn, while it stops, or at the
prompt after it. Leaving at once kills the running commands first, then records the
turn as paused, then exits with the paused turn's code, 130.

Example::

    >>> ctrl_c = CtrlC()
    >>> ctrl_c.press(10.0), ctrl_c.press(11.5), ctrl_c.press(20.0)
    (False, True, False)
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
    """When the last Ctrl-C came, so that the next one can be judged."""

    last: float | None = None

    def press(self, now: float) -> bool:
        """Take a Ctrl-C at ``now``; True when it is a second one, which leaves at once."""
        second = is_second_interrupt(self.last, now)
        self.last = now
        return second

    def forget(self) -> None:
        """A Ctrl-C that did its own job (clearing a typed line) counts for nothing."""
        self.last = None
