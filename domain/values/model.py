"""What a request to the model carries, what its stream yields, and how it fails.

A stream yields ``Success(event)`` items (:data:`StreamEvent`) and ends with a
``StreamEnd`` or a single ``Failure(error)`` (:data:`ModelError`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage
from treadle.domain.values.notices import NoticeKind

StopReason = Literal["end_turn", "tool_use", "max_tokens", "context_full", "refusal", "other"]
"""``max_tokens``: the answer hit its output budget; ``context_full``: the server said
the context window filled up while it wrote (Anthropic's ``model_context_window_exceeded``)."""

CUT_STOPS: frozenset[StopReason] = frozenset({"max_tokens", "context_full"})
"""Stops that cut an answer short: its calls may be cut too, and none of them runs."""


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
    output_schema: Mapping[str, object] | None = None
    """The JSON Schema the final answer must meet (``--output-schema``), for a provider
    that constrains its output to one; treadle validates the answer either way."""


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

    def unusual(self) -> str:
        """What the person should be told of an answer that ended this way, in one line;
        "" for the ends that say it themselves (an answer, tool calls, a cut that is
        continued or named). ``detail`` names a stop reason treadle does not know."""
        if self.stop_reason == "refusal":
            return "the model refused: its answer stops where it is shown"
        if self.stop_reason == "other":
            reason = self.detail or "none given"
            return f"the answer ended for a reason treadle does not know ({reason}); taken as done"
        return ""


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
    """The server answered with an error status. ``detail`` never holds a key.

    ``mid_stream``: the error came as an event inside a stream that began with 200 OK;
    ``status`` is then the one its code or kind stands for (``overloaded_error``: 503),
    read by the retry rules and never shown as if the server had sent it.
    """

    status: int
    detail: str = ""
    mid_stream: bool = False

    def describe(self) -> str:
        said = f": {self.detail}" if self.detail else ""
        return (ERROR_EVENT if self.mid_stream else f"HTTP {self.status}") + said


ERROR_EVENT = "the server sent an error event mid-stream"
"""How an error that came inside a stream is described, so that a recorded one reads back."""


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


@dataclass(frozen=True, slots=True)
class ContextExceeded:
    """The server refused the request as too long for its context window.

    Each adapter recognises its provider's refusal (OpenAI ``context_length_exceeded``,
    Anthropic "prompt is too long", llama.cpp ``exceed_context_size_error``, vLLM's
    "maximum context length"…). ``window`` and ``prompt_tokens`` are the figures the
    server named, when it named them; ``output_too`` says that the prompt fits and only
    the prompt and the output budget together do not (old vLLM, old Anthropic).
    Not a transient failure: the loop learns the window, compacts and sends again.
    """

    detail: str = ""
    window: int | None = None
    prompt_tokens: int | None = None
    output_too: bool = False

    def describe(self) -> str:
        figures = []
        if self.window is not None:
            figures.append(f"window {self.window}")
        if self.prompt_tokens is not None:
            figures.append(f"prompt {self.prompt_tokens}")
        if self.output_too:
            figures.append("with the output budget")
        named = f" ({', '.join(figures)})" if figures else ""
        return (
            f"{CONTEXT_EXCEEDED}{named}: {self.detail}" if self.detail else CONTEXT_EXCEEDED + named
        )


CONTEXT_EXCEEDED = "context window exceeded"
"""How :meth:`ContextExceeded.describe` starts, so that a recorded failure reads back."""


ModelError = (
    TransportError | HttpStatusError | CredentialsRejected | MalformedStream | ContextExceeded
)


# What the server says about the model ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContextWindow:
    """How many tokens a request (prompt and answer together) may hold, and who said so:
    the configuration, the server, the table of known models, or a refusal."""

    tokens: int
    origin: str


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What a model's server says about it when asked: its window (None when it does
    not say) and warnings as ``(kind, text)``, e.g. a template that drops the tools."""

    window: ContextWindow | None = None
    warnings: tuple[tuple[NoticeKind, str], ...] = ()
