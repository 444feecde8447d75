"""What can be configured, as data: every key, its type, default, bounds and trust.

:class:`AppConfig` holds the values and their defaults; :data:`KEYS` says of each key
what values it takes (:class:`Key`) and whether a project file may set it in a folder
the user has not trusted (``trust``). Reading the layers is
:mod:`~treadle.entrypoints.config`; checking a value, :mod:`~treadle.entrypoints.config_check`;
what trust is, :mod:`~treadle.entrypoints.trust`.

Example::

    KEYS["max_tokens"]      # Key(kind='whole', help='the output budget…', minimum=1, …)
    AppConfig().sandbox     # 'workspace-write'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from treadle.entrypoints.paths import PATH_VARIABLES
from treadle.entrypoints.providers import HTTP_PROVIDERS, USAGES

DEFAULT_MAX_TOKENS = 8192
"""The output budget when ``max_tokens`` is not set and the window is not known."""
ENV_PREFIX = "TREADLE_"
DEFAULT = "default"
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
PRICE_KINDS = ("input", "output", "cache_read", "cache_write")
USAGE_ERROR = 2
"""The exit code of a command line or a configuration that cannot be used (a turn's
own codes are the outcomes'; 3, blocked, stays for a key the server rejects)."""


class ConfigError(Exception):
    """A configuration that cannot be used; the message names where and which key."""


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
    # Issue 28: the network of commands.
    sandbox_network: str = "on"
    network_allow: tuple[str, ...] = ()
    network_deny: tuple[str, ...] = ()
    network_loopback: bool = False
    # Context windows and local servers (issues 10 and 16)
    context_window: int | None = None  # None: the server's, a known model's, or learned
    compact_at: float = 0.8
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    # Issue 26: limits the person sets on what a turn spends (None: no limit).
    max_cost: float | None = None
    max_tokens_total: int | None = None
    max_requests: int | None = None
    max_time: float | None = None
    output_schema: str = ""
    """A JSON Schema file the final answer must meet ("": any answer)."""
    otel: Mapping[str, Any] = field(default_factory=dict)
    """The ``[otel]`` table: ``endpoint`` (OTLP/HTTP) and ``log_prompts``."""
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    held_back: tuple[str, ...] = field(default=(), compare=False)
    """Keys the project file set in a folder not trusted, so left out (issue 15)."""
    held_because: str = field(default="", compare=False)
    """Why they were: the folder is not trusted, or its file changed since it was."""

    def with_values(self, values: Mapping[str, Any], origin: str) -> AppConfig:
        """A copy with ``values`` set, remembering ``origin`` for each key."""
        known = {f.name for f in fields(self)} - {"origins", "held_back", "held_because"}
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
    "model",
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
    "duration",
    "otel",
]
Trust = Literal["free", "always", "raise", "unless", "starting", "enabled"]
"""Whether a project file's value counts in a folder the user has not trusted:
``free`` always; ``always`` never; ``raise`` only to tighten a bound (at most the
default); ``unless`` only for a value in ``safe``; ``starting`` unless it starts with
one of ``risky``; ``enabled`` only to turn every table off (a server is a program
treadle starts, or a server it sends to)."""


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
    trust: Trust = "free"
    safe: tuple[str, ...] = ()
    risky: tuple[str, ...] = ()


KEYS: dict[str, Key] = {
    "model": Key("model", f"PROVIDER:NAME: {USAGES}", trust="starting", risky=("script:",)),
    "provider": Key("choice", "the provider when model is a bare name", choices=HTTP_PROVIDERS),
    "base_url": Key("url", "the model server, e.g. http://127.0.0.1:11434/v1", trust="always"),
    "key_env": Key("env_name", "the environment variable that holds the API key", trust="always"),
    "max_tokens": Key("whole", "the output budget of a request", minimum=1),
    "token_growth": Key("number", "how the budget grows for a continuation", minimum=1),
    "max_tokens_cap": Key("whole", "the largest budget a continuation asks for", minimum=1),
    "continuations": Key("whole", "continuations before ResponseTruncated", minimum=0),
    "tool_timeout": Key(
        "number", "a command's default deadline (s)", minimum=0, positive=True, trust="raise"
    ),
    "tool_timeout_max": Key(
        "number",
        "the longest deadline a call may ask (s)",
        minimum=0,
        positive=True,
        trust="raise",
    ),
    "output_limit": Key(
        "whole", "bytes of a command's output the model sees", minimum=1, trust="raise"
    ),
    "subagent_check_interval": Key(
        "number", "a sub-agent's progress report interval (s)", minimum=0, positive=True
    ),
    "subagent_deadline": Key("number", "a sub-agent's deadline (s)", minimum=0, positive=True),
    "approval": Key(
        "choice",
        "ask, auto or read-only",
        choices=("ask", "auto", "read-only"),
        trust="unless",
        safe=("ask", "read-only"),
    ),
    "allowed_prefixes": Key("texts", "command prefixes that run without asking", trust="always"),
    "env_passthrough": Key(
        "env_names", "secret-looking variables that commands may see", trust="always"
    ),
    # Bounds against a hostile server or model (issue 15).
    "answer_limit": Key(
        "whole", "bytes one answer's stream may be, decoded", minimum=1024, trust="raise"
    ),
    "event_limit": Key("whole", "bytes one event of a stream may be", minimum=1024, trust="raise"),
    "subagent_depth": Key(
        "whole", "how deep sub-agents may nest (0: none)", minimum=0, trust="raise"
    ),
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
        "whole", "bytes of project instructions the model sees at most", minimum=0, trust="raise"
    ),
    "mcp_servers": Key(
        "servers", "MCP servers, as [mcp_servers.NAME] tables (files only)", trust="enabled"
    ),
    "mcp_allowed": Key(
        "texts",
        "MCP tools that need no yes: mcp__SERVER__TOOL, or mcp__SERVER__*",
        trust="always",
    ),
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
        trust="unless",
        safe=("read-only",),
    ),
    "sandbox_writable": Key(
        "texts", "more folders commands may write under workspace-write", trust="always"
    ),
    # The network of commands (issue 28): a repository may only narrow it.
    "sandbox_network": Key(
        "choice",
        "what network commands reach: on, off, or allowlist (through treadle's proxy)",
        choices=("on", "off", "allowlist"),
        trust="unless",
        safe=("off", "allowlist"),
    ),
    "network_allow": Key(
        "texts",
        'host names the allowlist lets through: "pypi.org", "*.github.com"',
        trust="always",
    ),
    "network_deny": Key("texts", "host names the allowlist refuses (deny wins)"),
    "network_loopback": Key(
        "switch",
        "under off or allowlist, a loopback of each command's own (a network namespace)",
        trust="always",
    ),
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
    # Limits on what a turn spends, its sub-agents included (issue 26).
    "max_cost": Key(
        "number",
        "dollars a turn may spend, at the model's configured prices (unset: no limit)",
        minimum=0,
        positive=True,
    ),
    "max_tokens_total": Key("whole", "tokens a turn may spend (unset: no limit)", minimum=1),
    "max_requests": Key("whole", "requests a turn may make (unset: no limit)", minimum=1),
    "max_time": Key("duration", "how long a turn may run: 90s, 10m, 1h30m (unset: no limit)"),
    "otel": Key(
        "otel",
        "OpenTelemetry, as an [otel] table (files only): endpoint (OTLP/HTTP, else "
        "OTEL_EXPORTER_OTLP_ENDPOINT), log_prompts (default false)",
        trust="always",
    ),
    "output_schema": Key(
        "text", "a JSON Schema file (draft 2020-12) the final answer must be valid against"
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
    # Where a turn ends, and what its answer must be (issue 26): a replay ends the same.
    "max_tokens_total",
    "max_requests",
    "max_time",
    "output_schema",
)
"""What a session records of its configuration: what shapes its requests, for replay."""
NOT_CONFIG_VARIABLES = PATH_VARIABLES
ENV_ALIASES = {"TREADLE_LOG": "log_level"}
"""Short names for keys, as people type them: ``TREADLE_LOG=debug``."""
