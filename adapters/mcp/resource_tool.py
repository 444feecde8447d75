"""``mcp_resource``: the MCP servers' resources, listed and read through one tool.

The model lists what the servers offer (``action: list``, of one server or all) and
reads one by its URI (``action: read``; the server found by its list when not named).
A resource is data, never an action: the tool only reads, and its result is bounded
like a command's output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from returns.result import Failure, Success

from treadle.adapters.mcp.values import ListedResource
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

if TYPE_CHECKING:
    from treadle.adapters.mcp.connection import McpConnection
    from treadle.adapters.mcp.servers import McpServers

NAME = "mcp_resource"
TIMEOUT = 30.0


class McpResourceTool:
    """Lists and reads the resources of the session's MCP servers."""

    access: Access = "read"

    def __init__(self, servers: McpServers) -> None:
        self._servers = servers
        names = [c.name for c in servers.with_resources]
        self.spec = ToolSpec(
            NAME,
            "List the resources (files, records, documents) the MCP servers offer, or read "
            f"one by its URI. Servers with resources: {', '.join(names)}.",
            {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "read"]},
                    "server": {
                        "type": "string",
                        "description": "The server (for list: all when left out; for read: "
                        "found by its list when left out).",
                    },
                    "uri": {"type": "string", "description": "The resource to read."},
                },
                "required": ["action"],
            },
        )

    def describe(self, arguments: Mapping[str, Any]) -> str:
        where = arguments.get("server") or "all servers"
        if arguments.get("action") == "read":
            return f"read {arguments.get('uri', '')} ({where})"
        return f"list resources ({where})"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        server = str(arguments.get("server") or "")
        chosen = self._servers.with_resources
        if server:
            chosen = tuple(c for c in chosen if c.name == server)
            if not chosen:
                known = ", ".join(c.name for c in self._servers.with_resources)
                return ToolResult(
                    f"Error: no MCP server {server} with resources ({known})",
                    True,
                    "unknown server",
                )
        if arguments.get("action") == "read":
            uri = str(arguments.get("uri") or "")
            if not uri:
                return ToolResult("Error: read needs the resource's uri", True, "no uri")
            return await self._read(uri, chosen, context)
        return await self._list(chosen)

    async def _list(self, servers: tuple[McpConnection, ...]) -> ToolResult:
        lines: list[str] = []
        problems = 0
        for connection in servers:
            match await connection.resources(TIMEOUT):
                case Success(found):
                    lines.append(f"{connection.name}: {len(found)} resources")
                    lines += [_line(resource) for resource in found]
                case Failure(failure):
                    problems += 1
                    lines.append(f"{connection.name}: cannot list: {failure.detail}")
        return ToolResult("\n".join(lines), problems == len(servers), f"{len(servers)} servers")

    async def _read(
        self, uri: str, servers: tuple[McpConnection, ...], context: ToolContext
    ) -> ToolResult:
        connection = servers[0] if len(servers) == 1 else await _owner(uri, servers)
        if connection is None:
            return ToolResult(
                f"Error: no server lists {uri}; name the server (list shows what each has)",
                True,
                "not found",
            )
        match await connection.read_resource(uri, TIMEOUT):
            case Success(answer):
                bound = OutputBound(context.limits.output_limit)
                bound.feed(answer.text.encode("utf-8", "replace"))
                return ToolResult(bound.text(""), False, f"{connection.name} · read")
            case Failure(failure):
                return ToolResult(f"Error: {failure.detail}", True, "read failed")
        raise AssertionError("unreachable")


async def _owner(uri: str, servers: tuple[McpConnection, ...]) -> McpConnection | None:
    """The server whose list names ``uri`` (or a template it fits the start of)."""
    for connection in servers:
        match await connection.resources(TIMEOUT):
            case Success(found):
                for resource in found:
                    start = resource.uri.split("{", 1)[0]
                    if resource.uri == uri or (resource.template and uri.startswith(start)):
                        return connection
    return None


def _line(resource: ListedResource) -> str:
    kind = " (template)" if resource.template else ""
    about = f" — {resource.description}" if resource.description else ""
    mime = f" [{resource.mime_type}]" if resource.mime_type else ""
    return f"  {resource.uri}{kind}  {resource.name}{mime}{about}"
