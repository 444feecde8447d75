"""The transcript port: every event of a turn, kept as it happens."""

from __future__ import annotations

from typing import Protocol

from treadle.domain.values.events import TurnEvent


class TranscriptStore(Protocol):
    """Appends events durably: an event recorded is on disk before ``record`` returns."""

    def record(self, event: TurnEvent) -> None: ...
