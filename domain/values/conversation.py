"""The conversation's values: messages, tool calls, tool results and token usage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["user", "assistant", "tool"]

CUT_OFF_NOTE = "[this answer was cut off here]"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. ``arguments`` is the JSON text exactly as it arrived."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the conversation.

    ``interrupted`` marks assistant text cut short by a stop, and tool results that
    were made up because the call never ran to its end.
    """

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    interrupted: bool = False

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
        text: str, tool_calls: tuple[ToolCall, ...] = (), *, interrupted: bool = False
    ) -> Message:
        return Message("assistant", text, tool_calls, interrupted=interrupted)

    @staticmethod
    def tool(
        call_id: str, text: str, *, is_error: bool = False, interrupted: bool = False
    ) -> Message:
        return Message(
            "tool", text, tool_call_id=call_id, is_error=is_error, interrupted=interrupted
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent: what was sent to the model and what it wrote."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens
