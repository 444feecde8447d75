"""Signals: what stops a turn, and when a second SIGINT leaves at once.

A SIGINT is judged as a Ctrl-C key during a turn, by the same router
(:func:`treadle.domain.rules.keys.route`) and with the same memory of the last
Ctrl-C as the terminal's keys; leaving at once is the one :class:`LeaveNow`
(:mod:`treadle.adapters.leave_now`), which the terminal is given too.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable

from treadle.adapters.leave_now import LEAVE_CODE, LeaveNow
from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.rules.keys import CTRL_C, Mode, route
from treadle.domain.rules.keys import LeaveNow as Leave
from treadle.entrypoints import early_signals

__all__ = ["LEAVE_CODE", "STOP_SIGNALS", "LeaveNow", "SignalPolicy"]
# Signals that ask a headless treadle to stop: the turn is paused and says so.
STOP_SIGNALS = early_signals.STOP_SIGNALS


class SignalPolicy:
    """What the stop signals do. ``stop_turn(signum)`` stops the running turn, if there
    is one, and says whether there was; a SIGINT that follows another within the window
    leaves at once (``leave_now``); a signal with no turn running calls ``at_rest`` (an
    interactive session ends). ``ctrl_c`` is the memory of the last Ctrl-C, shared with
    the terminal's keys when there is one."""

    def __init__(
        self,
        stop_turn: Callable[[int], bool],
        leave_now: Callable[[], None],
        at_rest: Callable[[int], None] = lambda signum: None,
        now: Callable[[], float] = time.monotonic,
        ctrl_c: CtrlC | None = None,
    ) -> None:
        self.stop_turn = stop_turn
        self.leave_now = leave_now
        self.at_rest = at_rest
        self.now = now
        self.ctrl_c = ctrl_c if ctrl_c is not None else CtrlC()

    def signalled(self, signum: int) -> None:
        if signum == signal.SIGINT:
            self.ctrl_c.last, action = route(Mode.TURN, CTRL_C, self.ctrl_c.last, self.now())
            if isinstance(action, Leave):
                self.leave_now()
                return
        if not self.stop_turn(signum):
            self.at_rest(signum)

    def install(self) -> None:
        """Take the stop signals on the loop, and act on one that came while treadle was
        starting (see :mod:`treadle.entrypoints.early_signals`)."""
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self.signalled, signum)
        early_signals.taken()
        came = early_signals.held()
        if came is not None:
            self.signalled(came)
