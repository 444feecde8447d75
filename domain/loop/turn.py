"""The turn loop: ask the model, run the tools it calls, send the results, repeat.

Example (see the README for the whole program)::

    agent = Agent(TurnPorts(model, clock, runner, terminal))
    outcome = await agent.run_turn("fix the failing test")
    print(outcome.screen_line)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from treadle.domain.loop.builtin_tools import AskTool, BashTool, UpdatePlanTool
from treadle.domain.loop.response import Answer, Responder
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.stop import STOPPED, Stopped, StopSignal
from treadle.domain.loop.subagent import AgentTool
from treadle.domain.rules.approval import Ask, Deny, decide_approval
from treadle.domain.rules.arguments import parse_arguments
from treadle.domain.rules.history import INTERRUPTED_RESULT, History, close_unanswered
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    MessageAdded,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
    UsageUpdated,
)
from treadle.domain.values.outcome import TurnOutcome
from treadle.domain.values.tools import ApprovalRequest, EndTurn, ToolOutcome, ToolResult
from treadle.ports.clock import Clock
from treadle.ports.model import Model
from treadle.ports.process import ProcessRunner
from treadle.ports.terminal import Terminal
from treadle.ports.tools import Tool, ToolContext
from treadle.ports.transcript import TranscriptStore


@dataclass(frozen=True, slots=True)
class TurnPorts:
    """The ports one agent drives."""

    model: Model
    clock: Clock
    runner: ProcessRunner
    terminal: Terminal
    transcript: TranscriptStore | None = None


def core_tools() -> list[Tool]:
    """The tools that need only the ports: bash, update_plan and ask."""
    return [BashTool(), UpdatePlanTool(), AskTool()]


class Agent:
    """One conversation with the model, turn after turn.

    ``tools`` defaults to :func:`core_tools`; the ``agent`` tool for sub-agents is
    added unless ``subagents`` is False. Sub-agents share the ports and add their
    tokens to this agent's turn.
    """

    def __init__(
        self,
        ports: TurnPorts,
        settings: TurnSettings | None = None,
        tools: Sequence[Tool] | None = None,
        *,
        name: str = "",
        history: History | None = None,
        subagents: bool = True,
    ) -> None:
        self.ports = ports
        self.settings = settings or TurnSettings()
        self.name = name
        self.history = history if history is not None else History()
        self.history.listener = lambda message: self.emit(MessageAdded(message, name))
        self.base_tools = list(core_tools() if tools is None else tools)
        self.tools = {tool.spec.name: tool for tool in self.base_tools}
        if subagents:
            self.tools["agent"] = AgentTool(self, self._spawn)
        self.current_stop: StopSignal | None = None
        self._allowed = set(self.settings.allowed_prefixes)
        self.responder = Responder(
            ports.model, ports.clock, self.settings, self.emit, name, on_usage=self.add_usage
        )
        self.usage = Usage()
        self.requests_before_turn = 0
        self.children = 0

    # What the terminal and the caller see ------------------------------------

    def emit(self, event: TurnEvent) -> None:
        self.ports.terminal.show(event)
        if self.ports.transcript is not None:
            self.ports.transcript.record(event)

    @property
    def requests(self) -> int:
        """Requests made in the current turn."""
        return self.responder.requests - self.requests_before_turn

    @property
    def doing(self) -> str:
        return self.responder.doing

    def _spawn(self, name: str) -> Agent:
        """A sub-agent with this agent's ports, settings and tools."""
        return Agent(self.ports, self.settings, self.base_tools, name=name)

    def add_usage(self, usage: Usage) -> None:
        """Tokens spent on this agent's behalf (by a sub-agent) count in its turn."""
        self.usage += usage
        self.emit(UsageUpdated(usage, self.usage, self.requests, self.name))

    # The loop --------------------------------------------------------------------

    async def run_turn(
        self, task: str, stop: StopSignal | None = None, *, announce: bool = True
    ) -> TurnOutcome:
        """Run one turn on ``task`` until the model answers without a tool call.

        Nothing caps the number of requests; ``stop`` (Esc, a caller, a deadline)
        ends it as paused. The history stays sendable whatever happens.
        """
        stop = stop or StopSignal()
        self.current_stop = stop
        if not self.name:  # the main agent owns the terminal's Esc and Ctrl-C
            self.ports.terminal.bind_interrupt(lambda: stop.set("interrupted"))
        started = self.ports.clock.now()
        self.usage = Usage()
        self.requests_before_turn = self.responder.requests
        if announce:
            self.emit(TurnStarted(task, self.name))
        close_unanswered(self.history)
        self.history.append(Message.user(task))
        try:
            outcome = await self._loop(stop)
        except asyncio.CancelledError:
            close_unanswered(self.history)
            self._end(TurnOutcome.paused(), started)
            raise
        except Exception as bug:  # a bug must still end the turn with a line and a record
            outcome = TurnOutcome.failed("InternalError", f"{type(bug).__name__}: {bug}")
        # However it ended, the conversation is ready for the next request.
        close_unanswered(self.history)
        self._end(outcome, started)
        return outcome

    def _end(self, outcome: TurnOutcome, started: float) -> None:
        elapsed = self.ports.clock.now() - started
        self.emit(TurnEnded(outcome, self.usage, self.requests, elapsed, self.name))

    async def _loop(self, stop: StopSignal) -> TurnOutcome:
        specs = [tool.spec for tool in self.tools.values()]
        while True:
            answer = await self.responder.respond(self.history, specs, stop)
            if isinstance(answer, TurnOutcome):
                return answer
            self.history.append(Message.assistant(answer.text, answer.tool_calls))
            if not answer.tool_calls:
                return TurnOutcome.finished()
            ended = await self._run_calls(answer, stop)
            if ended is not None:
                return ended

    async def answer_without_tools(self, task: str, stop: StopSignal) -> Answer | TurnOutcome:
        """One answer to ``task`` that may call no tool (a sub-agent's final report).

        The tools are still described: a history that holds tool calls needs them.
        A call the model makes anyway is dropped; only its text is kept.
        """
        close_unanswered(self.history)
        self.history.append(Message.user(task))
        specs = [tool.spec for tool in self.tools.values()]
        answer = await self.responder.respond(self.history, specs, stop, tools_allowed=False)
        if isinstance(answer, Answer):
            self.history.append(Message.assistant(answer.text))
        return answer

    # Tools -------------------------------------------------------------------------

    async def _run_calls(self, answer: Answer, stop: StopSignal) -> TurnOutcome | None:
        """Run the calls in order; read-only ones and sub-agents side by side."""
        results: dict[str, ToolOutcome] = {}
        ended: TurnOutcome | None = None
        for batch in _batches(answer.tool_calls, self.tools):
            if batch[0].name == "agent":
                # Sub-agents hear the stop themselves, end at once and still report.
                await self._run_batch(batch, results)
                raced: Stopped | None = STOPPED if stop.is_set else None
            else:
                raced = await stop.race(self._run_batch(batch, results))
            if raced is STOPPED:
                ended = TurnOutcome.paused()
                break
            ended = next((r.outcome for r in results.values() if isinstance(r, EndTurn)), None)
            if ended is not None:
                break
        for call in answer.tool_calls:
            self.history.append(_result_message(call, results.get(call.id)))
        return ended

    async def _run_batch(self, batch: Sequence[ToolCall], results: dict[str, ToolOutcome]) -> None:
        async def run_one(call: ToolCall) -> None:
            results[call.id] = await self._run_call(call)

        await asyncio.gather(*(run_one(call) for call in batch))

    async def _run_call(self, call: ToolCall) -> ToolOutcome:
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(self.tools)
            return self._refuse(call, f"unknown tool '{call.name}'; the tools are: {known}")
        parsed = parse_arguments(call.arguments, tool.spec.parameters)
        arguments = parsed.value_or(None)
        if arguments is None:
            return self._refuse(call, f"bad arguments for {call.name}: {parsed.failure()}")
        summary = tool.describe(arguments)
        decision = decide_approval(
            self.settings.approval, tool.access, summary, allowed=self._allowed, tool=call.name
        )
        if isinstance(decision, Deny):
            return self._refuse(call, decision.why, summary)
        if isinstance(decision, Ask):
            request = ApprovalRequest(call.name, summary, decision.prefix, self.name)
            reply = await self.ports.terminal.ask_approval(request)
            if reply is None:
                needed = f"approval needed to run {call.name}: {summary}"
                self.emit(ToolStarted(call, summary, self.name))
                self.emit(ToolFinished(call, "blocked", True, 0.0, self.name))
                return EndTurn(TurnOutcome.blocked(needed), f"Not run: {needed}.")
            if reply == "no":
                return self._refuse(call, "the user declined this call", summary)
            if reply == "always":
                self._allowed.add(decision.prefix)
        return await self._execute(tool, call, arguments, summary)

    async def _execute(
        self, tool: Tool, call: ToolCall, arguments: dict[str, object], summary: str
    ) -> ToolOutcome:
        clock = self.ports.clock
        self.responder.doing = f"running {call.name}: {summary}"[:120]
        self.emit(ToolStarted(call, summary, self.name))
        started = clock.now()
        try:
            outcome = await tool.run(arguments, self._context())
        except asyncio.CancelledError:  # stopped: the terminal still learns how it ended
            self.emit(ToolFinished(call, "interrupted", True, clock.now() - started, self.name))
            raise
        except Exception as bug:  # a broken tool is reported to the model; the turn goes on
            outcome = ToolResult(f"the tool failed: {type(bug).__name__}: {bug}", True, "crashed")
        match outcome:
            case ToolResult(status=status, is_error=is_error):
                self.emit(ToolFinished(call, status, is_error, clock.now() - started, self.name))
            case EndTurn(outcome=ending):
                self.emit(ToolFinished(call, ending.kind.value, False, 0.0, self.name))
        return outcome

    def _refuse(self, call: ToolCall, why: str, summary: str = "") -> ToolResult:
        self.emit(ToolStarted(call, summary or call.arguments[:80], self.name))
        self.emit(ToolFinished(call, "refused", True, 0.0, self.name))
        return ToolResult(f"Error: {why}", is_error=True, status="refused")

    def _context(self) -> ToolContext:
        return ToolContext(
            workspace=self.settings.workspace,
            session_dir=self.settings.session_dir,
            runner=self.ports.runner,
            clock=self.ports.clock,
            limits=self.settings.limits,
            emit=self.emit,
            ask_question=self.ports.terminal.ask_question,
            agent=self.name,
        )


def _result_message(call: ToolCall, outcome: ToolOutcome | None) -> Message:
    """The tool message for a call; one that never finished gets the interrupted result."""
    match outcome:
        case ToolResult(text=text, is_error=is_error):
            return Message.tool(call.id, text, is_error=is_error)
        case EndTurn(text=text) if text:
            return Message.tool(call.id, text)
    return Message.tool(call.id, INTERRUPTED_RESULT, is_error=True, interrupted=True)


def _batches(calls: Sequence[ToolCall], tools: dict[str, Tool]) -> list[list[ToolCall]]:
    """Group neighbouring calls that may run side by side: reads with reads, sub-agents
    with sub-agents; every other call runs alone, in order."""
    batches: list[list[ToolCall]] = []
    previous = ""
    for call in calls:
        tool = tools.get(call.name)
        kind = (
            "agent"
            if isinstance(tool, AgentTool)
            else "read"
            if tool is not None and tool.access == "read"
            else ""
        )
        if kind and kind == previous:
            batches[-1].append(call)
        else:
            batches.append([call])
        previous = kind
    return batches
