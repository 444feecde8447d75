"""The shipped fakes of the terminal and the transcript play their ports: nobody at the
silent terminal answers, and the memory transcript keeps every event in order."""

from __future__ import annotations

from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    MemoryTranscript,
    ScriptedModel,
    SilentTerminal,
)
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.events import ToolFinished, TurnEnded, TurnStarted
from treadle.domain.values.outcome import OutcomeKind


async def test_nobody_at_a_silent_terminal_approves_and_the_transcript_keeps_the_turn() -> None:
    clock = FakeClock()
    model = ScriptedModel([R.calling("bash", command="make deploy")], clock)
    runner = FakeRunner(clock, {"make deploy": FakeProcess()})
    transcript = MemoryTranscript()
    ports = TurnPorts(model, clock, runner, SilentTerminal(), transcript)
    agent = Agent(ports, TurnSettings(approval="ask", session_dir=""))
    outcome = await agent.run_turn("deploy")
    assert outcome.kind is OutcomeKind.BLOCKED  # the question went unanswered
    assert runner.specs == []
    kinds = [type(event) for event in transcript.events]
    assert kinds[0] is TurnStarted and kinds[-1] is TurnEnded
    assert ToolFinished in kinds
