"""Ctrl-C and signals: what stops a turn, and the one way to leave at once.

The rule is :mod:`treadle.domain.rules.interrupts`; this module carries it out for
signals (a headless run, or ``kill -INT`` at an interactive session) and gives the
terminal the same :class:`LeaveNow` for its Ctrl-C key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.values.outcome import EXIT_CODES, OutcomeKind
from treadle.entrypoints import early_signals

if TYPE_CHECKING:
    from treadle.domain.loop.turn import Agent

LEAVE_CODE = EXIT_CODES[OutcomeKind.PAUSED]
# Signals that ask a headless treadle to stop: the turn is paused and says so.
STOP_SIGNALS = early_signals.STOP_SIGNALS


class LeaveNow:
    """Leave at once, from any thread and whatever the loop is doing: kill every running
    command, record the running turn as paused, then exit 130.

    ``agent`` is the agent whose turn is recorded; it is given once it exists.
    """

    def __init__(self) -> None:
        self.agent: Agent | None = None

    def __call__(self) -> None:
        from treadle.adapters.process import kill_every_command_now

        with contextlib.suppress(Exception):  # nothing may stop the exit
            kill_every_command_now()
        with contextlib.suppress(Exception):
            if self.agent is not None:
                self.agent.abandon_turn()
        os._exit(LEAVE_CODE)


class SignalPolicy:
    """What the stop signals do. ``stop_turn(signum)`` stops the running turn, if there
    is one, and says whether there was; a SIGINT that follows another within the window
    leaves at once (``leave_now``); a signal with no turn running calls ``at_rest`` (an
    interactive session ends)."""

    def __init__(
        self,
        stop_turn: Callable[[int], bool],
        leave_now: Callable[[], None],
        at_rest: Callable[[int], None] = lambda signum: None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stop_turn = stop_turn
        self.leave_now = leave_now
        self.at_rest = at_rest
        self.now = now
        self.ctrl_c = CtrlC()

    def signalled(self, signum: int) -> None:
        if signum == signal.SIGINT and self.ctrl_c.press(self.now()):
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
