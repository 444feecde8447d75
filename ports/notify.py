"""The Notifier port: telling the person they are wanted (issue 23)."""

from __future__ import annotations

from typing import Protocol

from treadle.domain.values.hooks import AttentionKind


class Notifier(Protocol):
    """Rings the terminal, or runs the person's ``notify`` command, when a turn ends
    or waits for them. It returns at once: what it starts runs on its own, bounded."""

    def notify(self, kind: AttentionKind, message: str, last_answer: str = "") -> None: ...

    async def settle(self, timeout: float) -> None:
        """Wait, ``timeout`` seconds at most, for what ``notify`` started (the session
        ends: a command still running after that is stopped with everything else)."""
        ...
