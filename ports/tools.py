"""The Tool port: what the model can call, and what a call gets to work with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from treadle.ports.clock import Clock
from treadle.ports.events import TurnEvent, TurnOutcome
from treadle.ports.model import ToolSpec
from treadle.ports.process import ProcessRunner

Access = Literal["read", "write", "execute", "none"]
"""What a tool does to the machine; the approval policy decides on this."""


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Deadlines (seconds) and the output bound (bytes) for tools that start programs."""

    default_timeout: float = 120.0
    max_timeout: float = 600.0
    output_limit: int = 30_000
    passthrough_env: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What goes back to the model. ``status`` is the short line shown on the terminal."""

    text: str
    is_error: bool = False
    status: str = ""


@dataclass(frozen=True, slots=True)
class EndTurn:
    """A tool that cannot go on without someone ends the turn (``ask`` when headless)."""

    outcome: TurnOutcome
    text: str = ""


ToolOutcome = ToolResult | EndTurn


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use: the workspace, the process runner, the clock."""

    workspace: str
    session_dir: str
    runner: ProcessRunner
    clock: Clock
    limits: ToolLimits
    emit: Callable[[TurnEvent], None]
    ask_question: Callable[[str], Awaitable[str | None]]
    agent: str = ""


class Tool(Protocol):
    """One tool. ``run`` gets arguments already checked against ``spec.parameters``.

    ``describe`` is the one-line summary shown on the terminal and in approval
    prompts (for bash, the command itself).
    """

    @property
    def spec(self) -> ToolSpec: ...

    @property
    def access(self) -> Access: ...

    def describe(self, arguments: Mapping[str, Any]) -> str: ...

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome: ...
