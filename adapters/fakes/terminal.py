"""A terminal that keeps everything shown and can press Esc at a chosen moment."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from treadle.domain.values.events import AnswerDelta, TurnEnded, TurnEvent
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest

E = TypeVar("E")


class RecordingTerminal:
    """The Terminal port for tests and library users.

    ``events`` keeps every event shown. ``press_esc_when`` is asked about each event
    and presses Esc (calls the bound interrupt) the first time it says yes.
    ``approvals`` and ``answers`` are handed out in order; when they run out, nobody
    is there to answer (None), as in a headless run.

    Example::

        terminal = RecordingTerminal(press_esc_when=lambda e: isinstance(e, ToolStarted))
    """

    def __init__(
        self,
        *,
        press_esc_when: Callable[[TurnEvent], bool] | None = None,
        approvals: Sequence[ApprovalAnswer] = (),
        answers: Sequence[str] = (),
    ) -> None:
        self.events: list[TurnEvent] = []
        self.approval_requests: list[ApprovalRequest] = []
        self.questions: list[str] = []
        self._press_esc_when = press_esc_when
        self._approvals = list(approvals)
        self._answers = list(answers)
        self._interrupt: Callable[[], None] | None = None
        self.esc_pressed = False

    def show(self, event: TurnEvent) -> None:
        self.events.append(event)
        if (
            not self.esc_pressed
            and self._press_esc_when is not None
            and self._press_esc_when(event)
        ):
            self.press_esc()

    def press_esc(self) -> None:
        self.esc_pressed = True
        if self._interrupt is not None:
            self._interrupt()

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        self.approval_requests.append(request)
        return self._approvals.pop(0) if self._approvals else None

    async def ask_question(self, question: str) -> str | None:
        self.questions.append(question)
        return self._answers.pop(0) if self._answers else None

    def answer_text(self, agent: str = "") -> str:
        """The answer text as the person saw it stream."""
        return "".join(
            e.text for e in self.events if isinstance(e, AnswerDelta) and e.agent == agent
        )

    def of_type(self, kind: type[E]) -> list[E]:
        """The events shown of one kind, in order."""
        return [event for event in self.events if isinstance(event, kind)]

    @property
    def outcome_line(self) -> str:
        ends = [e for e in self.events if isinstance(e, TurnEnded) and not e.agent]
        return ends[-1].outcome.screen_line if ends else ""


class SilentTerminal:
    """The Terminal port with nobody in front of it: shows nothing, keeps nothing, and
    answers no question (as a headless run). For benchmarks and runs that only want the
    outcome; a subclass may watch the events it is shown.

    Example::

        ports = TurnPorts(model, clock, runner, SilentTerminal())
    """

    def show(self, event: TurnEvent) -> None:
        pass

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        return None

    async def ask_question(self, question: str) -> str | None:
        return None

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None:
        pass
