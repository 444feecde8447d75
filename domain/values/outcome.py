"""How a turn ends: why it stopped, its outcome, the line on the screen, the exit code.

Every ending goes through :func:`end_turn`, the one place that decides. Its cause is
one of a closed set of values, and a failure's kind is a :class:`FailureKind`, never
free text.

Example::

    >>> end_turn(Truncated(continuations=3)).screen_line
    'Turn failed: ResponseTruncated: the answer still hit its token budget after 3 continuations'
    >>> end_turn(NeedsAnswer("Which branch?")).exit_code
    4
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from treadle.domain.values.model import (
    ContextExceeded,
    CredentialsRejected,
    HttpStatusError,
    MalformedStream,
    ModelError,
    TransportError,
)
from treadle.domain.values.text import one_line


class OutcomeKind(enum.Enum):
    FINISHED = "finished"
    FAILED = "failed"
    BLOCKED = "blocked"
    WAITING = "waiting for input"
    PAUSED = "paused"


class FailureKind(enum.Enum):
    """The ways a turn fails; the value is the name the failure line shows.
    ``NONE`` is the reason of every outcome that is not a failure, but for a turn
    blocked by a spending limit (``SPENDING_LIMIT``: scripts can tell it apart)."""

    NONE = ""
    TRANSPORT = "TransportError"
    HTTP = "HttpError"
    MALFORMED = "MalformedStream"
    TRUNCATED = "ResponseTruncated"
    CONTEXT = "ContextExceeded"
    INTERNAL = "InternalError"
    OUTPUT_INVALID = "OutputInvalid"
    SPENDING_LIMIT = "SpendingLimit"


LINE_DETAIL_LIMIT = 1_000
"""The most of a detail (a command, a question, an error) the outcome line shows."""

EXIT_CODES = {
    OutcomeKind.FINISHED: 0,
    OutcomeKind.FAILED: 1,
    OutcomeKind.BLOCKED: 3,
    OutcomeKind.WAITING: 4,
    OutcomeKind.PAUSED: 130,
}


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How a turn ended; ``reason`` is the kind of a failure.

    Made by :func:`end_turn`; read back from transcripts as it was recorded.
    """

    kind: OutcomeKind
    detail: str = ""
    reason: FailureKind = FailureKind.NONE

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.kind]

    @property
    def resumable(self) -> bool:
        """Whether ``--resume`` has something to go on with: every ending but finished
        (a blocked or failed turn is taken up again once its cause is fixed)."""
        return self.kind is not OutcomeKind.FINISHED

    @property
    def screen_line(self) -> str:
        """The turn's last line on the screen: always one line, and bounded, with both
        ends of a long detail shown (the end of a command is where a danger hides)."""
        detail = _bounded(one_line(self.detail, len(self.detail) + 1))
        match self.kind:
            case OutcomeKind.FINISHED:
                return "Turn finished"
            case OutcomeKind.FAILED:
                return f"Turn failed: {self.reason.value}: {detail}"
            case OutcomeKind.BLOCKED:
                return f"Turn blocked: {detail}"
            case OutcomeKind.WAITING:
                return f"Turn waiting for input: {detail}"
            case OutcomeKind.PAUSED:
                return "Turn paused"


def _bounded(detail: str) -> str:
    if len(detail) <= LINE_DETAIL_LIMIT:
        return detail
    keep = LINE_DETAIL_LIMIT // 2
    left_out = len(detail) - 2 * keep
    return f"{detail[:keep]} [… {left_out:,} characters …] {detail[-keep:]}"


# Why a turn ends ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answered:
    """The model answered without asking for a tool."""


@dataclass(frozen=True, slots=True)
class ModelGaveUp:
    """A model failure that is not retried, or is still there after the last attempt."""

    error: ModelError


@dataclass(frozen=True, slots=True)
class Truncated:
    """The answer hit its token budget after every continuation allowed."""

    continuations: int


@dataclass(frozen=True, slots=True)
class OutOfContext:
    """The request cannot be made to fit the model's context window: the server still
    refused it after compacting, or what must be sent (the task, the system prompt, an
    answer being continued) does not leave room for an answer. ``detail`` says what
    does not fit and what to change."""

    detail: str


@dataclass(frozen=True, slots=True)
class Crashed:
    """A bug: an exception in the loop, a tool or an adapter. ``log`` is where its
    traceback went (empty when there is no log)."""

    error: str
    log: str = ""


@dataclass(frozen=True, slots=True)
class NeedsApproval:
    """A call needs a yes that nobody present can give."""

    what: str


@dataclass(frozen=True, slots=True)
class NeedsAnswer:
    """The model asked a question that nobody present can answer."""

    question: str


@dataclass(frozen=True, slots=True)
class Stopped:
    """Esc, Ctrl-C, a signal, or the caller of a sub-agent stopped the turn."""


@dataclass(frozen=True, slots=True)
class NoModel:
    """No model is configured, or one treadle cannot start."""

    why: str


@dataclass(frozen=True, slots=True)
class SandboxUnavailable:
    """Commands must run confined (the person chose a sandbox) and cannot be: ``why``."""

    why: str


@dataclass(frozen=True, slots=True)
class SubAgentEnded:
    """A sub-agent ended in a way its caller cannot go past (blocked, waiting)."""

    name: str
    outcome: TurnOutcome


@dataclass(frozen=True, slots=True)
class SpendingLimitReached:
    """A limit the person set (``--max-cost``…) is spent; ``line`` says which and how much."""

    line: str


@dataclass(frozen=True, slots=True)
class OutputInvalid:
    """The final answer is not a value the output schema allows, after one correction;
    ``error`` is the first thing wrong with it."""

    error: str


@dataclass(frozen=True, slots=True)
class PromptRefused:
    """A UserPromptSubmit hook refused the person's prompt (issue 23): it never joined
    the conversation; ``reason`` is what the hook said."""

    reason: str


TurnEnding = (
    Answered
    | ModelGaveUp
    | Truncated
    | OutOfContext
    | Crashed
    | NeedsApproval
    | NeedsAnswer
    | Stopped
    | NoModel
    | SandboxUnavailable
    | SubAgentEnded
    | SpendingLimitReached
    | OutputInvalid
    | PromptRefused
)


def end_turn(cause: TurnEnding) -> TurnOutcome:
    """The outcome of a turn that ends for ``cause``. The answer text never decides it."""
    match cause:
        case Answered():
            return TurnOutcome(OutcomeKind.FINISHED)
        case ModelGaveUp(error=error):
            return _model_failure(error)
        case Truncated(continuations=continuations):
            detail = f"the answer still hit its token budget after {continuations} continuations"
            return TurnOutcome(OutcomeKind.FAILED, detail, FailureKind.TRUNCATED)
        case OutOfContext(detail=detail):
            return TurnOutcome(OutcomeKind.FAILED, detail, FailureKind.CONTEXT)
        case Crashed(error=error, log=log):
            detail = f"{error} (traceback in {log})" if log else error
            return TurnOutcome(OutcomeKind.FAILED, detail, FailureKind.INTERNAL)
        case NeedsApproval(what=what):
            return TurnOutcome(OutcomeKind.BLOCKED, what)
        case NeedsAnswer(question=question):
            return TurnOutcome(OutcomeKind.WAITING, question)
        case Stopped():
            return TurnOutcome(OutcomeKind.PAUSED)
        case NoModel(why=why) | SandboxUnavailable(why=why):
            return TurnOutcome(OutcomeKind.BLOCKED, why)
        case SpendingLimitReached(line=line):
            return TurnOutcome(OutcomeKind.BLOCKED, line, FailureKind.SPENDING_LIMIT)
        case OutputInvalid(error=error):
            return TurnOutcome(OutcomeKind.FAILED, error, FailureKind.OUTPUT_INVALID)
        case PromptRefused(reason=reason):
            return TurnOutcome(
                OutcomeKind.BLOCKED, f"a UserPromptSubmit hook refused the prompt: {reason}"
            )
        case SubAgentEnded(name=name, outcome=outcome):
            return TurnOutcome(outcome.kind, f"{outcome.detail} (in {name})", outcome.reason)


def _model_failure(error: ModelError) -> TurnOutcome:
    match error:
        case CredentialsRejected(needed=needed):
            return TurnOutcome(OutcomeKind.BLOCKED, needed)
        case TransportError():
            return TurnOutcome(OutcomeKind.FAILED, error.describe(), FailureKind.TRANSPORT)
        case HttpStatusError():
            return TurnOutcome(OutcomeKind.FAILED, error.describe(), FailureKind.HTTP)
        case MalformedStream():
            return TurnOutcome(OutcomeKind.FAILED, error.describe(), FailureKind.MALFORMED)
        case ContextExceeded():
            return TurnOutcome(OutcomeKind.FAILED, error.describe(), FailureKind.CONTEXT)
