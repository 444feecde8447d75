"""Sub-agents: the same loop on a sub-task, on the two clocks its caller set.

Every ``check_interval`` the sub-agent's progress is reported; at its ``deadline`` it
is stopped and asked for a final report, which is what the caller reads. A stop of
the caller (Esc, the caller's own deadline) stops it the same way, at once: its
report is then made from the record, since nobody waits for the model any more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from treadle.domain.loop.prompt import REPORT_REQUEST
from treadle.domain.loop.response import Answer
from treadle.domain.loop.stop import StopSignal
from treadle.domain.values.events import SubAgentFinished, SubAgentProgress, SubAgentStarted
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.tools import Access, EndTurn, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

if TYPE_CHECKING:
    from treadle.domain.loop.turn import Agent

MIN_CHECK_INTERVAL = 0.1
"""Below this, progress reports would flood the terminal and the transcript."""


class AgentTool:
    """The ``agent`` tool: runs a sub-agent and returns its final report.

    ``spawn(name)`` makes the sub-agent (the caller's ports, settings and tools).
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

    def __init__(self, caller: Agent, spawn: Callable[[str], Agent]) -> None:
        self._caller = caller
        self._spawn = spawn

    def describe(self, arguments: Mapping[str, Any]) -> str:
        task = str(arguments.get("task", "")).strip()
        return task.splitlines()[0][:100] if task else ""

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        caller = self._caller
        clocks = caller.settings.subagents
        caller.children += 1
        number = caller.children
        child = self._spawn(f"{caller.name}/agent-{number}" if caller.name else f"agent-{number}")
        return await SubAgentRun(
            caller,
            child,
            str(arguments["task"]),
            check_interval=float(arguments.get("check_interval", clocks.check_interval)),
            deadline=float(arguments.get("deadline", clocks.deadline)),
        ).run()


class SubAgentRun:
    """One sub-agent at work: its two clocks, its stop, and the report it leaves."""

    def __init__(
        self, caller: Agent, child: Agent, task: str, *, check_interval: float, deadline: float
    ) -> None:
        self.caller, self.child, self.task = caller, child, task
        self.check_interval, self.deadline = check_interval, deadline
        self.clock = caller.ports.clock
        self.stop = StopSignal(parent=caller.current_stop)
        self.deadline_hit = False
        self.started = self.clock.now()

    async def run(self) -> ToolOutcome:
        """Run the sub-task; its tokens are added to the caller's turn.

        A sub-agent that ends blocked or waiting for input ends its caller's turn the
        same way; otherwise the caller reads its answer or report.
        """
        caller, child = self.caller, self.child
        caller.emit(
            SubAgentStarted(child.name, self.task, self.check_interval, self.deadline, caller.name)
        )
        timers = [
            asyncio.ensure_future(self._stop_at_deadline()),
            asyncio.ensure_future(self._report_progress()),
        ]
        ending = "stopped"
        try:
            outcome = await child.run_turn(self.task, self.stop)
            for timer in timers:
                timer.cancel()
            if outcome.kind is OutcomeKind.FINISHED:
                ending = "finished"
                text = child.history.last_assistant_text() or "(the sub-agent answered nothing)"
            elif outcome.kind is OutcomeKind.PAUSED and self.deadline_hit:
                ending = "deadline"
                text = (
                    f"The sub-agent was stopped at its deadline of {self.deadline:g} s. "
                    f"Its report:\n{await self._final_report()}"
                )
            elif outcome.kind is OutcomeKind.PAUSED:
                text = f"The sub-agent was stopped by its caller. {self._summary()}"
            else:
                ending = outcome.screen_line
                text = f"The sub-agent ended without finishing ({ending}). {self._summary()}"
                if outcome.kind in (OutcomeKind.BLOCKED, OutcomeKind.WAITING):
                    # Nobody could answer it, so nobody can answer its caller either: the
                    # whole turn waits for the same person, who then hears what it needs.
                    needed = replace(outcome, detail=f"{outcome.detail} (in {child.name})")
                    return EndTurn(needed, text)
        finally:
            for timer in timers:
                timer.cancel()
            caller.add_usage(child.usage)
            caller.emit(
                SubAgentFinished(
                    child.name,
                    ending,
                    child.requests,
                    child.usage,
                    self.clock.now() - self.started,
                    caller.name,
                )
            )
        return ToolResult(text, is_error=ending not in ("finished", "deadline"), status=ending)

    async def _stop_at_deadline(self) -> None:
        await self.clock.sleep(self.deadline)
        self.deadline_hit = True
        self.stop.set("deadline")

    async def _report_progress(self) -> None:
        child = self.child
        while True:
            await self.clock.sleep(max(self.check_interval, MIN_CHECK_INTERVAL))
            self.caller.emit(
                SubAgentProgress(
                    child.name,
                    child.doing,
                    child.requests,
                    child.usage,
                    self.clock.now() - self.started,
                    self.caller.name,
                )
            )

    async def _final_report(self) -> str:
        """Ask the stopped sub-agent for its report, within a grace no longer than its
        deadline (a 3 s sub-agent does not get a minute to report) nor the configured one."""
        grace = min(self.caller.settings.subagents.report_grace, max(self.deadline, 1.0))
        stop = StopSignal(parent=self.caller.current_stop)

        async def stop_after_grace() -> None:
            await self.clock.sleep(grace)
            stop.set("deadline")

        timer = asyncio.ensure_future(stop_after_grace())
        try:
            answer = await self.child.answer_without_tools(REPORT_REQUEST, stop)
        finally:
            timer.cancel()
        if isinstance(answer, Answer) and answer.text.strip():
            return answer.text
        return self._summary()

    def _summary(self) -> str:
        """A report made from the record, when the sub-agent could not write one."""
        child = self.child
        said = child.history.last_assistant_text() or "nothing"
        return (
            f"{child.requests} requests, {child.usage.total} tokens. "
            f"It was {child.doing}. The last thing it said: {said}"
        )
