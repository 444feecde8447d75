"""A cheap estimate of how many tokens text takes, for the context window's accounting.

The estimate is UTF-8 bytes divided by 3.5, rounded up: English prose runs at about
4 to 4.5 bytes a token and code at about 3 to 3.5, so the estimate errs on the high
side for prose and is close for code and logs; a CJK character (3 bytes) counts about
one token, as it does in real tokenizers. It is only ever used for what was appended
since the server last counted a prompt (see :mod:`context_window`), so its error does
not build up over a long turn.

Example::

    >>> estimate_tokens("Exit code 0.")
    4
    >>> message_tokens(Message.user("hi"))
    5
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from treadle.domain.values.conversation import Message, Reasoning
from treadle.domain.values.model import ToolSpec

BYTES_PER_TOKEN = 3.5
MESSAGE_OVERHEAD = 4
"""Tokens a message costs beyond its text: its role and the template's separators."""


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes, estimated from its UTF-8 length."""
    if not text:
        return 0
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return -(-size * 2 // 7)  # ceil(size / 3.5) in integers


def message_tokens(message: Message) -> int:
    """Tokens one message takes in a request: its text, its calls, their arguments, and
    the reasoning that goes back with it."""
    tokens = MESSAGE_OVERHEAD + estimate_tokens(message.text_for_model)
    for call in message.tool_calls:
        tokens += MESSAGE_OVERHEAD + estimate_tokens(call.name) + estimate_tokens(call.arguments)
    for reasoning in message.reasoning:
        tokens += reasoning_tokens(reasoning)
    return tokens


def reasoning_tokens(reasoning: Reasoning) -> int:
    """Tokens a piece of reasoning takes when it goes back: its seal (a signature, an
    encrypted item's JSON, OpenRouter's details), and its text where the text itself is
    sent (a thinking block, ``reasoning_content``); a Responses item's summary is inside
    its seal, and an item without its seal is not sent at all."""
    if reasoning.kind == "reasoning_item":
        return estimate_tokens(reasoning.seal)
    sent = reasoning.text if reasoning.kind in ("thinking", "reasoning_content") else ""
    return estimate_tokens(sent) + estimate_tokens(reasoning.seal)


Measure = Callable[[Message], int]
"""How many tokens a message takes: :func:`message_tokens`, or that of the message as
the transcript records it (:func:`measured_as`)."""


def messages_tokens(messages: Sequence[Message], measure: Measure = message_tokens) -> int:
    return sum(measure(message) for message in messages)


def as_is(message: Message) -> Message:
    return message


def measured_as(recorded: Callable[[Message], Message]) -> Measure:
    """The estimate of a message as ``recorded`` makes it (its secrets redacted, as the
    transcript keeps it): a replay, which has only the transcript, estimates the same
    and so sends the same ``max_tokens``. A secret is a few tokens; the estimate's
    margin covers what this leaves out."""
    if recorded is as_is:
        return message_tokens
    return lambda message: message_tokens(recorded(message))


def fixed_tokens(system: str, tools: Sequence[ToolSpec]) -> int:
    """What every request carries before the conversation: the system prompt (with the
    project's instructions) and the tools' descriptions and schemas."""
    tokens = MESSAGE_OVERHEAD + estimate_tokens(system)
    for spec in tools:
        schema = json.dumps(dict(spec.parameters), separators=(",", ":"))
        tokens += MESSAGE_OVERHEAD + estimate_tokens(spec.name + spec.description + schema)
    return tokens
