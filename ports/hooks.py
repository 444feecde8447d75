"""The Hooks port: the commands a team set to run at a turn's moments (issue 23)."""

from __future__ import annotations

from typing import Protocol

from treadle.domain.values.hooks import HookEvent, HookInput, HookVerdict


class Hooks(Protocol):
    """Runs the hooks of what happened, and says what they decided.

    ``wants`` is quick and does no I/O: whether any hook would run for ``event``
    (and, for a tool's events, that tool), so that nothing is built for none.
    ``fire`` runs every matching command, side by side, each to its deadline; a hook
    that fails or hangs is a problem in the verdict, never an exception. Cancelling
    it (Esc) stops every command it started, and everything they started.
    """

    def wants(self, event: HookEvent, subject: str = "") -> bool: ...

    async def fire(self, happened: HookInput) -> HookVerdict: ...
