"""Sub-agents: the same loop on a sub-task, on the two clocks its caller set.

:class:`AgentTool` is what the model calls; the sub-agent it starts is watched by a
:class:`~treadle.domain.loop.watcher.SubAgentWatcher` (imported when a sub-agent first
starts: most turns never run one), which drives the pure watch of
:mod:`treadle.domain.rules.watching`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from returns.result import Failure, Success

from treadle.domain.loop.settings import SubAgentClocks
from treadle.domain.rules.workflows import unknown_agent
from treadle.domain.rules.worktree import isolation_report
from treadle.domain.values.conversation import Usage
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import (
    MIN_CHECK_INTERVAL,
    Access,
    Isolated,
    ToolEnding,
    ToolOutcome,
    ToolResult,
)
from treadle.domain.values.workflows import AgentDefinition
from treadle.ports.isolation import WorkspaceIsolation
from treadle.ports.tools import ToolContext

if TYPE_CHECKING:
    from treadle.domain.loop.watcher import SubAgent


class AgentTool:
    """The ``agent`` tool: hands a sub-task to a sub-agent and returns its final report.

    ``spawn(name, definition)`` makes the sub-agent (a named one of ``agents`` when the
    call names one; a line saying why when it cannot); ``add_usage`` adds its tokens to the calling
    turn. The loop recognises this tool by its type: it is not raced against the
    caller's stop, because a sub-agent hears the stop itself and still reports.
    """

    spec = ToolSpec(
        name="agent",
        description=(
            "Hand a self-contained sub-task to a sub-agent that has the same tools. It "
            "reports its progress every check_interval seconds and is stopped at its "
            "deadline (seconds), when it writes a final report; you get that report. "
            "Several agent calls in one answer run at the same time."
        ),
        parameters={
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The sub-task, self-contained."},
                "check_interval": {"type": "number", "minimum": MIN_CHECK_INTERVAL},
                "deadline": {"type": "number", "minimum": 0},
            },
            "required": ["task"],
            "additionalProperties": False,
        },
    )
    access: Access = "none"

    def __init__(
        self,
        spawn: Callable[[str, AgentDefinition | None, str], SubAgent | str],
        clocks: SubAgentClocks,
        add_usage: Callable[[Usage], None],
        *,
        max_depth: int = 3,
        started: int = 0,
        agents: Sequence[AgentDefinition] = (),
        isolation: WorkspaceIsolation | None = None,
    ) -> None:
        self._isolation = isolation
        self._agents = {agent.name: agent for agent in agents}
        if agents:  # the named sub-agents (issue 23), which the model chooses by name
            self.spec = with_named_agents(AgentTool.spec, agents)
        if isolation is not None:  # offered only where a worktree can be made (issue 27)
            self.spec = with_isolation(self.spec)
        self._spawn = spawn
        self._clocks = clocks
        self._add_usage = add_usage
        self._max_depth = max_depth
        self._started = started
        """The number of the last sub-agent started (a continued session's, at first)."""

    def restart(self, started: int) -> None:
        """Number the next sub-agent after ``started`` (a session continued from its record)."""
        self._started = started

    def describe(self, arguments: Mapping[str, Any]) -> str:
        task = str(arguments.get("task", "")).strip()
        return task.splitlines()[0][:100] if task else ""

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        """Run the sub-task; the sub-agent's tokens count in the calling turn.

        A sub-agent that ends blocked or waiting for input ends its caller's turn the
        same way; otherwise the caller reads its answer or report.
        """
        if depth(context.agent) >= self._max_depth:
            return ToolResult(
                f"Error: refused: sub-agents may nest at most {self._max_depth} deep "
                "(subagent_depth); do this sub-task yourself.",
                is_error=True,
                status="refused",
                ending=ToolEnding.REFUSED,
            )
        wanted = str(arguments.get("agent") or "")
        definition = self._agents.get(wanted) if wanted else None
        if wanted and definition is None:
            known = unknown_agent(wanted, list(self._agents.values()))
            return ToolResult(f"Error: {known}", is_error=True, status="unknown agent")
        number = self._started + 1
        name = f"{context.agent}/agent-{number}" if context.agent else f"agent-{number}"
        isolated: Isolated | None = None
        if arguments.get("isolation") == "worktree":
            made = await self._isolate(context.workspace, name)
            if isinstance(made, ToolResult):
                return made
            isolated = made
        child = self._spawn(name, definition, isolated.workspace if isolated else "")
        if isinstance(child, str):
            if isolated is not None and self._isolation is not None:
                await self._isolation.finish(isolated)
            return ToolResult(f"Error: {child}", is_error=True, status="refused")
        self._started = number
        from treadle.domain.loop.watcher import SubAgentWatcher

        clocks = self._clocks
        watcher = SubAgentWatcher(
            child,
            str(arguments["task"]),
            context,
            check_interval=float(arguments.get("check_interval", clocks.check_interval)),
            deadline=float(arguments.get("deadline", clocks.deadline)),
            grace=clocks.report_grace,
            add_usage=self._add_usage,
        )
        outcome = await watcher.run()
        if isolated is None or self._isolation is None:
            return outcome
        # Said once it has reported (a stop that cancels the call leaves the worktree).
        changes = await self._isolation.finish(isolated)
        return with_changes(outcome, isolated, changes)

    async def _isolate(self, workspace: str, name: str) -> Isolated | ToolResult:
        """The sub-agent's own worktree, or the tool error that says why it has none."""
        if self._isolation is None:
            return ToolResult(
                'Error: isolation "worktree" is not available here; leave it out.',
                is_error=True,
                status="refused",
                ending=ToolEnding.REFUSED,
            )
        match await self._isolation.isolate(workspace, name):
            case Success(Isolated() as isolated):
                return isolated
            case Failure(why):
                return ToolResult(
                    f'Error: isolation "worktree": {why}',
                    True,
                    "refused",
                    ending=ToolEnding.REFUSED,
                )
        raise AssertionError("unreachable")


def with_changes(outcome: ToolOutcome, isolated: Isolated, changes: str) -> ToolOutcome:
    """The sub-agent's report, followed by what it changed in its worktree."""
    if not isinstance(outcome, ToolResult):
        return outcome
    return replace(outcome, text=f"{outcome.text}\n\n{isolation_report(isolated, changes)}")


DESCRIBED_MOST = 200
"""Characters of a named agent's description in the tool's own description."""


def with_named_agents(spec: ToolSpec, agents: Sequence[AgentDefinition]) -> ToolSpec:
    """The ``agent`` tool's spec with its ``agent`` argument: the named sub-agents, each
    with what it is for."""
    listed = "; ".join(f"{a.name}: {a.description[:DESCRIBED_MOST]}" for a in agents)
    properties = {
        **spec.parameters["properties"],
        "agent": {
            "type": "string",
            "description": f"A named sub-agent, one of: {', '.join(a.name for a in agents)} "
            "(leave out for a general one).",
        },
    }
    return ToolSpec(
        spec.name,
        f"{spec.description} Named sub-agents (give agent): {listed}",
        {**spec.parameters, "properties": properties},
    )


def with_isolation(spec: ToolSpec) -> ToolSpec:
    """The ``agent`` tool's spec with its ``isolation`` argument."""
    properties = {
        **spec.parameters["properties"],
        "isolation": {
            "type": "string",
            "enum": ["worktree"],
            "description": "worktree: it works in a git worktree of its own; its report "
            "ends with the diff of its changes.",
        },
    }
    return ToolSpec(spec.name, spec.description, {**spec.parameters, "properties": properties})


def depth(name: str) -> int:
    """How deep an agent is: 0 for the main one, 1 for ``agent-1``, 2 for ``agent-1/agent-2``."""
    return name.count("/") + 1 if name else 0
