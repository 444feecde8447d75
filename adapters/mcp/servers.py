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

from returns.result import Failure, Success

from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.schema import tool_names
from treadle.adapters.mcp.tool import McpTool, is_allowed
from treadle.adapters.mcp.values import ListedPrompt, ListedTool
from treadle.adapters.secrets.redact import Redactor
from treadle.domain.rules.mcp_prompts import prompt_arguments
from treadle.domain.rules.network import NetworkPolicy, server_network
from treadle.domain.values.events import Notice, TurnEvent
from treadle.ports.tools import Tool

if TYPE_CHECKING:
    from treadle.adapters.mcp.connection import McpConnection

Notify = Callable[[TurnEvent], None]
CONNECTION_MODULE = "treadle.adapters.mcp.connection"
"""The module that imports the SDK, imported when a server starts."""


@dataclass(frozen=True, slots=True)
class PromptCommand:
    """A server's prompt as a slash command: ``/mcp__server__prompt arguments``."""

    name: str
    server: str
    prompt: ListedPrompt

    @property
    def summary(self) -> str:
        words = " ".join(a.name if a.required else f"[{a.name}]" for a in self.prompt.arguments)
        about = self.prompt.description.strip().splitlines()[0] if self.prompt.description else ""
        return " ".join(part for part in (words, "—" if about else "", about) if part)


class PromptProblem(ValueError):
    """A prompt's command that cannot be expanded: unknown, short of an argument, or
    refused by its server. Its message is the one line to show."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """How one configured server is doing, for ``treadle mcp``."""

    config: McpServerConfig
    state: Literal["disabled", "started", "failed", "stopped"]
    detail: str
    tools: tuple[McpTool, ...] = ()
    prompts: tuple[str, ...] = ()
    """Its prompts, as the slash commands that expand them."""
    resources: bool = False


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
        auth_dir: str = "",
        network: NetworkPolicy | None = None,
    ) -> None:
        self.configs = tuple(configs)
        self._network = network if network is not None else NetworkPolicy()
        """The session's ``sandbox_network``: a stdio server's own ``network`` goes over it."""
        self.auth_dir = auth_dir
        """Where the OAuth tokens of servers that sign in are kept (``mcp-auth``)."""
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
                network=server_network(self._network, config.network),
                grace=self._grace,
                probe_timeout=self._probe_timeout,
                on_failure=lambda why, name=config.name: self._stopped(name, why),
                on_change=self._changed,
                auth_dir=self.auth_dir,
                on_tokens=self._redactor.add if self._redactor is not None else None,
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
        self._name_tools(listed)

    def _name_tools(self, listed: dict[str, tuple[ListedTool, ...]]) -> None:
        """The servers' tools under the names the model calls them by (a rename keeps
        clear of every other server's names, so all are named together)."""
        names = tool_names((server, tool.name) for server in listed for tool in listed[server])
        self._tools = {
            server: tuple(
                self._tool(self._connections[server], tool, names[server, tool.name])
                for tool in tools
            )
            for server, tools in listed.items()
        }

    def _changed(self, server: str, what: str) -> None:
        """A server said its tools, prompts or resources changed (and, for its tools
        and prompts, they were listed again): the next request offers what it has now."""
        if what == "tools":
            self._name_tools(
                {
                    name: connection.tools
                    for name, connection in self._connections.items()
                    if name in self._tools
                }
            )
            count = len(self._tools.get(server, ()))
            said = f"MCP server {server} changed its tools; {count} are offered now."
        else:
            said = f"MCP server {server} changed its {what}."
        self._notify(Notice("mcp_tools_changed", said))

    def tools(self) -> list[Tool]:
        """Every tool of every server that started, in the configured order."""
        if self.enabled and not self._started:
            raise RuntimeError("the MCP servers must be started before their tools are listed")
        return [tool for tools in self._tools.values() for tool in tools]

    def catalog_tools(self) -> list[Tool]:
        """The servers' tools as they are now (the ToolCatalog port): a server that
        changed its list mid-session offers its new list from the next request on.
        None before the servers start (a replay never starts them)."""
        return [tool for tools in self._tools.values() for tool in tools]

    def session_tools(self) -> list[Tool]:
        """The tools treadle adds for its servers, offered as built-in ones are:
        ``mcp_resource`` when a server offers resources."""
        from treadle.adapters.mcp.resource_tool import McpResourceTool

        return [McpResourceTool(self)] if self.with_resources else []

    @property
    def with_resources(self) -> tuple[McpConnection, ...]:
        """The started servers that offer resources, in the configured order."""
        return tuple(
            connection
            for name, connection in self._connections.items()
            if name in self._tools and connection.has_resources
        )

    def connection(self, name: str) -> McpConnection | None:
        connection = self._connections.get(name)
        return connection if connection is not None and name in self._tools else None

    def prompt_commands(self) -> list[PromptCommand]:
        """Every prompt of every started server, as the slash command that expands it."""
        return [
            PromptCommand(f"mcp__{name}__{prompt.name}", name, prompt)
            for name, connection in self._connections.items()
            if name in self._tools
            for prompt in connection.prompts
        ]

    async def expand_prompt(self, command: str, text: str, timeout: float = 30.0) -> str:
        """The task a prompt's command gives with its arguments (``key=value`` words, or
        words in the prompt's order); PromptProblem says what is wrong in one line."""
        found = next((c for c in self.prompt_commands() if c.name == command), None)
        if found is None:
            known = ", ".join(c.name for c in self.prompt_commands()) or "none"
            raise PromptProblem(f"no MCP prompt {command}; the prompts are: {known}")
        arguments, why = prompt_arguments(
            [(a.name, a.required) for a in found.prompt.arguments], text
        )
        if why:
            raise PromptProblem(f"{command}: {why}")
        connection = self._connections[found.server]
        match await connection.get_prompt(found.prompt.name, arguments, timeout):
            case Success(expanded):
                return str(expanded)
            case Failure(failure):
                raise PromptProblem(f"{command}: {failure.detail}")
        raise AssertionError("unreachable")

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
                prompts = tuple(
                    f"/{c.name}" for c in self.prompt_commands() if c.server == config.name
                )
                tools = self._tools.get(config.name, ())
                statuses.append(
                    ServerStatus(
                        config, "started", detail, tools, prompts, connection.has_resources
                    )
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
