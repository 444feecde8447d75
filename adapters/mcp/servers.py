"""The session's MCP servers: started together when the session starts, their tools
offered to the model, stopped together at its end.

The SDK takes half a second to import, so it is imported only when a server is
enabled, and off the event loop. A server that fails to start is reported once, as
a :class:`~treadle.domain.values.events.Notice`; its tools are absent and the session
goes on. One that fails later is reported once too; its tools then fail. A tool its
server lists malformed is offered without arguments or left out, and said so.

Example::

    servers = McpServers(configs, workspace=".", log_dir=session_dir)
    await servers.start(notify=terminal.show)
    tools = servers.tools()          # McpTool, one per tool of each started server
    ...
    await servers.close()
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.schema import tool_names
from treadle.adapters.mcp.tool import McpTool, is_allowed
from treadle.adapters.mcp.values import ListedTool
from treadle.adapters.redact import Redactor
from treadle.domain.values.events import Notice, TurnEvent
from treadle.ports.tools import Tool

if TYPE_CHECKING:
    from treadle.adapters.mcp.connection import McpConnection

Notify = Callable[[TurnEvent], None]
CONNECTION_MODULE = "treadle.adapters.mcp.connection"
"""The module that imports the SDK, imported when a server starts."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """How one configured server is doing, for ``treadle mcp``."""

    config: McpServerConfig
    state: Literal["disabled", "started", "failed", "stopped"]
    detail: str
    tools: tuple[McpTool, ...] = ()


class McpServers:
    """The configured servers; ``allowed`` is ``mcp_allowed``, ``passthrough_env`` the
    secret-looking variables commands (and so servers) may see."""

    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        *,
        workspace: str,
        log_dir: str = "",
        passthrough_env: Collection[str] = (),
        allowed: Collection[str] = (),
        redactor: Redactor | None = None,
        grace: float = 1.0,
        probe_timeout: float = 2.0,
    ) -> None:
        self.configs = tuple(configs)
        self._workspace = workspace
        self._log_dir = log_dir
        self._passthrough = tuple(passthrough_env)
        self._allowed = tuple(allowed)
        self._redactor = redactor
        self._grace = grace
        self._probe_timeout = probe_timeout
        self._connections: dict[str, McpConnection] = {}
        self._tools: dict[str, tuple[McpTool, ...]] = {}
        self._unstarted: dict[str, str] = {}
        self._started = False
        self._notify: Notify = lambda event: None

    @property
    def enabled(self) -> tuple[McpServerConfig, ...]:
        return tuple(config for config in self.configs if config.enabled)

    async def start(self, notify: Notify | None = None) -> None:
        """Start every enabled server at once; ``notify`` hears of each that fails."""
        if self._started:
            return
        self._started = True
        if notify is not None:
            self._notify = notify
        if not self.enabled:
            return  # no server: the SDK is never imported
        try:
            module = await asyncio.to_thread(importlib.import_module, CONNECTION_MODULE)
        except ImportError as error:  # the SDK is not installed, or broken
            for config in self.enabled:
                self._failed(config.name, f"the MCP SDK cannot be loaded ({error})")
            return
        for config in self.enabled:
            self._connections[config.name] = module.McpConnection(
                config,
                workspace=self._workspace,
                passthrough=self._passthrough,
                log_path=self._log_path(config),
                grace=self._grace,
                probe_timeout=self._probe_timeout,
                on_failure=lambda why, name=config.name: self._stopped(name, why),
            )
        await asyncio.gather(*(connection.start() for connection in self._connections.values()))
        listed: dict[str, tuple[ListedTool, ...]] = {}
        for name, connection in self._connections.items():  # in the configured order
            if connection.state != "ready":
                self._failed(name, connection.error)
                continue
            listed[name] = connection.tools
            for note in connection.notes:
                self._notify(Notice("mcp_tool_list_repaired", f"MCP server {name}: {note}."))
        names = tool_names((server, tool.name) for server in listed for tool in listed[server])
        for server, tools in listed.items():
            connection = self._connections[server]
            self._tools[server] = tuple(
                self._tool(connection, tool, names[server, tool.name]) for tool in tools
            )

    def tools(self) -> list[Tool]:
        """Every tool of every server that started, in the configured order."""
        if self.enabled and not self._started:
            raise RuntimeError("the MCP servers must be started before their tools are listed")
        return [tool for tools in self._tools.values() for tool in tools]

    def statuses(self) -> list[ServerStatus]:
        """One line of news per configured server."""
        statuses = []
        for config in self.configs:
            connection = self._connections.get(config.name)
            if not config.enabled:
                statuses.append(ServerStatus(config, "disabled", "enabled = false"))
            elif connection is None and config.name in self._unstarted:
                statuses.append(ServerStatus(config, "failed", self._unstarted[config.name]))
            elif connection is None:
                statuses.append(ServerStatus(config, "stopped", "not started"))
            elif connection.state == "failed":
                statuses.append(ServerStatus(config, "failed", connection.error))
            else:
                detail = f"{connection.server_info}, MCP {connection.protocol_version}"
                detail += f", in {connection.startup_seconds:.2f} s"
                detail += "".join(f"; {note}" for note in connection.notes)
                statuses.append(
                    ServerStatus(config, "started", detail, self._tools.get(config.name, ()))
                )
        return statuses

    async def close(self) -> None:
        """Stop every server and all they started."""
        await asyncio.gather(*(connection.close() for connection in self._connections.values()))

    def kill_now(self) -> None:
        """SIGKILL whatever is still running, without waiting (a last resort)."""
        for connection in self._connections.values():
            connection.kill_now()

    def _tool(self, connection: McpConnection, listed: ListedTool, name: str) -> McpTool:
        return McpTool(
            connection.name,
            listed,
            name,
            connection,
            timeout=connection.config.tool_timeout,
            allowed=is_allowed(name, self._allowed),
            redactor=self._redactor,
        )

    def _failed(self, name: str, why: str) -> None:
        self._unstarted[name] = why
        self._notify(
            Notice(
                "mcp_server_failed",
                f"MCP server {name} did not start: {why}. Its tools are not available.",
            )
        )

    def _stopped(self, name: str, why: str) -> None:
        self._notify(
            Notice("mcp_server_stopped", f"MCP server {name} stopped: {why}. Its tools now fail.")
        )

    def _log_path(self, config: McpServerConfig) -> str:
        """Where the server's stderr goes: a file in the session's folder."""
        if not self._log_dir:
            return os.devnull
        os.makedirs(self._log_dir, exist_ok=True)
        return os.path.join(self._log_dir, f"mcp-{config.name}.log")
