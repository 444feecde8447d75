"""What a request to the model carries, what its stream yields, and how it fails.

A stream yields ``Success(event)`` items (:data:`StreamEvent`) and ends with a
``StreamEnd`` or a single ``Failure(error)`` (:data:`ModelError`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage

StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "other"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool: its name, purpose and JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one request carries.

    ``continuation`` is the answer text already shown when this request continues a
    response that hit its token budget; the adapter asks the model to go on from
    exactly there (an Anthropic prefill, or the partial answer plus a request to
    continue). ``attempt`` counts from 1; every attempt goes out on a new connection.
    ``tools_allowed`` False still describes the tools (a history with tool calls needs
    them) but asks for an answer without calling any (a sub-agent's final report).
    ``thinking_budget`` is the part of ``max_tokens`` the model may spend thinking
    (0: no extended thinking asked for; only Anthropic's protocol takes a budget).
    ``messages`` is a view of the live history, valid while the request is made:
    copying it on every request would make a long turn quadratic.
    """

    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    max_tokens: int
    continuation: str = ""
    attempt: int = 1
    tools_allowed: bool = True
    thinking_budget: int = 0


# Stream events -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningText:
    """A piece of the model's readable reasoning, as it streams (shown, never answer text)."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningReady:
    """A whole piece of reasoning, as the protocol will want it back (its ``position``
    is set by the loop, from the calls that came before it)."""

    reasoning: Reasoning


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    """A tool call whose arguments have fully arrived."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class UsageReported:
    """The response's usage so far, cumulative: the last report of a stream wins."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class StreamEnd:
    stop_reason: StopReason
    detail: str = ""


StreamEvent = TextDelta | ReasoningText | ReasoningReady | ToolCallReady | UsageReported | StreamEnd


# Failures ------------------------------------------------------------------

TransportKind = Literal[
    "connection_closed",
    "connection_reset",
    "broken_pipe",
    "timeout",
    "network_unreachable",
    "connection_refused",
    "other",
]


@dataclass(frozen=True, slots=True)
class TransportError:
    """The connection failed: ``kind`` says how, ``detail`` is for the person."""

    kind: TransportKind
    detail: str = ""

    def describe(self) -> str:
        return self.detail or self.kind.replace("_", " ")


@dataclass(frozen=True, slots=True)
class HttpStatusError:
    """The server answered with an error status. ``detail`` never holds a key."""

    status: int
    detail: str = ""

    def describe(self) -> str:
        return f"HTTP {self.status}" + (f": {self.detail}" if self.detail else "")


@dataclass(frozen=True, slots=True)
class CredentialsRejected:
    """No key, or a key the server refused; ``needed`` says what to set."""

    needed: str

    def describe(self) -> str:
        return self.needed


@dataclass(frozen=True, slots=True)
class MalformedStream:
    """The answer could not be read: bad JSON, events out of order, a missing end."""

    detail: str

    def describe(self) -> str:
        return self.detail


ModelError = TransportError | HttpStatusError | CredentialsRejected | MalformedStream
