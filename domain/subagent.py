"""Sub-agents: the same loop on a sub-task, on the two clocks its caller set.

Every ``check_interval`` the sub-agent's progress is reported; at its ``deadline`` it
is stopped and asked for a final report, which is what the caller reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from treadle.domain.prompt import REPORT_REQUEST
from treadle.domain.response import Answer
from treadle.domain.stop import StopSignal
from treadle.ports.events import OutcomeKind, SubAgentFinished, SubAgentProgress, SubAgentStarted
from treadle.ports.model import ToolSpec
from treadle.ports.tools import Access, ToolContext, ToolOutcome, ToolResult

if TYPE_CHECKING:
    from treadle.domain.turn import Agent

DEADLINE = "deadline"


class AgentTool:
    """The ``agent`` tool: runs a sub-agent and returns its final report."""

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
                "check_interval": {"type": "number", "minimum": 0.001},
                "deadline": {"type": "number", "minimum": 0.001},
            },
            "required": ["task"],
            "additionalProperties": False,
        },
    )
    access: Access = "none"

    def __init__(self, caller: Agent) -> None:
        self._caller = caller

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("task", "")).splitlines()[0][:100] if arguments.get("task") else ""

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        clocks = self._caller.settings.subagents
        return await run_subagent(
            self._caller,
            str(arguments["task"]),
            check_interval=float(arguments.get("check_interval", clocks.check_interval)),
            deadline=float(arguments.get("deadline", clocks.deadline)),
        )


async def run_subagent(
    caller: Agent, task: str, *, check_interval: float, deadline: float
) -> ToolResult:
    """Run ``task`` on a new agent; its tokens are added to the caller's turn."""
    from treadle.domain.turn import Agent

    caller.children += 1
    name = f"{caller.name}/agent-{caller.children}" if caller.name else f"agent-{caller.children}"
    child = Agent(caller.ports, caller.settings, caller.base_tools, name=name)
    clock = caller.ports.clock
    stop = StopSignal()
    started = clock.now()
    caller.emit(SubAgentStarted(name, task, check_interval, deadline, caller.name))

    async def stop_at_deadline() -> None:
        await clock.sleep(deadline)
        stop.set(DEADLINE)

    async def report_progress() -> None:
        while True:
            await clock.sleep(check_interval)
            caller.emit(
                SubAgentProgress(
                    name,
                    child.doing,
                    child.requests,
                    child.usage,
                    clock.now() - started,
                    caller.name,
                )
            )

    timers = [asyncio.ensure_future(stop_at_deadline()), asyncio.ensure_future(report_progress())]
    ending = "stopped"
    try:
        outcome = await child.run_turn(task, stop)
        for timer in timers:
            timer.cancel()
        if stop.reason == DEADLINE:
            ending = DEADLINE
            report = await _final_report(child, caller.settings.subagents.report_grace)
            text = f"The sub-agent was stopped at its deadline of {deadline:g} s. Its report:\n"
            text += report
        elif outcome.kind is OutcomeKind.FINISHED:
            ending = "finished"
            text = child.history.last_assistant_text() or "(the sub-agent answered nothing)"
        else:
            ending = outcome.screen_line
            text = f"The sub-agent ended without finishing ({outcome.screen_line}).\n" + _summary(
                child
            )
    finally:
        for timer in timers:
            timer.cancel()
        caller.add_usage(child.usage)
        caller.emit(
            SubAgentFinished(
                name, ending, child.requests, child.usage, clock.now() - started, caller.name
            )
        )
    return ToolResult(text, is_error=ending not in ("finished", DEADLINE), status=ending)


async def _final_report(child: Agent, grace: float) -> str:
    """Ask the stopped sub-agent for its report, within ``grace`` seconds."""
    clock = child.ports.clock
    stop = StopSignal()

    async def stop_after_grace() -> None:
        await clock.sleep(grace)
        stop.set(DEADLINE)

    timer = asyncio.ensure_future(stop_after_grace())
    try:
        answer = await child.answer_without_tools(REPORT_REQUEST, stop)
    finally:
        timer.cancel()
    if isinstance(answer, Answer) and answer.text.strip():
        return answer.text
    return _summary(child)


def _summary(child: Agent) -> str:
    """A report made from the record when the sub-agent could not write one."""
    said = child.history.last_assistant_text() or "nothing"
    return (
        f"{child.requests} requests, {child.usage.total} tokens. "
        f"It was {child.doing}. The last thing it said: {said}"
    )
