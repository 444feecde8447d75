"""The tools that need nothing but the ports: bash, update_plan and ask."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from returns.result import Failure, Success

from treadle.domain.values.events import PlanStep, PlanUpdated
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import NeedsAnswer, SandboxUnavailable
from treadle.domain.values.process import ProcessResult, ProcessSpec
from treadle.domain.values.tools import Access, EndTurn, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext


class BashTool:
    """Runs one shell command in the workspace, with a deadline and an output bound."""

    spec = ToolSpec(
        name="bash",
        description=(
            "Run a shell command in the workspace with bash. stdin is closed and nothing "
            "can prompt; long output keeps its head and tail. Use `timeout` (seconds) for "
            "commands that may take long. Anything the command leaves running in the "
            "background is stopped when it ends."
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
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    )
    access: Access = "execute"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("command", ""))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        limits = context.limits
        timeout = min(float(arguments.get("timeout", limits.default_timeout)), limits.max_timeout)
        spec = ProcessSpec(
            command=str(arguments["command"]),
            cwd=context.workspace,
            timeout=timeout,
            output_limit=limits.output_limit,
            spill_dir=context.session_dir or None,
        )
        match await context.runner.run(spec):
            case Success(result):
                return ToolResult(
                    describe_process(result, timeout),
                    is_error=result.exit_code != 0,
                    status=process_status(result, timeout),
                )
            case Failure(error) if error.blocked:  # no one here can make it possible
                return EndTurn(SandboxUnavailable(error.detail), f"Not run: {error.detail}.")
            case Failure(error):
                return ToolResult(
                    f"could not start the command: {error.detail}", True, "not started"
                )
        raise AssertionError("unreachable")


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
