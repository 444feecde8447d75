"""How a turn ends: its outcome, the line on the screen, and the exit code."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class OutcomeKind(enum.Enum):
    FINISHED = "finished"
    FAILED = "failed"
    BLOCKED = "blocked"
    WAITING = "waiting for input"
    PAUSED = "paused"


EXIT_CODES = {
    OutcomeKind.FINISHED: 0,
    OutcomeKind.FAILED: 1,
    OutcomeKind.BLOCKED: 3,
    OutcomeKind.WAITING: 4,
    OutcomeKind.PAUSED: 130,
}


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended. ``reason`` is the failure's kind (``ResponseTruncated``…).

    Example: ``TurnOutcome.failed("ResponseTruncated", "3 continuations").screen_line``
    is ``"Turn failed: ResponseTruncated: 3 continuations"``.
    """

    kind: OutcomeKind
    detail: str = ""
    reason: str = ""

    @staticmethod
    def finished() -> TurnOutcome:
        return TurnOutcome(OutcomeKind.FINISHED)

    @staticmethod
    def failed(reason: str, detail: str) -> TurnOutcome:
        return TurnOutcome(OutcomeKind.FAILED, detail, reason)

    @staticmethod
    def blocked(needed: str) -> TurnOutcome:
        return TurnOutcome(OutcomeKind.BLOCKED, needed)

    @staticmethod
    def waiting(question: str) -> TurnOutcome:
        return TurnOutcome(OutcomeKind.WAITING, question)

    @staticmethod
    def paused(detail: str = "") -> TurnOutcome:
        return TurnOutcome(OutcomeKind.PAUSED, detail)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.kind]

    @property
    def screen_line(self) -> str:
        match self.kind:
            case OutcomeKind.FINISHED:
                return "Turn finished"
            case OutcomeKind.FAILED:
                return f"Turn failed: {self.reason}: {self.detail}"
            case OutcomeKind.BLOCKED:
                return f"Turn blocked: {self.detail}"
            case OutcomeKind.WAITING:
                return f"Turn waiting for input: {self.detail}"
            case OutcomeKind.PAUSED:
                return "Turn paused"
