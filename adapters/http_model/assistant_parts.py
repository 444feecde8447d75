"""An assistant message's parts in the order the model gave them: its reasoning, its
text, its calls. Each protocol says how it writes each part and which reasoning it
takes back; the order is the same for all.

Example::

    parts = assistant_parts(message, reasoning=thinking_block, text=text_block, call=tool_use)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from treadle.domain.values.conversation import Message, Reasoning, ToolCall

Part = TypeVar("Part")


def assistant_parts(
    message: Message,
    *,
    reasoning: Callable[[Reasoning], Part | None],
    text: Callable[[str], Part | None],
    call: Callable[[ToolCall], Part],
) -> list[Part]:
    """The reasoning that came first, the text, then each call with the reasoning that
    came just before it. ``reasoning`` returns None for reasoning of another protocol,
    ``text`` for text it does not send (none, or an empty string)."""
    calls = message.tool_calls
    by_position: dict[int, list[Part]] = {}
    for thought in message.reasoning:
        part = reasoning(thought)
        if part is not None:
            by_position.setdefault(min(thought.position, len(calls)), []).append(part)
    parts = by_position.pop(0, [])
    said = text(message.text_for_model) if message.text_for_model else None
    if said is not None:
        parts.append(said)
    for number, each in enumerate(calls):
        parts += by_position.pop(number, [])  # after ``number`` calls, before this one
        parts.append(call(each))
    for position in sorted(by_position):  # reasoning after the last call
        parts += by_position[position]
    return parts
