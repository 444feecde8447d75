"""The effective configuration: every key, its value and where the value came from.

Layers, later ones winning: the defaults, the user file (``config.toml`` in the
platform's config folder, or ``$TREADLE_CONFIG_DIR``), the project file
(``.treadle.toml`` in the workspace), ``TREADLE_*`` environment variables, then flags.
A resumed session's model, server and folder sit just below the flags. A project file
sets what could send the key elsewhere or lower safety only in a folder the user has
trusted (``treadle trust``); elsewhere those values are held back and said so.

Example::

    app = load_config(flags={"model": "demo"}, environ=os.environ)
    app.origins["model"]   # 'flag --model'

An unknown key or a bad value is a :class:`ConfigError` naming the file (or variable,
or flag) and the key; treadle does not start on a broken configuration.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from treadle.domain.rules.truncation import MIN_THINKING_BUDGET
from treadle.domain.values.prices import Prices
from treadle.domain.values.text import well_formed
from treadle.entrypoints.paths import (
    PATH_VARIABLES,
    project_config_path,
    trusted_folders_path,
    user_config_path,
)
from treadle.entrypoints.providers import HTTP_PROVIDERS, USAGES, ModelNotConfigured, resolve

if TYPE_CHECKING:
    from treadle.adapters.mcp.config import McpServerConfig, TableProblem

DEFAULT_MAX_TOKENS = 8192
"""The output budget when ``max_tokens`` is not set and the window is not known."""
ENV_PREFIX = "TREADLE_"
DEFAULT = "default"
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
PRICE_KINDS = ("input", "output", "cache_read", "cache_write")


class ConfigError(Exception):
    """A configuration that cannot be used; the message names where and which key."""


USAGE_ERROR = 2
"""The exit code of a command line or a configuration that cannot be used (a turn's
own codes are the outcomes'; 3, blocked, stays for a key the server rejects)."""


@dataclass(frozen=True, slots=True)
class AppConfig:
    """Everything configurable. ``approval`` None means: ask in a terminal, auto headless."""

    model: str = ""
    base_url: str = ""
    key_env: str = ""
    max_tokens: int | None = None  # None: a quarter of the window, at most 8192
    token_growth: float = 2.0
    max_tokens_cap: int = 32768
    continuations: int = 3
    tool_timeout: float = 120.0
    tool_timeout_max: float = 600.0
    output_limit: int = 30_000
    subagent_check_interval: float = 30.0
    subagent_deadline: float = 600.0
    approval: str | None = None
    allowed_prefixes: tuple[str, ...] = ()
    env_passthrough: tuple[str, ...] = ()
    workspace: str = "."
    provider: str = ""
    log_level: str = "warning"
    answer_limit: int = 64 << 20
    event_limit: int = 16 << 20
    subagent_depth: int = 3
    # Issue 12: project instructions and MCP servers.
    project_instructions: bool = True
    project_instructions_limit: int = 32 * 1024
    mcp_servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Each server's table, merged key by key across the layers."""
    mcp_allowed: tuple[str, ...] = ()
    # Issue 11: reasoning, prompt caching and prices.
    api: str = "chat"
    thinking_budget: int = 0
    effort: str = ""
    reasoning_echo: str = "auto"
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Each model's ``[prices."MODEL"]`` table, merged key by key across the layers."""
    # Issue 14: commands the kernel confines.
    sandbox: str = "workspace-write"
    sandbox_writable: tuple[str, ...] = ()
    # Context windows and local servers (issues 10 and 16)
    context_window: int | None = None  # None: the server's, a known model's, or learned
    compact_at: float = 0.8
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    held_back: tuple[str, ...] = field(default=(), compare=False)
    """Keys the project file set in a folder not trusted, so left out (issue 15)."""

    def with_values(self, values: Mapping[str, Any], origin: str) -> AppConfig:
        """A copy with ``values`` set, remembering ``origin`` for each key."""
        known = {f.name for f in fields(self)} - {"origins", "held_back"}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"{origin}: unknown key {sorted(unknown)[0]!r}")
        origins = dict(self.origins) | dict.fromkeys(values, origin)
        if "mcp_servers" in values:  # a table per server: a later layer sets its keys
            merged = {name: dict(table) for name, table in self.mcp_servers.items()}
            for name, table in values["mcp_servers"].items():
                merged.setdefault(name, {}).update(table)
                origins[f"mcp_servers.{name}"] = origin
            values = {**values, "mcp_servers": merged}
        if "prices" in values:  # a table per model: a later layer sets its keys
            merged = {name: dict(table) for name, table in self.prices.items()}
            for name, table in values["prices"].items():
                merged.setdefault(name, {}).update(table)
            values = {**values, "prices": merged}
        return replace(self, **values, origins=origins)

    def origin(self, key: str) -> str:
        return self.origins.get(key, DEFAULT)


# The keys, as data --------------------------------------------------------------

Kind = Literal[
    "text",
    "url",
    "env_name",
    "choice",
    "whole",
    "number",
    "texts",
    "env_names",
    "switch",
    "servers",
    "prices",
]


@dataclass(frozen=True, slots=True)
class Key:
    """One configuration key: what values it takes. ``minimum`` is inclusive unless
    ``positive`` (then the value must be above it); ``maximum`` is inclusive."""

    kind: Kind
    help: str
    minimum: float | None = None
    positive: bool = False
    choices: tuple[str, ...] = ()
    maximum: float | None = None


KEYS: dict[str, Key] = {
    "model": Key("text", f"PROVIDER:NAME: {USAGES}"),
    "provider": Key("choice", "the provider when model is a bare name", choices=HTTP_PROVIDERS),
    "base_url": Key("url", "the model server, e.g. http://127.0.0.1:11434/v1"),
    "key_env": Key("env_name", "the environment variable that holds the API key"),
    "max_tokens": Key("whole", "the output budget of a request", minimum=1),
    "token_growth": Key("number", "how the budget grows for a continuation", minimum=1),
    "max_tokens_cap": Key("whole", "the largest budget a continuation asks for", minimum=1),
    "continuations": Key("whole", "continuations before ResponseTruncated", minimum=0),
    "tool_timeout": Key("number", "a command's default deadline (s)", minimum=0, positive=True),
    "tool_timeout_max": Key(
        "number", "the longest deadline a call may ask (s)", minimum=0, positive=True
    ),
    "output_limit": Key("whole", "bytes of a command's output the model sees", minimum=1),
    "subagent_check_interval": Key(
        "number", "a sub-agent's progress report interval (s)", minimum=0, positive=True
    ),
    "subagent_deadline": Key("number", "a sub-agent's deadline (s)", minimum=0, positive=True),
    "approval": Key("choice", "ask, auto or read-only", choices=("ask", "auto", "read-only")),
    "allowed_prefixes": Key("texts", "command prefixes that run without asking"),
    "env_passthrough": Key("env_names", "secret-looking variables that commands may see"),
    # Bounds against a hostile server or model (issue 15).
    "answer_limit": Key("whole", "bytes one answer's stream may be, decoded", minimum=1024),
    "event_limit": Key("whole", "bytes one event of a stream may be", minimum=1024),
    "subagent_depth": Key("whole", "how deep sub-agents may nest (0: none)", minimum=0),
    "log_level": Key(
        "choice",
        "what the session's treadle.log keeps beyond tracebacks (debug: requests, tools)",
        choices=("debug", "info", "warning", "error"),
    ),
    # Issue 12: project instructions and MCP servers.
    "project_instructions": Key(
        "switch", "send AGENTS.md (or CLAUDE.md) from your folder and the project's"
    ),
    "project_instructions_limit": Key(
        "whole", "bytes of project instructions the model sees at most", minimum=0
    ),
    "mcp_servers": Key("servers", "MCP servers, as [mcp_servers.NAME] tables (files only)"),
    "mcp_allowed": Key("texts", "MCP tools that need no yes: mcp__SERVER__TOOL, or mcp__SERVER__*"),
    # Issue 11: reasoning, prompt caching and prices.
    "api": Key(
        "choice",
        "what an openai model speaks: chat (Chat Completions) or responses (the Responses API)",
        choices=("chat", "responses"),
    ),
    "thinking_budget": Key(
        "whole", "tokens of max_tokens an Anthropic model may think (0: off)", minimum=0
    ),
    "effort": Key(
        "choice",
        "reasoning effort, where the model takes it (Anthropic: adaptive thinking)",
        choices=REASONING_EFFORTS,
    ),
    "reasoning_echo": Key(
        "choice",
        "auto: reasoning_content back on Chat Completions tool calls (DeepSeek); off: never",
        choices=("auto", "off"),
    ),
    "prices": Key(
        "prices",
        'dollars per million tokens, as [prices."MODEL"] tables (files only): '
        "input, output, cache_read, cache_write",
    ),
    # Commands the kernel confines (issue 14).
    "sandbox": Key(
        "choice",
        "what commands may write: workspace-write, read-only or off",
        choices=("workspace-write", "read-only", "off"),
    ),
    "sandbox_writable": Key("texts", "more folders commands may write under workspace-write"),
    # Context windows and local servers (issues 10 and 16)
    "context_window": Key(
        "whole",
        "the model's context window in tokens (unset: the server's, a known model's, "
        "or what its first refusal names)",
        minimum=256,
    ),
    "compact_at": Key(
        "number",
        "the share of the window past which old tool output is pruned, then the "
        "conversation compacted",
        minimum=0,
        positive=True,
        maximum=1,
    ),
    "connect_timeout": Key(
        "number", "seconds to connect to the model server", minimum=0, positive=True
    ),
    "read_timeout": Key(
        "number",
        "seconds the model server may stay silent in an answer (a CPU model may need more)",
        minimum=0,
        positive=True,
    ),
}
"""Every key a file, a ``TREADLE_*`` variable or a flag may set (``workspace`` is a flag)."""

FLAG_KEYS = (*KEYS, "workspace")
RECORDED_SETTINGS = (
    "max_tokens",
    "token_growth",
    "max_tokens_cap",
    "continuations",
    "tool_timeout",
    "tool_timeout_max",
    "output_limit",
    "subagent_check_interval",
    "subagent_deadline",
    "allowed_prefixes",
    "env_passthrough",
    "subagent_depth",
    "thinking_budget",
    # Context windows (issue 10)
    "context_window",
    "compact_at",
)
"""What a session records of its configuration: what shapes its requests, for replay."""
NOT_CONFIG_VARIABLES = PATH_VARIABLES
ENV_ALIASES = {"TREADLE_LOG": "log_level"}
"""Short names for keys, as people type them: ``TREADLE_LOG=debug``."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def check_value(key: str, value: object, *, from_text: bool = False) -> Any:
    """``value`` as the key's type, or ValueError saying what is wrong with it.

    ``from_text`` parses the strings of environment variables (``"8192"``, ``"a,b"``).
    """
    spec = KEYS[key]
    if from_text and isinstance(value, str):
        value = _parse_text(spec, value)
    match spec.kind:
        case "switch":
            if not isinstance(value, bool):
                raise ValueError(f"must be true or false, not {_shown(value)}")
            return value
        case "servers":
            return _check_servers(value)
        case "text" | "url" | "env_name" | "choice":
            if not isinstance(value, str):
                raise ValueError(f"must be a string, not {_shown(value)}")
            if well_formed(value) != value:  # a command line's bytes that are not UTF-8
                raise ValueError(f"must be text, not bytes that are not UTF-8: {_shown(value)}")
            if spec.kind == "url" and value:
                _check_url(value)
            if spec.kind == "env_name" and value and not _ENV_NAME.match(value):
                raise ValueError(f"must be an environment variable name, not {_shown(value)}")
            if spec.kind == "choice" and value not in spec.choices:
                raise ValueError(f"must be one of {', '.join(spec.choices)}, not {_shown(value)}")
            if key == "model":
                _check_model(value)
            return value
        case "whole" | "number":
            return _check_number(spec, value)
        case "prices":
            return _check_prices(value)
        case "texts" | "env_names":
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"must be a list of strings, not {_shown(value)}")
            if spec.kind == "env_names":
                for name in value:
                    if not _ENV_NAME.match(name):
                        raise ValueError(f"{_shown(name)} is not an environment variable name")
            return tuple(value)


def _check_url(url: str) -> None:
    """An http:// or https:// address with a host and, if any, a port that can be."""
    from urllib.parse import urlsplit

    problem = f"must be an http:// or https:// address with a host, not {_shown(url)}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ValueError(f"{problem} ({error})") from None
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host or any(c.isspace() for c in url):
        raise ValueError(problem)
    if port == 0:
        raise ValueError(f"{problem} (port 0)")
    if host.replace(".", "").isdigit() or ":" in host:  # an address, not a name: a real one
        import ipaddress

        try:
            ipaddress.ip_address(host)
        except ValueError as error:
            raise ValueError(f"{problem} ({error})") from None


def _check_model(model: str) -> None:
    """``PROVIDER:NAME`` of a provider's row; a bare name is checked once ``provider``
    has had its say (:func:`_combined`)."""
    if ":" in model:
        try:
            resolve(model)
        except ModelNotConfigured as problem:
            raise ValueError(str(problem)) from None


def _check_servers(value: object) -> dict[str, dict[str, Any]]:
    # The MCP client's modules are imported only when a server is configured.
    from treadle.adapters.mcp.config import TableProblem, check_table

    if not isinstance(value, dict):
        raise ValueError(f"must be tables, [mcp_servers.NAME], not {_shown(value)}")
    servers = {}
    for name, table in value.items():
        try:
            servers[name] = check_table(name, table)
        except TableProblem as problem:
            raise ValueError(_table_problem(name, problem)) from None
    return servers


def _table_problem(name: str, problem: TableProblem) -> str:
    """``time.args: must be …``, said after ``mcp_servers``; the dot joins them."""
    return f"{name}{'.' + problem.key if problem.key else ''}: {problem.problem}"


def mcp_server_configs(app: AppConfig) -> tuple[McpServerConfig, ...]:
    """The configured MCP servers, in the order their tables came."""
    if not app.mcp_servers:
        return ()
    from treadle.adapters.mcp.config import server_config

    return tuple(server_config(name, table) for name, table in app.mcp_servers.items())


def _check_prices(value: object) -> dict[str, dict[str, float]]:
    """``{"MODEL": {"input": 3.0, "output": 15.0, …}}``, every price a number ≥ 0."""
    if not isinstance(value, dict):
        raise ValueError(f'must be tables, [prices."MODEL"], not {_shown(value)}')
    prices: dict[str, dict[str, float]] = {}
    for model, table in value.items():
        if not isinstance(table, dict):
            raise ValueError(f"{_shown(model)}: must be a table, not {_shown(table)}")
        unknown = sorted(set(table) - set(PRICE_KINDS))
        if unknown:
            raise ValueError(
                f"{_shown(model)}: unknown price {_shown(unknown[0])} "
                f"(the prices: {', '.join(PRICE_KINDS)})"
            )
        for kind, price in table.items():
            try:
                _check_number(Key("number", "", minimum=0), price)
            except ValueError as problem:
                raise ValueError(f"{_shown(model)}.{kind}: {problem}") from None
        prices[model] = {kind: float(price) for kind, price in table.items()}
    return prices


def _parse_text(spec: Key, text: str) -> object:
    text = text.strip()
    if spec.kind == "servers":
        raise ValueError("can only be set in a file, as [mcp_servers.NAME] tables")
    if spec.kind == "switch":
        words = {"true": True, "1": True, "yes": True, "on": True}
        words |= {"false": False, "0": False, "no": False, "off": False}
        if text.lower() not in words:
            raise ValueError(f"must be true or false, not {_shown(text)}")
        return words[text.lower()]
    if spec.kind == "prices":
        raise ValueError('can only be set in a file, as [prices."MODEL"] tables')
    try:
        if spec.kind == "whole":
            return int(text)
        if spec.kind == "number":
            return float(text)
    except ValueError:
        raise ValueError(f"must be a number, not {_shown(text)}") from None
    if spec.kind in ("texts", "env_names"):
        if text.startswith("["):  # a JSON or TOML list, as in the files
            try:
                parsed: object = json.loads(text)
            except json.JSONDecodeError:
                raise ValueError(f"must be a list of strings, not {_shown(text)}") from None
            return parsed
        return [item.strip() for item in text.split(",") if item.strip()]
    return text


def _check_number(spec: Key, value: object) -> int | float:
    whole = spec.kind == "whole"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a {'whole number' if whole else 'number'}, not {_shown(value)}")
    if whole and not isinstance(value, int):
        raise ValueError(f"must be a whole number, not {_shown(value)}")
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, not {_shown(value)}")
    if spec.minimum is not None:
        if spec.positive and value <= spec.minimum:
            raise ValueError(f"must be more than {spec.minimum:g}, not {_shown(value)}")
        if not spec.positive and value < spec.minimum:
            raise ValueError(f"must be at least {spec.minimum:g}, not {_shown(value)}")
    if spec.maximum is not None and value > spec.maximum:
        raise ValueError(f"must be at most {spec.maximum:g}, not {_shown(value)}")
    return value if whole else float(value)


def _shown(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(well_formed(value), ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    return repr(value)


# Loading ---------------------------------------------------------------------------


# Project trust (issue 15) -----------------------------------------------------------
# A repository's .treadle.toml must not send the user's key to another server, name
# another variable to send, let secrets or commands through, start tool servers, run
# a scripted model without asking, or loosen the sandbox: those values count only in a
# folder the user has trusted once.

BOUNDS = (
    "answer_limit",
    "event_limit",
    "output_limit",
    "subagent_depth",
    "project_instructions_limit",
    "tool_timeout",
    "tool_timeout_max",
)
"""Keys that bound what a hostile server, model or command can make treadle hold or do:
a project may tighten them anywhere, and loosen them past the defaults only if trusted."""


def needs_trust(key: str, value: object) -> bool:
    """Whether a project file may set ``key`` to ``value`` only in a trusted folder.

    A tool server is a program treadle starts (or a server it sends to): a project may
    only turn one off."""
    if key in ("base_url", "key_env", "env_passthrough", "allowed_prefixes", "mcp_allowed"):
        return True
    if key in BOUNDS:
        default = getattr(AppConfig(), key)
        return isinstance(value, int | float) and value > default
    if key == "approval":
        return value == "auto"
    if key == "mcp_servers" and isinstance(value, Mapping):
        return any(dict(table).get("enabled", True) is not False for table in value.values())
    if key in ("sandbox", "sandbox_writable"):  # issue 14: only ever tightened untrusted
        return key == "sandbox_writable" or value != "read-only"
    return key == "model" and isinstance(value, str) and value.startswith("script:")


def is_trusted(workspace: str, environ: Mapping[str, str]) -> bool:
    try:
        lines = trusted_folders_path(environ).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    return os.path.realpath(workspace) in lines


def trust_folder(workspace: str, environ: Mapping[str, str]) -> Path:
    """Trust ``workspace`` from now on; the file that records it. Raises OSError."""
    path = trusted_folders_path(environ)
    if not is_trusted(workspace, environ):
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as trusted:
            trusted.write(os.path.realpath(workspace) + "\n")
    return path


def _trusted_values(
    values: dict[str, Any], workspace: str, environ: Mapping[str, str]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The project file's values that count here, and the keys held back."""
    held = tuple(key for key, value in values.items() if needs_trust(key, value))
    if not held or is_trusted(workspace, environ):
        return values, ()
    return {key: value for key, value in values.items() if key not in held}, held


def read_file_values(path: Path) -> dict[str, Any]:
    """The checked values of one TOML file; {} when there is none."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None
    import tomllib  # only when there is a file to read

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return _checked(data, str(path))


def read_env_values(environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """Values from ``TREADLE_<KEY>`` variables, each with the variable's name."""
    unknown = unknown_variables(environ)
    if unknown:
        raise ConfigError(
            f"environment variable {unknown[0]}: not a configuration key "
            f"(TREADLE_<KEY> with KEY one of {', '.join(KEYS)})"
        )
    values: dict[str, tuple[Any, str]] = {}
    names = [(alias, key) for alias, key in ENV_ALIASES.items()]
    names += [(ENV_PREFIX + key.upper(), key) for key in KEYS]  # the full name wins
    for name, key in names:
        if name in environ:
            try:
                values[key] = (check_value(key, environ[name], from_text=True), name)
            except ValueError as problem:
                raise ConfigError(f"environment variable {name}: {key}: {problem}") from None
    return values


def settings_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without treadle's own settings: ``TREADLE_MAX_TOKENS`` is a budget, not
    a secret for its name, and a bad value of it must be shown in its error."""
    own = {ENV_PREFIX + key.upper() for key in KEYS} | set(ENV_ALIASES)
    return {name: value for name, value in environ.items() if name not in own}


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """``TREADLE_*`` variables that name no key (a typo): an error, like an unknown key."""
    known = {ENV_PREFIX + key.upper() for key in KEYS} | NOT_CONFIG_VARIABLES | set(ENV_ALIASES)
    return sorted(
        name
        for name in environ
        if name.startswith(ENV_PREFIX) and name not in known and not name.startswith("TREADLE_RUN_")
    )


def _checked(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (the keys: {', '.join(KEYS)})")
        try:
            values[key] = check_value(key, value)
        except ValueError as problem:
            joint = "." if key == "mcp_servers" and isinstance(value, dict) else ": "
            raise ConfigError(f"{where}: {key}{joint}{problem}") from None
    return values


def load_config(
    *,
    flags: Mapping[str, object],
    environ: Mapping[str, str],
    session: tuple[str, Mapping[str, str]] | None = None,
    cwd: str | None = None,
) -> AppConfig:
    """The effective configuration for a run.

    ``flags`` are the command line's values (None for a flag not given); ``session`` is
    a resumed session's id and recorded ``model``, ``base_url`` and ``workspace``.
    """
    given = {key: value for key, value in flags.items() if value is not None}
    session_id, recorded = session if session is not None else ("", {})
    workspace = str(given.get("workspace") or recorded.get("workspace") or cwd or os.getcwd())
    if not os.path.isdir(workspace):
        what = "not a folder" if os.path.exists(workspace) else "no such folder"
        origin = "flag --workspace" if given.get("workspace") else f"session {session_id}"
        raise ConfigError(f"{origin}: workspace {workspace}: {what}")
    app = AppConfig()
    user = user_config_path(environ)
    app = app.with_values(read_file_values(user), f"user file {user}")
    project = project_config_path(workspace)
    kept, held = _trusted_values(read_file_values(project), workspace, environ)
    app = replace(app.with_values(kept, f"project file {project}"), held_back=held)
    for key, (value, name) in read_env_values(environ).items():
        app = app.with_values({key: value}, f"env {name}")
    if session_id:
        kept = {k: v for k, v in recorded.items() if k in ("model", "base_url", "workspace") and v}
        for key in ("model", "base_url"):
            if key in kept:
                try:
                    check_value(key, kept[key])
                except ValueError as problem:
                    raise ConfigError(f"session {session_id}: {key}: {problem}") from None
        app = app.with_values(kept, f"session {session_id}")
    for key, value in given.items():
        if key not in FLAG_KEYS:
            raise ConfigError(f"flag --{key.replace('_', '-')}: not a configuration key")
        try:
            checked = value if key == "workspace" else check_value(key, value)
        except ValueError as problem:
            raise ConfigError(f"flag --{key.replace('_', '-')}: {problem}") from None
        app = app.with_values({key: checked}, f"flag --{key.replace('_', '-')}")
    if "workspace" not in app.origins:
        app = replace(app, workspace=workspace)
    return _combined(app)


def _combined(app: AppConfig) -> AppConfig:
    """Checks across keys, and ``provider`` + a bare model name into ``PROVIDER:NAME``."""
    max_tokens = app.max_tokens if app.max_tokens is not None else DEFAULT_MAX_TOKENS
    if app.max_tokens_cap < max_tokens:
        raise ConfigError(
            f"{app.origin('max_tokens_cap')}: max_tokens_cap: {app.max_tokens_cap} is less than "
            f"max_tokens {max_tokens} (from {app.origin('max_tokens')})"
        )
    if app.tool_timeout_max < app.tool_timeout:
        raise ConfigError(
            f"{app.origin('tool_timeout_max')}: tool_timeout_max: {app.tool_timeout_max:g} is "
            f"less than tool_timeout {app.tool_timeout:g} (from {app.origin('tool_timeout')})"
        )
    if app.mcp_servers:
        from treadle.adapters.mcp.config import TableProblem, server_config
    for name, table in app.mcp_servers.items():
        try:
            server_config(name, table)
        except TableProblem as problem:
            origin = app.origin(f"mcp_servers.{name}")
            raise ConfigError(f"{origin}: mcp_servers.{_table_problem(name, problem)}") from None
    if app.thinking_budget and app.thinking_budget >= max_tokens:
        raise ConfigError(
            f"{app.origin('thinking_budget')}: thinking_budget: {app.thinking_budget} is not "
            f"less than max_tokens {max_tokens} (from {app.origin('max_tokens')}): the "
            "thinking counts inside the budget, and the answer needs room too"
        )
    if 0 < app.thinking_budget < MIN_THINKING_BUDGET:
        raise ConfigError(
            f"{app.origin('thinking_budget')}: thinking_budget: {app.thinking_budget} is less "
            f"than {MIN_THINKING_BUDGET}, the least Anthropic takes (0 turns thinking off)"
        )
    for model, table in app.prices.items():
        missing = [kind for kind in ("input", "output") if kind not in table]
        if missing:
            raise ConfigError(
                f"{app.origin('prices')}: prices.{_shown(model)}: no {missing[0]} price "
                "(input and output are needed; the cache prices default to input)"
            )
    if app.provider and app.model and ":" not in app.model and app.model != "demo":
        app = replace(app, model=f"{app.provider}:{app.model}")
    if app.model:
        try:
            resolve(app.model)
        except ModelNotConfigured as problem:
            raise ConfigError(f"{app.origin('model')}: model: {problem}") from None
    return app


# Showing ---------------------------------------------------------------------------


def describe_config(
    app: AppConfig, environ: Mapping[str, str], in_force: list[str] | None = None
) -> list[str]:
    """``treadle config``: the files read, then every key, its value and its origin;
    then ``in_force``, the window and budgets in force for the model (when known)."""
    user = user_config_path(environ)
    project = project_config_path(app.workspace)
    lines = [
        f"user file:    {user}{'' if user.is_file() else ' (none)'}",
        f"project file: {project}{'' if project.is_file() else ' (none)'}",
        "",
    ]
    rows = [(key, _value_text(key, getattr(app, key)), app.origin(key)) for key in FLAG_KEYS]
    width = max(len(key) for key, _, _ in rows)
    value_width = min(40, max(len(value) for _, value, _ in rows))
    lines += [f"{key:<{width}}  {value:<{value_width}}  {origin}" for key, value, origin in rows]
    if app.held_back:
        lines += ["", held_back_warning(app)]
    key_env = app.key_env or _default_key_env(app.model)
    if key_env:
        state = "set" if environ.get(key_env) else "not set"
        lines += ["", f"API key: ${key_env} is {state}"]
    if in_force:
        lines += ["", *in_force]
    return lines


def held_back_warning(app: AppConfig) -> str:
    """The line that says which project settings were left out, and how to let them in."""
    project = project_config_path(app.workspace)
    return (
        f"{project} sets {', '.join(app.held_back)}: ignored, as this folder is not trusted "
        f"(a repository could send your key elsewhere); if it is yours: treadle trust "
        f"{os.path.realpath(app.workspace)}"
    )


UNSET_TEXT = {
    "approval": "(ask in a terminal, auto headless)",
    "max_tokens": f"(a quarter of the window, at most {DEFAULT_MAX_TOKENS})",
    "context_window": "(the server's, a known model's, or learned)",
}


def _value_text(key: str, value: object) -> str:
    if key == "mcp_servers" and isinstance(value, Mapping):
        return json.dumps(list(value), ensure_ascii=False) + (" (treadle mcp)" if value else "")
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None and key in UNSET_TEXT:
        return UNSET_TEXT[key]
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _default_key_env(model: str) -> str:
    try:
        return resolve(model)[0].key_env
    except ModelNotConfigured:
        return ""


def model_prices(app: AppConfig) -> Prices | None:
    """The configured prices of ``app.model``: its table as ``PROVIDER:NAME`` or as NAME."""
    name = app.model.partition(":")[2] or app.model
    table = app.prices.get(app.model) or app.prices.get(name)
    if not table:
        return None
    return Prices(
        table["input"], table["output"], table.get("cache_read"), table.get("cache_write")
    )
