"""The loop's part in seeing and taking back changes: the host's turn start (a checkpoint)
made while the first request is, before any tool runs; the diff a write asks approval
for, the diff a call made, and a sandbox that cannot be had ending the turn blocked."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from returns.result import Failure, Result

from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.values.events import (
    Notice,
    ResponseReceived,
    ToolFinished,
    TurnEvent,
)
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.process import ProcessError, ProcessResult, ProcessSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

DIFF = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n+new\n"


class RecordingTurnStart:
    """The TurnStart port, remembering the tasks it was called with."""

    def __init__(self, notices: Sequence[Notice] = (), *, hang: bool = False) -> None:
        self.tasks: list[str] = []
        self._notices = notices
        self._hang = hang

    async def before_turn(self, task: str) -> Sequence[Notice]:
        self.tasks.append(task)
        if self._hang:  # a first checkpoint of a huge tree, say
            await asyncio.Event().wait()
        return self._notices


class Overwrite:
    """A write tool that can preview its change."""

    spec = ToolSpec("overwrite", "Write f.", {"type": "object", "properties": {}})
    access: Access = "write"

    def __init__(self) -> None:
        self.previews = 0

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return "overwrite f"

    async def preview(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        self.previews += 1
        return DIFF

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolResult("Wrote f.", status="replaced", diff=DIFF)


def agent_with(
    script: Sequence[R],
    *,
    turn_start: RecordingTurnStart | None = None,
    terminal: RecordingTerminal | None = None,
    approval: str = "auto",
    runner: Any = None,
) -> tuple[Agent, RecordingTerminal, ScriptedModel]:
    clock = FakeClock()
    model = ScriptedModel(script, clock)
    terminal = terminal or RecordingTerminal()
    ports = TurnPorts(model, clock, runner or FakeRunner(clock), terminal, turn_start=turn_start)
    settings = TurnSettings(approval=approval)  # type: ignore[arg-type]
    return Agent(ports, settings, [*core_tools(), Overwrite()]), terminal, model


def kinds(events: Sequence[TurnEvent]) -> list[str]:
    return [type(event).__name__ for event in events]


async def test_the_host_prepares_each_turn_and_its_notices_show_before_the_turn_ends() -> None:
    turn_start = RecordingTurnStart([Notice("checkpoint_partial", "big.bin not recorded")])
    agent, terminal, _ = agent_with([R.saying("one"), R.saying("two")], turn_start=turn_start)
    await agent.run_turn("first")
    await agent.run_turn("second")
    assert turn_start.tasks == ["first", "second"]
    shown = kinds(terminal.events)
    assert shown.index("Notice") < shown.index("TurnEnded")


async def test_no_tool_runs_before_the_host_has_recorded_the_workspace() -> None:
    turn_start = RecordingTurnStart([Notice("checkpoint_partial", "big.bin not recorded")])
    agent, terminal, _ = agent_with([R.calling("overwrite"), R.saying("ok")], turn_start=turn_start)
    await agent.run_turn("change f")
    shown = kinds(terminal.events)
    assert shown.index("RequestSent") < shown.index("Notice") < shown.index("ToolStarted")


async def test_a_sub_agent_does_not_record_a_checkpoint_of_its_own() -> None:
    turn_start = RecordingTurnStart()
    script = {
        "*": [R.calling("agent", task="look around"), R.saying("done")],
        "look around": [R.saying("looked")],
    }
    clock = FakeClock()
    ports = TurnPorts(
        ScriptedModel(script, clock),
        clock,
        FakeRunner(clock),
        RecordingTerminal(),
        turn_start=turn_start,
    )
    outcome = await Agent(ports).run_turn("delegate")
    assert outcome.kind is OutcomeKind.FINISHED
    assert turn_start.tasks == ["delegate"]


async def test_a_stop_while_the_workspace_is_being_recorded_pauses_the_turn_before_any_tool() -> (
    None
):
    turn_start = RecordingTurnStart(hang=True)
    terminal = RecordingTerminal(press_esc_when=lambda event: isinstance(event, ResponseReceived))
    agent, _, model = agent_with(
        [R.calling("overwrite"), R.saying("never")], turn_start=turn_start, terminal=terminal
    )
    outcome = await asyncio.wait_for(agent.run_turn("huge tree"), 5)
    assert outcome.kind is OutcomeKind.PAUSED
    assert len(model.requests) == 1
    assert not [e for e in terminal.events if isinstance(e, ToolFinished) and not e.is_error]


async def test_the_approval_for_a_write_carries_the_diff_it_would_make() -> None:
    terminal = RecordingTerminal(approvals=["yes"])
    agent, _, _ = agent_with(
        [R.calling("overwrite"), R.saying("ok")], terminal=terminal, approval="ask"
    )
    await agent.run_turn("change f")
    (request,) = terminal.approval_requests
    assert (request.tool, request.summary, request.diff) == ("overwrite", "overwrite f", DIFF)
    (finished,) = [e for e in terminal.events if isinstance(e, ToolFinished)]
    assert finished.diff == DIFF and finished.status == "replaced"


async def test_a_call_that_needs_no_approval_is_not_previewed_and_a_command_has_no_diff() -> None:
    agent, _, _ = agent_with([R.calling("overwrite"), R.saying("ok")])
    await agent.run_turn("change f")
    assert agent.tools["overwrite"].previews == 0  # type: ignore[attr-defined]
    terminal_asks = RecordingTerminal(approvals=["yes"])
    agent, _, _ = agent_with(
        [R.calling("bash", command="ls"), R.saying("ok")], terminal=terminal_asks, approval="ask"
    )
    await agent.run_turn("list")
    assert terminal_asks.approval_requests[0].diff == ""


class UnconfinableRunner:
    """A runner whose commands must be confined, on a kernel that cannot."""

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]:
        return Failure(ProcessError("sandbox = read-only was asked for, but no Landlock", True))


async def test_a_sandbox_that_cannot_be_had_ends_the_turn_blocked_naming_why() -> None:
    agent, terminal, model = agent_with(
        [R.calling("bash", command="make"), R.saying("never")], runner=UnconfinableRunner()
    )
    outcome = await agent.run_turn("build")
    assert outcome.kind is OutcomeKind.BLOCKED and outcome.exit_code == 3
    assert outcome.screen_line == (
        "Turn blocked: sandbox = read-only was asked for, but no Landlock"
    )
    (finished,) = [e for e in terminal.events if isinstance(e, ToolFinished)]
    assert finished.status == "blocked"
    assert finished.is_error  # a blocked call is no success: no tick for it
    assert len(model.requests) == 1
