"""An MCP server's tool, as one of treadle's: it implements the Tool port.

The model calls it as ``mcp__<server>__<tool>`` with the server's input schema (made
acceptable to the providers, see :mod:`.schema`: a property key they refuse is
offered under another name, and the call goes to the server under its own). It
counts as writing — asked for under ``ask``, refused under ``read-only`` — unless
the server marks it read-only or the configuration's ``mcp_allowed`` names it. Its
result is bounded like a command's output, and a result the server flags with
``isError`` is a failed call.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from returns.result import Failure, Result, Success

from treadle.adapters.mcp.schema import described, provider_schema
from treadle.adapters.mcp.values import ListedTool, McpAnswer, McpCallFailure
from treadle.adapters.process.spill import OutputSpill
from treadle.adapters.secrets.redact import Redactor
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

SUMMARY_LENGTH = 200
_FAILURE_STATUS = {
    "deadline": "deadline",
    "server_gone": "server gone",
    "not_running": "not running",
    "protocol": "protocol error",
}


class McpCaller(Protocol):
    """Where a tool's calls go: its server's connection."""

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        context: ToolContext | None = None,
    ) -> Result[McpAnswer, McpCallFailure]: ...


def is_allowed(name: str, allowed: Collection[str]) -> bool:
    """``mcp_allowed`` names tools (``mcp__time__get_current_time``) or a server's
    tools with a pattern (``mcp__time__*``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)


class McpTool:
    """``listed`` is the tool as its server lists it; ``name`` what the model calls it."""

    def __init__(
        self,
        server: str,
        listed: ListedTool,
        name: str,
        caller: McpCaller,
        *,
        timeout: float | None = None,
        allowed: bool = False,
        redactor: Redactor | None = None,
    ) -> None:
        offered = provider_schema(listed.input_schema)
        about = listed.description or f"The {listed.name} tool"
        description = described(f"{about} (MCP server {server})", offered.dropped)
        self.spec = ToolSpec(name, description, offered.schema)
        self.access: Access = "read" if listed.read_only or allowed else "write"
        self.server = server
        self.listed = listed
        self._offered = offered
        self._caller = caller
        self._timeout = timeout
        self._redactor = redactor

    def describe(self, arguments: Mapping[str, Any]) -> str:
        """The call as the server gets it (its tool's name, its arguments' names)."""
        server = self._offered.server_arguments(arguments)
        shown = json.dumps(server, ensure_ascii=False) if server else ""
        summary = f"{self.server}: {self.listed.name} {shown}".rstrip()
        return summary if len(summary) <= SUMMARY_LENGTH else summary[: SUMMARY_LENGTH - 1] + "…"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        timeout = self._timeout or context.limits.default_timeout
        started = context.clock.now()
        server = self._offered.server_arguments(arguments)
        outcome = await self._caller.call(self.listed.name, server, timeout, context)
        elapsed = context.clock.now() - started
        match outcome:
            case Success(McpAnswer(text=text, is_error=is_error)):
                bounded, cut = self._bounded(text, context)
                status = f"{'tool error' if is_error else 'ok'} · {elapsed:.2f} s"
                if is_error:
                    bounded = f"The tool reported an error:\n{bounded}"
                return ToolResult(bounded, is_error, status + (" · output cut" if cut else ""))
            case Failure(McpCallFailure(kind=kind, detail=detail)):
                status = _FAILURE_STATUS[kind]
                if kind == "deadline":
                    status = f"deadline {timeout:g} s"
                return ToolResult(f"Error: {detail}", True, status)
        raise AssertionError("unreachable")

    def _bounded(self, text: str, context: ToolContext) -> tuple[str, bool]:
        """Head and tail within the output limit; the whole of it saved when cut."""
        data = text.encode("utf-8", "replace")
        bound = OutputBound(context.limits.output_limit)
        spill = (
            OutputSpill(context.session_dir, redactor=self._redactor)
            if context.session_dir
            else None
        )
        if spill is not None:
            spill.take(data, bound)
        bound.feed(data)
        if spill is not None:
            spill.close()
        return bound.text(spill.note() if spill is not None else ""), bound.truncated
