"""Shared wiring for tests: an agent on the shipped fakes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    MemoryTranscript,
    RecordingTerminal,
    ScriptedModel,
    ScriptedResponse,
)
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.events import TurnEvent

# Ray for the batch tests (issue 13): started once, on 127.0.0.1, and gone afterwards.
pytest_plugins = ["tests.ray_cluster"]


@dataclass
class Rig:
    """An agent on fakes, with every fake at hand for assertions."""

    clock: FakeClock
    model: ScriptedModel
    runner: FakeRunner
    terminal: RecordingTerminal
    agent: Agent
    transcript: list[TurnEvent] = field(default_factory=list)


@pytest.fixture
def rig() -> Callable[..., Rig]:
    def build(
        script: Sequence[ScriptedResponse] | Mapping[str, Sequence[ScriptedResponse]],
        processes: Mapping[str, FakeProcess] | None = None,
        *,
        terminal: RecordingTerminal | None = None,
        settings: TurnSettings | None = None,
    ) -> Rig:
        clock = FakeClock()
        model = ScriptedModel(script, clock)
        runner = FakeRunner(clock, processes or {})
        terminal = terminal or RecordingTerminal()
        transcript = MemoryTranscript()
        ports = TurnPorts(model, clock, runner, terminal, transcript)
        agent = Agent(ports, settings or TurnSettings(session_dir=""))
        return Rig(clock, model, runner, terminal, agent, transcript.events)

    return build
