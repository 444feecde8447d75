"""What a provider's row builds its model adapter from (see
:mod:`~treadle.entrypoints.providers`)."""

from __future__ import annotations

from dataclasses import dataclass

from treadle.ports.clock import Clock


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """What a provider builds its adapter from: the name after the colon and what the
    session's configuration says of the model and its server."""

    name: str
    clock: Clock
    base_url: str = ""
    api_key: str | None = None
    key_env: str = ""
    api: str = "chat"
    connect_timeout: float = 10.0
    read_timeout: float = 120.0
    answer_limit: int = 64 << 20
    event_limit: int = 16 << 20
    effort: str = ""
    session: str = ""
    reasoning_echo: bool = True
