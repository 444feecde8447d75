"""What a ``[mcp_servers.NAME]`` table says: one MCP server, over stdio or streamable HTTP.

Example (a ``.treadle.toml``)::

    [mcp_servers.time]
    command = "mcp-server-time"
    args = ["--local-timezone", "UTC"]

    [mcp_servers.docs]
    url = "https://docs.example.com/mcp"
    bearer_token_env = "DOCS_MCP_TOKEN"

Tables are checked key by key where they are read (:func:`check_table`, so that an
error names the file), merged across the configuration's layers, and then checked
whole (:func:`server_config`). Nothing here imports the SDK.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

TABLE_KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "bearer_token_env",
    "oauth",
    "client_id",
    "enabled",
    "startup_timeout",
    "tool_timeout",
    "network",
)
STDIO_ONLY = ("args", "env", "cwd", "network")
SERVER_NETWORKS = ("on", "off", "allowlist")
"""A stdio server's own ``network``, over the session's ``sandbox_network``."""
HTTP_ONLY = ("headers", "bearer_token_env", "oauth", "client_id")
DEFAULT_STARTUP_TIMEOUT = 10.0

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class TableProblem(ValueError):
    """What is wrong with a table; ``key`` is the key at fault ("" for the table)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}" if key else problem)
        self.key = key
        self.problem = problem


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One configured server. ``tool_timeout`` None: the configured ``tool_timeout``."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    bearer_token_env: str = ""
    oauth: bool = False
    """Sign in with OAuth (``treadle mcp login NAME``) instead of a static token."""
    client_id: str = ""
    """The OAuth client to sign in as, for a server that does not register clients."""
    enabled: bool = True
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    tool_timeout: float | None = None
    network: str = ""
    """Its own ``sandbox_network`` (on, off, allowlist); "": the session's."""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"

    @property
    def where(self) -> str:
        """How it is reached, in one line: the command line or the address."""
        if self.command:
            return " ".join([self.command, *self.args])
        return self.url


def check_name(name: str) -> None:
    """A server's name becomes part of its tools' names: letters, digits, _ and -."""
    if not _SERVER_NAME.match(name):
        raise TableProblem("", "a server's name may only hold letters, digits, _ and -")


def check_table(name: str, table: object) -> dict[str, Any]:
    """The table's values, each checked for its type; TableProblem names the key."""
    check_name(name)
    if not isinstance(table, Mapping):
        raise TableProblem("", f"must be a table ([mcp_servers.{name}]), not {_shown(table)}")
    checked: dict[str, Any] = {}
    for key, value in table.items():
        if key not in TABLE_KEYS:
            raise TableProblem(key, f"unknown key (the keys: {', '.join(TABLE_KEYS)})")
        checked[key] = _check_value(key, value)
    return checked


def server_config(name: str, table: Mapping[str, Any]) -> McpServerConfig:
    """The server a merged table describes, or TableProblem when its keys disagree."""
    has_command, has_url = bool(table.get("command")), bool(table.get("url"))
    if has_command == has_url:
        raise TableProblem(
            "",
            "has both command and url: a server is either a command (stdio) or a url"
            if has_command
            else "needs command (a program speaking MCP on stdio) or url (streamable HTTP)",
        )
    stdio = "a server started by a command (stdio)"
    http = "a server at a url (streamable HTTP)"
    for key in STDIO_ONLY if has_url else HTTP_ONLY:
        if key in table:
            mine, other = (stdio, http) if has_url else (http, stdio)
            raise TableProblem(key, f"only applies to {mine}, not to {other}")
    return McpServerConfig(name=name, **table)


def _check_value(key: str, value: object) -> Any:
    match key:
        case "command" | "cwd":
            if not isinstance(value, str) or not value.strip():
                raise TableProblem(key, f"must be a non-empty string, not {_shown(value)}")
            return value
        case "url":
            if not isinstance(value, str) or not re.match(r"https?://.", value):
                raise TableProblem(
                    key, f"must be an http:// or https:// address, not {_shown(value)}"
                )
            return value
        case "args":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise TableProblem(key, f"must be a list of strings, not {_shown(value)}")
            return tuple(value)
        case "env" | "headers":
            if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                raise TableProblem(key, f"must be a table of strings, not {_shown(value)}")
            if key == "env":
                for name in value:
                    if not _ENV_NAME.match(name):
                        raise TableProblem(
                            key, f"{_shown(name)} is not an environment variable name"
                        )
            return dict(value)
        case "bearer_token_env":
            if not isinstance(value, str) or not _ENV_NAME.match(value):
                raise TableProblem(
                    key, f"must be an environment variable name, not {_shown(value)}"
                )
            return value
        case "client_id":
            if not isinstance(value, str) or not value.strip():
                raise TableProblem(key, f"must be a non-empty string, not {_shown(value)}")
            return value
        case "network":
            if value not in SERVER_NETWORKS:
                modes = ", ".join(SERVER_NETWORKS)
                raise TableProblem(key, f"must be one of {modes}, not {_shown(value)}")
            return value
        case "enabled" | "oauth":
            if not isinstance(value, bool):
                raise TableProblem(key, f"must be true or false, not {_shown(value)}")
            return value
    # startup_timeout, tool_timeout: seconds
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TableProblem(key, f"must be a number of seconds, not {_shown(value)}")
    if value <= 0:
        raise TableProblem(key, f"must be more than 0, not {_shown(value)}")
    return float(value)


def _shown(value: object) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "a table"
    return repr(value)


_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
_SECRET_NAME = re.compile("KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def secret_values(config: McpServerConfig) -> list[str]:
    """Values in the server's table that are secrets: env variables and headers whose
    names look secret, and authorization headers. Redaction keeps them off the screen."""
    values = [value for name, value in config.env.items() if _SECRET_NAME.search(name)]
    for name, value in config.headers.items():
        if name.lower() in _SECRET_HEADERS or _SECRET_NAME.search(name):
            values.append(value.split(" ", 1)[1] if value.lower().startswith("bearer ") else value)
    return values


def stored_tokens(auth_dir: str, name: str) -> list[str]:
    """The OAuth tokens ``treadle mcp login`` keeps for a server (``mcp-auth/NAME.json``),
    for redaction: read as plain JSON, without the SDK."""
    import json
    import os

    try:
        with open(os.path.join(auth_dir, f"{name}.json"), encoding="utf-8") as stored:
            tokens = json.load(stored).get("tokens", {})
    except (OSError, ValueError, AttributeError):
        return []
    if not isinstance(tokens, dict):
        return []
    return [str(tokens[key]) for key in ("access_token", "refresh_token") if tokens.get(key)]
