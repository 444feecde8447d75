"""Leaving at once: the one way treadle exits without winding down (a second Ctrl-C).

It stands alone: every terminal and the signal handlers leave through it, and it
imports nothing of the process adapter, which loads with the first command: before
one ran there is nothing to kill (and importing while leaving, from the keyboard's
thread, could wait on a lock the stuck event loop holds).

Whatever asks for it (the terminal's key router, a second SIGINT, the keyboard's
thread when the event loop is stuck), leaving at once does the same, from any thread
and whatever the event loop is doing: it kills every command still running and all
they started (``kill_every_command_now`` of :mod:`treadle.adapters.process.tree`),
records the running turn as paused, writes the outcome a headless screen held back
for the end, and exits with the paused turn's code, 130. The terminal puts its mode
and cursor back before it calls it. Nothing that fails along the way stops the exit.

Example::

    leave = LeaveNow()
    leave.record = agent.abandon_turn     # once the agent exists
    terminal = BlessedTerminal(leave_now=leave)
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable

from treadle.domain.values.outcome import EXIT_CODES, OutcomeKind

LEAVE_CODE = EXIT_CODES[OutcomeKind.PAUSED]


class LeaveNow:
    """Kill every running command, record the running turn, exit 130.

    ``record`` records the running turn as paused (the agent's ``abandon_turn``), given
    once the agent exists. The exit skips every cleanup: the commands are dead by then,
    and nothing else may hold it up.
    """

    def __init__(self) -> None:
        self.record: Callable[[], None] | None = None
        self.finish_screen: Callable[[], None] | None = None
        """Writes what the headless screen holds back for the end: the outcome, last."""

    def __call__(self) -> None:
        for step in (_kill_every_command_now, self.record, self.finish_screen):
            if step is not None:
                with contextlib.suppress(Exception):  # nothing may stop the exit
                    step()
        os._exit(LEAVE_CODE)


def _kill_every_command_now() -> None:
    tree = sys.modules.get("treadle.adapters.process.tree")  # see the opening
    if tree is not None:
        tree.kill_every_command_now()
