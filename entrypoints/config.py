"""The effective configuration: every key, its value and where the value came from."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class AppConfig:
    """Everything configurable. ``approval`` None means: ask in a terminal, auto headless."""

    model: str = ""
    base_url: str = ""
    key_env: str = ""
    max_tokens: int = 8192
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
    origins: dict[str, str] = field(default_factory=dict, compare=False)

    def with_values(self, values: dict[str, Any], origin: str) -> AppConfig:
        """A copy with ``values`` set, remembering ``origin`` for each key."""
        known = {f.name for f in fields(self)} - {"origins"}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"{origin}: unknown key {sorted(unknown)[0]!r}")
        origins = dict(self.origins) | {key: origin for key in values}
        return replace(self, **values, origins=origins)
