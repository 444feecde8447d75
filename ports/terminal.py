"""The Terminal port: what the person sees, and what they answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from treadle.domain.values.events import TurnEvent
from treadle.domain.values.server_requests import FormAnswer, FormRequest
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest


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


@runtime_checkable
class AsksForms(Protocol):
    """A terminal that shows a server's form whole (an editor over ACP that declared
    elicitation). None: it cannot show this one, and the loop asks field by field
    through ``ask_question`` instead."""

    async def ask_form(self, request: FormRequest) -> FormAnswer | None: ...
