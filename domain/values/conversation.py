"""The conversation's values: messages, tool calls, tool results, reasoning and token usage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["user", "assistant", "tool"]
ReasoningKind = Literal[
    "thinking", "redacted_thinking", "reasoning_content", "reasoning_details", "reasoning_item"
]

CUT_OFF_NOTE = "[this answer was cut off here]"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. ``arguments`` is the JSON text exactly as it arrived."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reasoning:
    """What the model thought before it answered, kept exactly as it arrived: some
    protocols refuse a tool loop unless it comes back unchanged.

    ``kind`` says whose it is, and so which adapter sends it back: Anthropic's
    ``thinking`` and ``redacted_thinking`` blocks, Chat Completions' ``reasoning_content``
    (and OpenRouter's ``reasoning_details``), a Responses ``reasoning_item``. ``text`` is
    what a person can read of it (empty when it is redacted or encrypted); ``seal`` is
    what only the server reads: a thinking block's signature, a redacted block's data,
    the details or the Responses item as their JSON text.
    ``position`` is how many of the message's tool calls came before it.

    Example: ``Reasoning("thinking", "The test needs a fixture.", seal="EqQB…")``.
    """

    kind: ReasoningKind
    text: str = ""
    seal: str = ""
    position: int = 0


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the conversation.

    ``interrupted`` marks assistant text cut short by a stop, and tool results that
    were made up because the call never ran to its end. ``reasoning`` is what an
    assistant thought on the way to this message, in the order it came.
    """

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    interrupted: bool = False
    reasoning: tuple[Reasoning, ...] = ()

    @property
    def text_for_model(self) -> str:
        """The text as the model reads it again: an interrupted answer says it was cut."""
        if self.role != "assistant" or not self.interrupted or not self.text:
            return self.text
        return f"{self.text}\n\n{CUT_OFF_NOTE}"

    @staticmethod
    def user(text: str) -> Message:
        return Message("user", text)

    @staticmethod
    def assistant(
        text: str,
        tool_calls: tuple[ToolCall, ...] = (),
        *,
        interrupted: bool = False,
        reasoning: tuple[Reasoning, ...] = (),
    ) -> Message:
        return Message("assistant", text, tool_calls, interrupted=interrupted, reasoning=reasoning)

    @staticmethod
    def tool(
        call_id: str, text: str, *, is_error: bool = False, interrupted: bool = False
    ) -> Message:
        return Message(
            "tool", text, tool_call_id=call_id, is_error=is_error, interrupted=interrupted
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent, by kind.

    ``input_tokens`` is the whole prompt as the server counted it, cached parts
    included; ``cache_read_tokens`` and ``cache_write_tokens`` are the parts of it read
    from and written to the prompt cache. ``output_tokens`` is all the model wrote;
    ``reasoning_tokens`` is the part of it spent reasoning.

    Example: ``Usage(1000, 50, cache_read_tokens=900).uncached_input_tokens`` is 100.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """The input neither read from nor written to the cache, billed at the base price."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)
