"""The TurnStart port: what happens on the host as a turn starts, before its first request."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from treadle.domain.values.events import Notice


class TurnStart(Protocol):
    """Called as each main turn starts, after it is announced.

    The real one records a checkpoint of the workspace (so that ``treadle undo`` can
    take the turn back) and warns once when commands cannot be confined. What the
    person should know comes back as notices; nothing here can end the turn.
    """

    async def before_turn(self, task: str) -> Sequence[Notice]: ...
