"""The conversation of one agent: append-only, fingerprinted, always sendable."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence

from treadle.domain.values.conversation import Message, ToolCall

INTERRUPTED_RESULT = "interrupted: the turn was stopped before this call finished"


class History:
    """Messages in order, with a running digest of everything appended.

    The digest grows with each append instead of hashing the whole history on every
    request, so a long turn stays linear.
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: list[Message] = []
        self._hash = hashlib.sha256()
        self.listener: Callable[[Message], None] | None = None
        """Told of every message appended from now on (the transcript keeps them)."""
        for message in messages:
            self.append(message)

    def append(self, message: Message) -> None:
        self._messages.append(message)
        self._hash.update(_canonical(message))
        if self.listener is not None:
            self.listener(message)

    @property
    def messages(self) -> Sequence[Message]:
        return self._messages

    @property
    def digest(self) -> str:
        return self._hash.copy().hexdigest()[:16]

    def __len__(self) -> int:
        return len(self._messages)

    def last_assistant_text(self) -> str:
        for message in reversed(self._messages):
            if message.role == "assistant" and message.text:
                return message.text
        return ""


def _canonical(message: Message) -> bytes:
    fields = [
        message.role,
        message.text,
        [[c.id, c.name, c.arguments] for c in message.tool_calls],
        message.tool_call_id,
        message.is_error,
        message.interrupted,
    ]
    return json.dumps(fields, ensure_ascii=False).encode() + b"\n"


def unanswered_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """Tool calls the model asked for that have no result yet."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    return [
        call
        for m in messages
        if m.role == "assistant"
        for call in m.tool_calls
        if call.id not in answered
    ]


def close_unanswered(history: History) -> list[Message]:
    """Give every unanswered call a synthetic "interrupted" result, so the next request is valid."""
    added = [
        Message.tool(call.id, INTERRUPTED_RESULT, is_error=True, interrupted=True)
        for call in unanswered_calls(history.messages)
    ]
    for message in added:
        history.append(message)
    return added


def is_sendable(messages: Sequence[Message]) -> bool:
    """Every tool call is answered, right after the message that asked for it."""
    pending: set[str] = set()
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in pending:
                return False
            pending.discard(message.tool_call_id)
        elif pending:
            return False
        if message.role == "assistant":
            pending = {call.id for call in message.tool_calls}
    return not pending
