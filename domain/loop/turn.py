"""The turn loop: ask the model, run the tools it calls, send the results, repeat.

Example (see the README for the whole program)::

    agent = Agent(TurnPorts(model, clock, runner, terminal))
    outcome = await agent.run_turn("fix the failing test")
    print(outcome.screen_line)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from treadle.domain.loop.background import BackgroundProcesses
from treadle.domain.loop.background_tools import ProcessOutputTool, ProcessStopTool
from treadle.domain.loop.builtin_tools import AskTool, BashTool, UpdatePlanTool
from treadle.domain.loop.context import SharedWindow
from treadle.domain.loop.hooks import TurnHooks
from treadle.domain.loop.named_agents import ModelsByName, named_setup
from treadle.domain.loop.response import Answer, Responder
from treadle.domain.loop.server_requests import complete, fill_form
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.spending import SpendingMeter
from treadle.domain.loop.stop import STOPPED, StoppedFirst, StopSignal
from treadle.domain.loop.subagent import AgentTool
from treadle.domain.loop.tool_search import ToolSearchTool
from treadle.domain.rules.approval import Ask, Deny, decide_approval, declined_text
from treadle.domain.rules.arguments import arguments_object, parse_arguments
from treadle.domain.rules.context_window import ContextState
from treadle.domain.rules.final_answer import correction_request, read_value
from treadle.domain.rules.history import INTERRUPTED_RESULT, History, close_unanswered
from treadle.domain.rules.hook_turns import with_context
from treadle.domain.rules.limits import LimitNear
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.rules.sampling import SAMPLING_TOOL, decide_sampling, sampling_summary
from treadle.domain.rules.tokens import measured_as
from treadle.domain.rules.tool_offer import TOOL_SEARCH, UNKNOWN_WINDOW, loaded_tools, offer_tools
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    BackgroundCount,
    MessageAdded,
    Notice,
    RequestSent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
    UsageUpdated,
)
from treadle.domain.values.hooks import SessionSource
from treadle.domain.values.model import ServerFacts, ToolSpec
from treadle.domain.values.outcome import (
    Answered,
    Crashed,
    NeedsApproval,
    OutcomeKind,
    OutputInvalid,
    PromptRefused,
    SpendingLimitReached,
    Stopped,
    TurnEnding,
    TurnOutcome,
    end_turn,
)
from treadle.domain.values.process import HostGrant
from treadle.domain.values.server_requests import (
    FormAnswer,
    FormRequest,
    SamplingReply,
    SamplingRequest,
)
from treadle.domain.values.text import well_formed
from treadle.domain.values.tools import (
    ApprovalRequest,
    Declined,
    EndTurn,
    ToolEnding,
    ToolLimits,
    ToolOutcome,
    ToolResult,
)
from treadle.domain.values.workflows import AgentDefinition
from treadle.ports.clock import Clock
from treadle.ports.hooks import Hooks
from treadle.ports.isolation import WorkspaceIsolation
from treadle.ports.model import Model, ModelServer
from treadle.ports.notify import Notifier
from treadle.ports.process import ProcessRunner
from treadle.ports.terminal import AsksForms, Terminal
from treadle.ports.tools import PreviewsChanges, StoppedResult, Tool, ToolCatalog, ToolContext
from treadle.ports.transcript import TranscriptStore
from treadle.ports.turn_start import TurnStart

log = logging.getLogger(__name__)

SCREEN_ONLY = (ToolOutput, BackgroundCount)
"""Events shown and never kept: a running command's last lines, the background count."""


@dataclass(frozen=True, slots=True)
class TurnPorts:
    """The ports one agent drives."""

    model: Model
    clock: Clock
    runner: ProcessRunner
    terminal: Terminal
    transcript: TranscriptStore | None = None
    turn_start: TurnStart | None = None
    """What happens on the host as each main turn starts (a checkpoint of the workspace)."""
    server: ModelServer | None = None
    models: ModelsByName | None = None
    """Builds another model by its name, for a named sub-agent that asks for one."""
    hooks: Hooks | None = None
    """The commands a team set to run at a turn's moments (issue 23)."""
    notifier: Notifier | None = None
    """Rings the terminal when a turn ends or waits for the person (issue 23)."""
    isolation: WorkspaceIsolation | None = None
    """Makes a sub-agent's own worktree (``isolation: "worktree"``); None: not offered."""
    catalog: ToolCatalog | None = None
    """Tools from outside (the MCP servers'), asked for before every request."""


def core_tools(background: BackgroundProcesses | None = None) -> list[Tool]:
    """The tools that need only the ports: bash, update_plan, ask, and the two that
    read and stop what bash started in ``background`` (the session's processes)."""
    processes = background if background is not None else BackgroundProcesses()
    return [
        BashTool(processes),
        UpdatePlanTool(),
        AskTool(),
        ProcessOutputTool(processes),
        ProcessStopTool(processes),
    ]


class Agent:
    """One conversation with the model, turn after turn.

    ``tools`` defaults to :func:`core_tools`; the ``agent`` tool for sub-agents is
    added unless ``subagents`` is False (or a tool of that name is given). Sub-agents
    share the ports and the context window, manage their own conversations within it,
    and add their tokens to this agent's turn. A resumed conversation comes with what
    its accounting knew (``context``, folded from its transcript) and the window, and
    the number of the last sub-agent it started (``subagents_started``): the next one
    is numbered after it.
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
        context: ContextState | None = None,
        window: SharedWindow | None = None,
        subagents_started: int = 0,
        meter: SpendingMeter | None = None,
    ) -> None:
        self.ports = ports
        self.settings = settings or TurnSettings()
        self.name = name
        self.history = history if history is not None else History()
        self.history.measured_by(measured_as(self.settings.recorded))
        self.history.listener = lambda message: self.emit(MessageAdded(message, name))
        self.window = window if window is not None else SharedWindow()
        self.meter = meter if meter is not None else SpendingMeter(self.settings.spending)
        """What the turn has spent, shared with its sub-agents (they get this one)."""
        self._warned: set[str] = set()
        self._stopped_results: dict[str, ToolResult] = {}
        """What the calls a stop cancelled had done until then, by call id."""
        self.base_tools = list(core_tools() if tools is None else tools)
        self.tools = {tool.spec.name: tool for tool in self.base_tools}
        offered = subagents and self.settings.subagent_depth > 0
        if offered and AgentTool.spec.name not in self.tools:
            self.tools[AgentTool.spec.name] = AgentTool(
                self._spawn,
                self.settings.subagents,
                self.add_usage,
                max_depth=self.settings.subagent_depth,
                started=subagents_started,
                agents=self.settings.agents,
                isolation=ports.isolation,
            )
        self._search = ToolSearchTool(self._outside_specs)
        self._allowed = set(self.settings.allowed_prefixes)
        self.hooks = TurnHooks(ports.hooks, ports.notifier, self.emit, name)
        self._stop = StopSignal()  # the running turn's
        self.person_listener: Callable[[bool], None] | None = None
        self.responder = Responder(
            ports.model,
            ports.clock,
            self.settings,
            self.emit,
            name,
            on_usage=self.add_usage,
            shared_window=self.window,
            context_state=context or ContextState(messages=len(self.history)),
            meter=self.meter,
        )
        self.usage = Usage()
        self.value: object = None
        """The current turn's final answer as a JSON value, once it met the output schema."""
        self.requests_before_turn = 0
        self._turn_started: float | None = None
        self._host_start: asyncio.Future[Sequence[Notice]] | None = None
        self._host_task: str | None = None  # a turn whose host start waits for its request
        self.responder.context.before_compact = self._before_compact

    # What the terminal and the caller see ------------------------------------

    def emit(self, event: TurnEvent) -> None:
        if type(event) is RequestSent and self._host_task is not None:
            self._begin_host()
        if type(event) in SCREEN_ONLY:  # a glimpse for the screen: the result is what is kept
            self.ports.terminal.show(event)
            return
        self.responder.context.observe(event)
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

    def _spawn(
        self, name: str, definition: AgentDefinition | None = None, workspace: str = ""
    ) -> Agent | str:
        """A sub-agent with this agent's ports, settings, tools and window; a named one
        with its definition's prompt, tools and model (or why it cannot start); in
        ``workspace`` when it has one of its own."""
        settings = replace(self.settings, workspace=workspace) if workspace else self.settings
        if definition is None:
            return Agent(
                self.ports,
                settings,
                self.base_tools,
                name=name,
                window=self.window,
                meter=self.meter,
            )
        setup = named_setup(
            definition,
            name,
            settings,
            self.base_tools,
            self.ports.models,
            self.name,
            self.ports.catalog,
        )
        if isinstance(setup, str):
            return setup
        self.emit(setup.notice)
        ports = replace(self.ports, catalog=setup.catalog)  # its own sub-agents inherit it
        if setup.model is not None:
            ports = replace(ports, model=setup.model)
        return Agent(
            ports,
            setup.settings,
            setup.tools,
            name=name,
            window=self.window,
            subagents=setup.subagents,
            meter=self.meter,
        )

    def resume_from(
        self, history: History, context: ContextState, subagents_started: int | None = None
    ) -> None:
        """Go on from a conversation rebuilt from a transcript, what its accounting knew
        then, and the number of its last sub-agent (a replay does this between the turns
        it plays)."""
        history.listener = self.history.listener
        self.history = history
        self.responder.context.restart(context)
        tool = self.tools.get(AgentTool.spec.name)
        if subagents_started is not None and isinstance(tool, AgentTool):
            tool.restart(subagents_started)

    def add_usage(self, usage: Usage) -> None:
        """Tokens spent on this agent's behalf (by a sub-agent) count in its turn."""
        self.usage += usage
        self.emit(UsageUpdated(usage, self.usage, self.requests, self.name))

    # The tools a request offers ------------------------------------------------------

    def _outside(self) -> dict[str, Tool]:
        """The catalog's tools as they are now, by name (a built-in one wins a name)."""
        catalog = self.ports.catalog
        if catalog is None:
            return {}
        return {t.spec.name: t for t in catalog.catalog_tools() if t.spec.name not in self.tools}

    def _outside_specs(self) -> list[ToolSpec]:
        return [tool.spec for tool in self._outside().values()]

    def offered_specs(self) -> list[ToolSpec]:
        """What the next request offers: the built-in tools, and the catalog's — all of
        them while they fit ``mcp_tool_budget`` of the window, else ``tool_search``
        and the ones it loaded (read from the conversation)."""
        specs = [tool.spec for tool in self.tools.values()]
        outside = self._outside()
        if not outside:
            return specs
        window = self.responder.context.window
        offer = offer_tools(
            [tool.spec for tool in outside.values()],
            loaded_tools(self.history.messages),
            window=window.tokens if window is not None else UNKNOWN_WINDOW,
            share=self.settings.mcp_tool_budget,
        )
        specs += [outside[name].spec for name in offer.names]
        if offer.search:
            specs.append(self._search.spec)
        return specs

    def tool_named(self, name: str) -> Tool | None:
        """A tool the model may call: a built-in one, ``tool_search``, or the catalog's
        (also one not loaded: the model may know its name from a search)."""
        tool = self.tools.get(name)
        if tool is not None:
            return tool
        if name == TOOL_SEARCH and self.ports.catalog is not None:
            return self._search
        return self._outside().get(name)

    # The loop --------------------------------------------------------------------

    async def run_turn(
        self, task: str, stop: StopSignal | None = None, *, announce: bool = True
    ) -> TurnOutcome:
        """Run one turn on ``task`` until the model answers without a tool call.

        Nothing caps the number of requests but the limits the person set
        (``settings.spending``); ``stop`` (Esc, a caller, a deadline) ends it as
        paused. The history stays sendable whatever happens.
        """
        task = well_formed(task)  # a person's text can be as broken as a model's
        stop = self._stop = stop or StopSignal()
        if not self.name:  # the main agent owns the terminal's Esc and Ctrl-C
            # The stop itself, not a function of this module around it: Esc goes from
            # the terminal straight to the signal (README: Where things are).
            self.ports.terminal.bind_interrupt(partial(stop.set, "interrupted"))
        started = self._turn_started = self.ports.clock.now()
        if not self.name:  # a sub-agent's spending is its caller's turn's
            self.meter.restart(started)
        self.usage = Usage()
        self.value = None
        self.requests_before_turn = self.responder.requests
        self.hooks.turn_starts()
        if announce:
            self.emit(TurnStarted(task, self.name))
        close_unanswered(self.history)
        try:
            opened = await self._open_turn(task, stop)
            if opened is not None:
                cause = opened
            else:
                cause = await self._loop(stop)
            if not stop.is_set and opened is None:  # a stopped turn does not wait for it
                await self._host_started(stop)
        except asyncio.CancelledError:
            close_unanswered(self.history)
            self._end(end_turn(Stopped()), started)
            raise
        except Exception as bug:  # a bug still ends the turn with its line; the log keeps the rest
            log.exception("the turn of %s failed", self.name or "the main agent")
            cause = Crashed(f"{type(bug).__name__}: {bug}", self.settings.log_path)
        # However it ended, the conversation is ready for the next request.
        close_unanswered(self.history)
        outcome = end_turn(cause)
        self._end(outcome, started)
        return outcome

    async def _open_turn(self, task: str, stop: StopSignal) -> TurnEnding | None:
        """The task joins the conversation, with what the main agent's SessionStart and
        UserPromptSubmit hooks add to it; or why the turn ends before it does (a hook
        refused the prompt, a stop came first)."""
        context: tuple[str, ...] = ()
        if not self.name:
            source: SessionSource = "resume" if len(self.history) else "startup"
            started = await stop.race(self.hooks.session_start(source))
            if isinstance(started, StoppedFirst):
                return Stopped()
            prompt = await stop.race(self.hooks.prompt(task))
            if isinstance(prompt, StoppedFirst):
                return Stopped()
            if prompt.blocked:
                return PromptRefused(prompt.reason)
            context = (*started, *prompt.context)
        self.history.append(Message.user(with_context(task, context)))
        self._host_task = task  # started as the first request goes out (see emit)
        return None

    async def _before_compact(self) -> None:
        """The PreCompact hooks, as a compaction starts; Esc does not wait for them."""
        await self._stop.race(self.hooks.before_compact())

    async def _ask_the_server(self) -> None:
        """What the server says about the model, at the start of each main turn: its
        window (unless configured) and, once a session, what it cannot do."""
        server = self.ports.server
        facts = await server.facts() if server is not None else None
        if facts is None:
            self.responder.context.take_facts(ServerFacts())
            return
        self.responder.context.take_facts(facts)
        for kind, text in facts.warnings:
            if kind not in self._warned:
                self._warned.add(kind)
                self.emit(Notice(kind, text, self.name))

    def _end(self, outcome: TurnOutcome, started: float) -> None:
        self._turn_started = None
        elapsed = self.ports.clock.now() - started
        prices = self.settings.prices
        cost = prices.cost(self.usage) if prices is not None else None
        value = self.value if outcome.kind is OutcomeKind.FINISHED else None
        self.emit(TurnEnded(outcome, self.usage, self.requests, elapsed, self.name, cost, value))
        if not self.name and outcome.kind is not OutcomeKind.PAUSED:
            # Paused by the person, who is there; any other ending may find them away.
            self.hooks.attention(
                "turn_ended", outcome.screen_line, self.history.last_assistant_text()
            )

    def abandon_turn(self) -> None:
        """Record the running turn as paused, now: treadle is leaving at once (a second
        Ctrl-C), with no time for the loop to wind down. Nothing when no turn runs."""
        started = self._turn_started
        if started is not None:
            self._end(end_turn(Stopped()), started)

    def _begin_host(self) -> None:
        """The host's part of a main turn's start (a checkpoint of the workspace, the
        sandbox's warning), begun as the turn's first request goes out: it runs while
        the model answers, not ahead of the request (its thread would share the
        interpreter with the request's making), and every tool waits for it: nothing
        can change the workspace before it is recorded."""
        task, self._host_task = self._host_task, None
        if task is None or self.name or self.ports.turn_start is None:
            return
        self._host_start = asyncio.ensure_future(self.ports.turn_start.before_turn(task))

    async def _host_started(self, stop: StopSignal) -> bool:
        """Wait for the turn's start on the host (begun now if no request went out);
        False when the stop came first (the checkpoint itself is left to finish)."""
        self._begin_host()
        started, self._host_start = self._host_start, None
        if started is None:
            return True
        notices = await stop.race(_shielded(started))
        if isinstance(notices, StoppedFirst):
            return False
        for notice in notices:
            self.emit(notice)
        return True

    async def _loop(self, stop: StopSignal) -> TurnEnding:
        if not self.name and await stop.race(self._ask_the_server()) is STOPPED:
            return Stopped()
        corrected = False
        while True:
            if (spent := self._over_limit()) is not None:
                return spent
            specs = self.offered_specs()  # a search, or a server's change, may change them
            answer = await self.responder.respond(self.history, specs, stop)
            if not isinstance(answer, Answer):
                return answer
            self.history.append(
                Message.assistant(answer.text, answer.tool_calls, reasoning=answer.reasoning)
            )
            if not answer.tool_calls:
                invalid = self._invalid_output(answer.text)
                if invalid is None:
                    go_on = await stop.race(self.hooks.at_stop())
                    if go_on is STOPPED:
                        return Stopped()
                    if isinstance(go_on, str):  # a Stop hook sends the turn on, once
                        self.history.append(Message.user(go_on))
                        continue
                    return Answered()
                if corrected:  # one corrective request, and no more
                    return OutputInvalid(invalid[0])
                corrected = True
                self.history.append(Message.user(correction_request(invalid)))
                continue
            if (spent := self._over_limit()) is not None:
                # The request that crossed the limit ends the turn: its calls do not run.
                for call in answer.tool_calls:
                    self.history.append(
                        Message.tool(call.id, f"Not run: {spent.line}.", is_error=True)
                    )
                return spent
            ended = await self._run_calls(answer, stop)
            if ended is not None:
                return ended

    def _invalid_output(self, text: str) -> Sequence[str] | None:
        """What is wrong with a final answer under the output schema (None: nothing, and
        its value is kept). Only the main agent's answer is checked."""
        output = self.settings.output
        if output is None or self.name:
            return None
        value, why = read_value(text)
        errors = [why] if why else output.errors(value)
        if not errors:
            self.value = value
            return None
        return errors

    def _over_limit(self) -> SpendingLimitReached | None:
        """The limit the turn has spent, if any; a warning the first time one is near."""
        found = self.meter.check(self.ports.clock.now())
        if isinstance(found, LimitNear):
            self.emit(Notice("spending_limit_near", found.line(), self.name))
        elif found is not None:
            return SpendingLimitReached(found.line())
        return None

    async def answer_without_tools(self, task: str, stop: StopSignal) -> Answer | TurnEnding:
        """One answer to ``task`` that may call no tool (a sub-agent's final report).

        The tools are still described: a history that holds tool calls needs them.
        A call the model makes anyway is dropped; only its text is kept.
        """
        close_unanswered(self.history)
        self.history.append(Message.user(task))
        specs = self.offered_specs()
        answer = await self.responder.respond(self.history, specs, stop, tools_allowed=False)
        if isinstance(answer, Answer):
            # Its calls are dropped: its reasoning all comes before the text.
            reasoning = tuple(replace(r, position=0) for r in answer.reasoning)
            self.history.append(Message.assistant(answer.text, reasoning=reasoning))
        return answer

    # Tools -------------------------------------------------------------------------

    async def _run_calls(self, answer: Answer, stop: StopSignal) -> TurnEnding | None:
        """Run the calls in order; read-only ones and sub-agents side by side."""
        results: dict[str, ToolOutcome] = {}
        self._stopped_results.clear()
        ended: TurnEnding | None = None
        if not await self._host_started(stop):
            ended = Stopped()
        for batch in _batches(answer.tool_calls, self.tool_named) if ended is None else ():
            if isinstance(self.tool_named(batch[0].name), AgentTool):
                # Sub-agents hear the stop themselves, end at once and still report.
                await self._run_batch(batch, results, stop)
                raced: StoppedFirst | None = STOPPED if stop.is_set else None
            else:
                raced = await stop.race(self._run_batch(batch, results, stop))
            if raced is STOPPED:
                ended = Stopped()
                break
            ended = next((r.cause for r in results.values() if isinstance(r, EndTurn)), None)
            if ended is not None:
                break
        bound = self._limits().output_limit
        for call in answer.tool_calls:
            stopped = self._stopped_results.pop(call.id, None)
            self.history.append(_result_message(call, results.get(call.id) or stopped, bound))
        return ended

    def _limits(self) -> ToolLimits:
        """The tools' limits, their output bound a share of the window as well."""
        limits = self.settings.limits
        bound = self.responder.context.result_bytes(limits.output_limit)
        return limits if bound == limits.output_limit else replace(limits, output_limit=bound)

    async def _run_batch(
        self, batch: Sequence[ToolCall], results: dict[str, ToolOutcome], stop: StopSignal
    ) -> None:
        async def run_one(call: ToolCall) -> None:
            results[call.id] = await self._run_call(call, stop)

        calls = [asyncio.ensure_future(run_one(call)) for call in batch]
        try:
            await asyncio.gather(*calls)
        except BaseException:
            # A call that failed (a bug) or a stop: none of its neighbours runs on alone.
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
            raise

    async def _run_call(self, call: ToolCall, stop: StopSignal) -> ToolOutcome:
        tool = self.tool_named(call.name)
        if tool is None:
            known = ", ".join(self.tools)
            return self._refuse(call, f"unknown tool '{call.name}'; the tools are: {known}")
        parsed = parse_arguments(call.arguments, tool.spec.parameters)
        arguments = parsed.value_or(None)
        if arguments is None:
            why = f"bad arguments for {call.name}: {parsed.failure()}"
            if arguments_object(call.arguments) is None:
                # The request goes back with {} in their place, which servers accept:
                # the model still reads what it wrote, here.
                raw = call.arguments if len(call.arguments) <= 2000 else call.arguments[:2000] + "…"
                why += f". They are sent back as {{}}; what you wrote was: {raw}"
            return self._refuse(call, why)
        hooked = await self.hooks.before_tool(call.name, arguments)
        if hooked.blocked:
            return self._refuse(call, f"a PreToolUse hook refused this call: {hooked.reason}")
        summary = tool.describe(arguments)
        decision = decide_approval(
            self.settings.approval, tool.access, summary, allowed=self._allowed, tool=call.name
        )
        if isinstance(decision, Deny):  # the policy's no: no hook's yes goes past it
            return self._refuse(call, decision.why, summary)
        if isinstance(decision, Ask) and not hooked.allowed:
            diff = ""
            if isinstance(tool, PreviewsChanges):  # the person sees what they say yes to
                diff = await tool.preview(arguments, self._context(stop))
            request = ApprovalRequest(
                call.name, summary, decision.prefix, self.name, diff, decision.why, call.id
            )
            self.waiting_on_person(True)
            self.hooks.attention("permission_prompt", f"{call.name} waits for a yes: {summary}")
            try:
                reply = await self.ports.terminal.ask_approval(request)
            finally:
                self.waiting_on_person(False)
            if reply is None:
                needed = f"approval needed to run {call.name}: {summary}"
                if decision.why:
                    needed += f" ({decision.why})"
                self.emit(ToolStarted(call, summary, self.name))
                blocked = ToolEnding.BLOCKED
                self.emit(ToolFinished(call, "blocked", True, 0.0, self.name, ending=blocked))
                return EndTurn(NeedsApproval(needed), f"Not run: {needed}.")
            if reply == "no" or isinstance(reply, Declined):
                return self._refuse(call, declined_text(reply), summary)
            if reply == "always":
                self._allowed.add(decision.prefix)
        outcome = await self._execute(tool, call, arguments, summary, stop)
        if isinstance(outcome, ToolResult):
            return await self.hooks.after_tool(call.name, arguments, outcome)
        return outcome

    async def _execute(
        self,
        tool: Tool,
        call: ToolCall,
        arguments: dict[str, object],
        summary: str,
        stop: StopSignal,
    ) -> ToolOutcome:
        clock = self.ports.clock
        self.responder.doing = f"running {call.name}: {summary}"[:120]
        self.emit(ToolStarted(call, summary, self.name))
        log.debug("tool %s started: %s", call.name, summary)
        started = clock.now()
        said: list[StoppedResult] = []
        try:
            outcome = await tool.run(arguments, self._context(stop, call.id, said.append))
        except asyncio.CancelledError:  # stopped: the terminal still learns how it ended
            duration = clock.now() - started
            kept = said[-1](stop.reason) if said else None
            if kept is None:
                cut = ToolEnding.INTERRUPTED
                self.emit(ToolFinished(call, "interrupted", True, duration, self.name, ending=cut))
                raise
            # What it did until the stop is what the model reads, marked as cut short.
            self._stopped_results[call.id] = replace(kept, interrupted=True)
            self.emit(
                ToolFinished(
                    call,
                    kept.status,
                    True,
                    duration,
                    self.name,
                    preview=kept.preview,
                    ending=kept.ended,
                )
            )
            raise
        except Exception:  # a bug: the terminal learns how the call ended, the turn fails
            duration = clock.now() - started
            crashed = ToolEnding.CRASHED
            self.emit(ToolFinished(call, "crashed", True, duration, self.name, ending=crashed))
            raise
        match outcome:
            case ToolResult(status=status, is_error=is_error, diff=diff, preview=preview):
                duration = clock.now() - started
                self.emit(
                    ToolFinished(
                        call, status, is_error, duration, self.name, diff, preview, outcome.ended
                    )
                )
                log.debug("tool %s ended: %s in %.3f s", call.name, status, duration)
            case EndTurn(cause=cause):
                # It did not do its work: blocked (a sandbox, a sub-agent's approval) is
                # no success; only a question that waits for its answer is not an error.
                kind = end_turn(cause).kind
                waits = kind is OutcomeKind.WAITING
                ending = ToolEnding.WAITING if waits else ToolEnding.BLOCKED
                self.emit(ToolFinished(call, kind.value, not waits, 0.0, self.name, ending=ending))
        return outcome

    def _refuse(self, call: ToolCall, why: str, summary: str = "") -> ToolResult:
        self.emit(ToolStarted(call, summary or call.arguments[:80], self.name))
        refused = ToolEnding.REFUSED
        self.emit(ToolFinished(call, "refused", True, 0.0, self.name, ending=refused))
        return ToolResult(f"Error: {why}", is_error=True, status="refused", ending=refused)

    def _context(
        self,
        stop: StopSignal,
        call_id: str = "",
        if_stopped: Callable[[StoppedResult], None] | None = None,
    ) -> ToolContext:
        return ToolContext(
            workspace=self.settings.workspace,
            session_dir=self.settings.session_dir,
            runner=self.ports.runner,
            clock=self.ports.clock,
            limits=self._limits(),
            emit=self.emit,
            ask_question=self._ask_question,
            until_stopped=stop.wait,
            agent=self.name,
            on_person=self.waiting_on_person,
            call_id=call_id,
            ask_form=self._ask_form,
            sample=self._sample,
            ask_host=self._ask_host,
            **({"if_stopped": if_stopped} if if_stopped is not None else {}),
        )

    async def _ask_host(self, host: str) -> HostGrant:
        """A host the allowlist refused a command: under ``ask`` the person says once,
        always (for the session) or no; under any other policy, or with nobody there
        to answer, it stays refused."""
        # The network's rules load when a host is first refused, not at start-up.
        from treadle.domain.rules.network import (
            NETWORK_TOOL,
            host_grant,
            host_question,
            normal_host,
            offers_hosts,
        )

        if not offers_hosts(self.settings.approval):
            return "no"
        request = ApprovalRequest(NETWORK_TOOL, host_question(host), normal_host(host), self.name)
        self.waiting_on_person(True)
        self.hooks.attention("permission_prompt", f"the network waits for a yes: {host}")
        try:
            reply = await self.ports.terminal.ask_approval(request)
        finally:
            self.waiting_on_person(False)
        return host_grant(reply)

    async def _ask_form(self, request: FormRequest) -> FormAnswer:
        """A server's question mid-call, put to the person (declined when nobody can
        answer: the call, and the turn, go on)."""
        where = f" ({request.url})" if request.url else ""
        self.emit(Notice("mcp_question", f"MCP server {request.server} asks{where}.", self.name))
        answer = None
        terminal = self.ports.terminal
        if isinstance(terminal, AsksForms):  # an editor that shows the form whole
            self.waiting_on_person(True)
            try:
                answer = await terminal.ask_form(request)
            finally:
                self.waiting_on_person(False)
        if answer is None:
            answer = await fill_form(request, self._ask_question)
        said = f"MCP server {request.server}'s question: {answer.action}"
        self.emit(Notice("mcp_question", said + ".", self.name))
        return answer

    async def _sample(self, request: SamplingRequest) -> SamplingReply:
        """A server's request for a completion: the approval policy decides (``ask``
        asks the person), the session's model answers, and its tokens are this turn's.

        A completion is a request of the turn: it counts toward ``--max-requests``, its
        tokens toward ``--max-tokens-total`` and ``--max-cost``; once the turn has
        reached one of them, it is declined (the call, and the turn, go on to stop
        at the next request)."""
        decision = decide_sampling(self.settings.approval)
        summary = sampling_summary(request)
        if decision == "decline":
            return SamplingReply(declined=True, why="the approval policy (read-only) declines it")
        reached = self._over_limit()
        if reached is not None:
            return SamplingReply(declined=True, why=f"the turn's {reached.line}")
        if decision == "ask":
            question = ApprovalRequest(SAMPLING_TOOL, summary, "", self.name)
            self.waiting_on_person(True)
            try:
                reply = await self.ports.terminal.ask_approval(question)
            finally:
                self.waiting_on_person(False)
            if reply is None:
                return SamplingReply(declined=True, why="nobody is here to approve it")
            if reply == "no" or isinstance(reply, Declined):
                return SamplingReply(declined=True, why="the person declined it")
        self.meter.request_sent()
        answer, usage = await complete(self.ports.model, request)
        self.meter.spend(usage, self.settings.prices)
        self.add_usage(usage)
        tokens = f"{usage.input_tokens} in, {usage.output_tokens} out"
        said = f"MCP server {request.server} asked the model for a completion ({tokens})."
        self.emit(Notice("mcp_sampling", said, self.name))
        return answer

    async def _ask_question(self, question: str) -> str | None:
        self.waiting_on_person(True)
        self.hooks.attention("question", question)
        try:
            return await self.ports.terminal.ask_question(question)
        finally:
            self.waiting_on_person(False)

    def waiting_on_person(self, waiting: bool) -> None:
        """This agent, or one of its sub-agents, starts or stops waiting for the person:
        whoever watches it (``person_listener``) stops or restarts its clocks."""
        if self.person_listener is not None:
            self.person_listener(waiting)


RESULT_SLACK = 2_000
"""Bytes a result may hold beyond the output bound: the lines a tool adds around a
bounded output (how the command ended, where the rest was saved)."""


def _result_message(call: ToolCall, outcome: ToolOutcome | None, bound: int) -> Message:
    """The tool message for a call; one that never finished gets the interrupted result.

    A result far beyond the tools' output bound (a tool that ignores it) is cut to it,
    head and tail, so that no single result can outgrow the window.
    """
    match outcome:
        case ToolResult(text=text, is_error=is_error, interrupted=interrupted):
            if len(text) > bound + RESULT_SLACK:
                raw = text.encode("utf-8", "surrogatepass")
                if len(raw) > bound + RESULT_SLACK:
                    text = OutputBound.of(raw, bound).text("cut to fit the context window")
            return Message.tool(call.id, text, is_error=is_error, interrupted=interrupted)
        case EndTurn(text=text) if text:
            return Message.tool(call.id, text)
    return Message.tool(call.id, INTERRUPTED_RESULT, is_error=True, interrupted=True)


def _batches(
    calls: Sequence[ToolCall], tool_named: Callable[[str], Tool | None]
) -> list[list[ToolCall]]:
    """Group neighbouring calls that may run side by side: reads with reads, sub-agents
    with sub-agents; every other call runs alone, in order."""
    batches: list[list[ToolCall]] = []
    previous = ""
    for call in calls:
        tool = tool_named(call.name)
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


async def _shielded(started: asyncio.Future[Sequence[Notice]]) -> Sequence[Notice]:
    """The host's start, awaited without cancelling it when the wait is."""
    return await asyncio.shield(started)
