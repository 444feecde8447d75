"""A transcript kept in memory: every event recorded, in order, in ``events``."""

from __future__ import annotations

from treadle.domain.values.events import TurnEvent


class MemoryTranscript:
    """The TranscriptStore port in a list. Example::

    transcript = MemoryTranscript()
    ports = TurnPorts(model, clock, runner, terminal, transcript)
    ...
    assert any(isinstance(e, ToolFinished) for e in transcript.events)
    """

    def __init__(self) -> None:
        self.events: list[TurnEvent] = []

    def record(self, event: TurnEvent) -> None:
        self.events.append(event)
