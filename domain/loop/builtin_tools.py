"""The tools that need nothing but the ports: bash, update_plan and ask."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from returns.result import Failure, Success

from treadle.domain.loop.background import NO_DEADLINE, BackgroundProcesses
from treadle.domain.rules.background import started_text
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.rules.output_preview import OutputWatch
from treadle.domain.values.events import PlanStep, PlanUpdated, ToolOutput
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import NeedsAnswer, SandboxUnavailable
from treadle.domain.values.process import ProcessResult, ProcessSpec
from treadle.domain.values.tools import Access, EndTurn, ToolEnding, ToolOutcome, ToolResult
from treadle.ports.process import GrantsHosts
from treadle.ports.tools import ToolContext


class BashTool:
    """Runs one shell command in the workspace, with a deadline and an output bound;
    with ``background``, starts it in ``processes`` and returns at once (issue 27)."""

    spec = ToolSpec(
        name="bash",
        description=(
            "Run a shell command in the workspace with bash. stdin is closed and nothing "
            "can prompt; long output keeps its head and tail. Use `timeout` (seconds) for "
            "commands that may take long. Anything the command leaves running in the "
            "background is stopped when it ends. With `background` (a server, a watcher) "
            "it keeps running, and the call returns its id at once."
        ),
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run."},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Deadline in seconds (capped by configuration).",
                },
                "background": {"type": "boolean"},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    )
    access: Access = "execute"

    def __init__(self, processes: BackgroundProcesses | None = None) -> None:
        self.processes = processes if processes is not None else BackgroundProcesses()

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("command", ""))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        limits = context.limits
        if arguments.get("background"):
            return self._in_background(arguments, context)
        timeout = min(float(arguments.get("timeout", limits.default_timeout)), limits.max_timeout)
        live = LiveOutput(context, limits.output_limit)
        spec = ProcessSpec(
            command=str(arguments["command"]),
            cwd=context.workspace,
            timeout=timeout,
            output_limit=limits.output_limit,
            spill_dir=context.session_dir or None,
            on_output=live.take,
        )
        started = context.clock.now()
        context.if_stopped(lambda reason: live.stopped(reason, context.clock.now() - started))
        try:
            ran = await context.runner.run(spec)
        finally:
            live.close()
        match ran:
            case Success(result):
                granted = await grant_hosts(result.refused_hosts, context)
                return ToolResult(
                    "\n".join((describe_process(result, timeout), *granted)),
                    is_error=result.exit_code != 0,
                    status=process_status(result, timeout),
                    preview=live.watch.preview(),
                )
            case Failure(error) if error.blocked:  # no one here can make it possible
                return EndTurn(SandboxUnavailable(error.detail), f"Not run: {error.detail}.")
            case Failure(error):
                return ToolResult(
                    f"could not start the command: {error.detail}", True, "not started"
                )
        raise AssertionError("unreachable")

    def _in_background(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        limits = context.limits
        asked = arguments.get("timeout")
        spec = ProcessSpec(
            command=str(arguments["command"]),
            cwd=context.workspace,
            timeout=min(float(asked), limits.max_timeout) if asked else NO_DEADLINE,
            output_limit=limits.output_limit,
        )
        started = self.processes.start(
            spec,
            context.runner,
            context.clock.now,
            limit=limits.background_limit,
            emit=context.emit,
        )
        if isinstance(started, str):
            return ToolResult(f"Not started: {started}.", True, "not started")
        return ToolResult(started_text(started), status=f"background {started.id}")


async def grant_hosts(hosts: Sequence[str], context: ToolContext) -> tuple[str, ...]:
    """Each host the allowlist refused the command, put to the approval policy: what
    it says yes to (once, or for the session) the runner lets through from the next
    connection on, and a line says so; the refused connection itself stays refused."""
    runner = context.runner
    if not hosts or not isinstance(runner, GrantsHosts):
        return ()
    from treadle.domain.rules.network import grant_line  # not at start-up

    lines: list[str] = []
    for host in hosts:
        grant = await context.ask_host(host)
        if grant != "no":
            runner.allow_host(host, grant)
            lines.append(grant_line(host, grant))
    return tuple(lines)


OUTPUT_INTERVAL = 0.1
"""A running command's last lines are shown at most this often (seconds): a command
that prints megabytes a second sends a few events, not one per read."""

STOP_REASONS = {
    "interrupted": "the user interrupted the turn",
    "deadline": "the agent's deadline passed",
}


class LiveOutput:
    """A running command's output as it arrives: its last lines shown on the way (a
    :class:`ToolOutput` once output has waited :data:`OUTPUT_INTERVAL`), and what
    the model reads should a stop end the command (head and tail, bounded)."""

    def __init__(self, context: ToolContext, limit: int) -> None:
        self.watch = OutputWatch()
        self.bound = OutputBound(limit)
        self._context = context
        self._shown: tuple[str, ...] = ()
        self._showing: asyncio.Future[None] | None = None

    def take(self, chunk: bytes) -> None:
        """A piece of output, as read: kept, and shown soon (never at once, never twice
        between two looks)."""
        self.watch.feed(chunk)
        self.bound.feed(chunk)
        if self._showing is None:
            self._showing = asyncio.ensure_future(self._show_soon())

    async def _show_soon(self) -> None:
        await self._context.clock.sleep(OUTPUT_INTERVAL)
        self._showing = None
        lines = self.watch.live_lines()
        if lines != self._shown:
            self._shown = lines
            context = self._context
            context.emit(ToolOutput(context.call_id, lines, context.agent))

    def close(self) -> None:
        """The command ended: nothing more is shown live (its preview says the rest)."""
        if self._showing is not None:
            self._showing.cancel()
            self._showing = None

    def stopped(self, reason: str, elapsed: float) -> ToolResult:
        """What the model reads of a command a stop ended: why, and what it printed."""
        why = STOP_REASONS.get(reason, f"the turn was stopped ({reason or 'stopped'})")
        lines = [f"The command was stopped before it ended: {why}, after {elapsed:.2f} s."]
        bound = self.bound
        if bound.truncated:
            lines.append(f"Output was cut: {bound.omitted} bytes left out.")
        lines.append(
            f"What it printed until then:\n{bound.text()}" if bound.total else "(no output)"
        )
        preview = self.watch.preview()
        cut = ToolEnding.INTERRUPTED
        return ToolResult("\n".join(lines), True, "interrupted", preview=preview, ending=cut)


def process_status(result: ProcessResult, timeout: float) -> str:
    """The short status shown on the terminal: ``exit 0 · 0.12 s``, ``deadline 10 s``…"""
    if result.timed_out:
        ending = f"deadline {timeout:g} s"
    elif result.exit_code is None:
        ending = f"signal {result.signal}"
    else:
        ending = f"exit {result.exit_code}"
    parts = [ending, f"{result.duration:.2f} s"]
    if result.truncated:
        parts.append("output cut")
    return " · ".join(parts)


def describe_process(result: ProcessResult, timeout: float) -> str:
    """What the model reads: how the command ended, then its (bounded) output."""
    if result.timed_out:
        head = f"The command hit its deadline of {timeout:g} s and was stopped."
    elif result.exit_code is None:
        head = f"The command was killed by signal {result.signal}."
    else:
        head = f"Exit code {result.exit_code}."
    lines = [f"{head} Duration {result.duration:.2f} s."]
    if result.truncated:
        where = (
            f" The full output is in {result.full_output_path}." if result.full_output_path else ""
        )
        lines.append(f"Output was cut: {result.omitted_bytes} bytes left out.{where}")
    lines.append(result.output if result.output else "(no output)")
    return "\n".join(lines)


class UpdatePlanTool:
    """Publishes the plan and its progress; the terminal shows it."""

    spec = ToolSpec(
        name="update_plan",
        description=(
            "Publish or update your plan for this task: every step with its status "
            "(pending, in_progress, completed). Use it for work of more than a few steps."
        ),
        parameters={
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string"},
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "completed"],
                            },
                        },
                        "required": ["step", "status"],
                        "additionalProperties": False,
                    },
                },
                "explanation": {"type": "string"},
            },
            "required": ["steps"],
            "additionalProperties": False,
        },
    )
    access: Access = "none"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return f"{len(arguments.get('steps', []))} steps"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        steps = tuple(PlanStep(s["step"], s["status"]) for s in arguments["steps"])
        context.emit(PlanUpdated(steps, str(arguments.get("explanation", "")), context.agent))
        done = sum(step.status == "completed" for step in steps)
        return ToolResult(f"Plan updated: {done} of {len(steps)} steps completed.", status="plan")


class AskTool:
    """Asks the person a question; with nobody present the turn waits for input."""

    spec = ToolSpec(
        name="ask",
        description=(
            "Ask the user a question when you cannot go on without their answer "
            "(a decision, a missing permission or credential)."
        ),
        parameters={
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
            "additionalProperties": False,
        },
    )
    access: Access = "none"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("question", ""))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        question = str(arguments["question"])
        answer = await context.ask_question(question)
        if answer is None:
            return EndTurn(
                NeedsAnswer(question),
                "No answer yet: the user will answer in their next message.",
            )
        return ToolResult(f"The user answered: {answer}", status="answered")
