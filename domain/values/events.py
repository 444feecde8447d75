"""What happens during a turn, as values: shown on the terminal and kept in the transcript.

Every event names the ``agent`` it belongs to: ``""`` for the main turn, a name such
as ``"agent-1"`` for a sub-agent (``"agent-1/agent-1"`` for one of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage
from treadle.domain.values.model import StopReason
from treadle.domain.values.outcome import TurnOutcome

PlanStatus = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True, slots=True)
class PlanStep:
    step: str
    status: PlanStatus = "pending"


@dataclass(frozen=True, slots=True)
class TurnStarted:
    task: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class MessageAdded:
    """A message joined the conversation (the transcript rebuilds it from these)."""

    message: Message
    agent: str = ""


@dataclass(frozen=True, slots=True)
class RequestSent:
    """A request went out. ``digest`` fingerprints the whole history it carried."""

    number: int
    attempt: int
    max_tokens: int
    message_count: int
    digest: str
    continuation: bool = False
    agent: str = ""


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    text: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning streams in: shown apart from the answer."""

    text: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """A response ended: everything it said, as one value (replay answers with these).
    ``reasoning`` is what it thought, exactly as the protocol wants it back."""

    number: int
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    stop_reason: StopReason
    reasoning: tuple[Reasoning, ...] = ()
    agent: str = ""


@dataclass(frozen=True, slots=True)
class RequestFailed:
    number: int
    attempt: int
    error: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class RetryScheduled:
    """A transient failure will be retried after ``pause`` seconds."""

    attempt: int
    attempts: int
    pause: float
    error: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ContinuationRequested:
    """An answer hit its token budget and is being continued with a bigger one."""

    continuation: int
    max_tokens: int
    agent: str = ""


@dataclass(frozen=True, slots=True)
class UsageUpdated:
    """``request`` is this response's usage, ``turn`` the turn's total so far."""

    request: Usage
    turn: Usage
    requests: int
    agent: str = ""


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    steps: tuple[PlanStep, ...]
    explanation: str = ""
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call: ToolCall
    summary: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call ended. ``status`` is a short line: ``exit 0 · 0.2 s``, ``deadline``…
    ``diff`` is the unified diff of the file a write or an edit changed (issue 14)."""

    call: ToolCall
    status: str
    is_error: bool
    duration: float
    agent: str = ""
    diff: str = ""


@dataclass(frozen=True, slots=True)
class SubAgentStarted:
    name: str
    task: str
    check_interval: float
    deadline: float
    agent: str = ""


@dataclass(frozen=True, slots=True)
class SubAgentProgress:
    """A sub-agent's self-check: what it is doing, requests, tokens and time so far."""

    name: str
    doing: str
    requests: int
    usage: Usage
    elapsed: float
    agent: str = ""


@dataclass(frozen=True, slots=True)
class SubAgentFinished:
    """``ending`` is ``finished``, ``deadline``, ``stopped`` or an outcome's line."""

    name: str
    ending: str
    requests: int
    usage: Usage
    elapsed: float
    agent: str = ""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the person should know that is not part of the conversation: a server
    that drops tools, a sandbox the kernel lacks, a tool server that did not start.
    ``kind`` names it for scripts (``tools_dropped``…); ``text`` says it in one line."""

    kind: str
    text: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """``cost`` is what ``usage`` cost in dollars, where the model's prices are configured."""

    outcome: TurnOutcome
    usage: Usage
    requests: int
    elapsed: float
    agent: str = ""
    cost: float | None = None


TurnEvent = (
    TurnStarted
    | MessageAdded
    | RequestSent
    | AnswerDelta
    | ReasoningDelta
    | ResponseReceived
    | RequestFailed
    | RetryScheduled
    | ContinuationRequested
    | UsageUpdated
    | PlanUpdated
    | ToolStarted
    | ToolFinished
    | SubAgentStarted
    | SubAgentProgress
    | SubAgentFinished
    | Notice
    | TurnEnded
)
