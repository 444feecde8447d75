"""The Terminal port: what the person sees, and what they answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from treadle.ports.events import TurnEvent

ApprovalAnswer = Literal["yes", "no", "always"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call that needs a yes. ``prefix`` is what "always" would allow from now on;
    empty when no prefix is safe to allow, and "always" is then not offered."""

    tool: str
    summary: str
    prefix: str
    agent: str = ""


class Terminal(Protocol):
    """Shows turn events and asks the person when the turn needs them.

    ``ask_*`` return None when nobody can answer (a headless run): the turn then
    ends blocked or waiting for input. ``bind_interrupt`` hands the terminal the
    function to call when the person presses Esc or Ctrl-C.
    """

    def show(self, event: TurnEvent) -> None: ...

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None: ...

    async def ask_question(self, question: str) -> str | None: ...

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None: ...
