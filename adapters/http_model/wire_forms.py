"""Each message's wire form made once, and a request's body joined from them.

A turn sends its whole history with every request: building and encoding every past
message again each time would make a long turn quadratic. :class:`WireForms` keeps the
forms of the messages of the last request (per conversation: a sub-agent has its own
history) and makes only the new ones; :func:`encoded_body` then joins the body from
pieces already encoded, byte for byte what ``json.dumps(body).encode()`` would give.

A form must depend on the message's value alone (and on settings fixed for the
cache): a message equal to one already seen has the same form.

Example::

    forms = WireForms(lambda message: json.dumps({"content": message.text}).encode())
    body = encoded_body({"model": "m", "messages": None}, "messages", forms.of(messages))
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from treadle.domain.values.conversation import Message

Form = TypeVar("Form")
T = TypeVar("T")

LANES = 8
"""How many conversations (the main one, sub-agents', a compaction's) keep their forms."""


class _Lane(Generic[Form]):
    """One conversation's last request: its messages, their forms, and (bytes forms)
    the first ``joined`` of those forms joined already, as ``prefix``."""

    __slots__ = ("forms", "joined", "messages", "prefix")

    def __init__(self, messages: list[Message], forms: list[Form]) -> None:
        self.messages = messages
        self.forms = forms
        self.joined = 0
        self.prefix = b""


class WireForms(Generic[Form]):
    """The forms of a request's messages: those of the last request of the same
    conversation reused, the rest made by ``make``.

    What is reused is found at C speed: the longest common prefix of the two lists
    (compared by identity, or by value where two messages are equal); past it (a
    pruned result, a compaction), each message is looked up by identity."""

    def __init__(self, make: Callable[[Message], Form]) -> None:
        self._make = make
        # Keyed by the identity of a conversation's first message (kept alive in it).
        self._lanes: dict[int, _Lane[Form]] = {}

    def of(self, messages: Sequence[Message]) -> list[Form]:
        return self._lane(messages).forms

    def _lane(self, messages: Sequence[Message]) -> _Lane[Form]:
        current = list(messages)
        if not current:
            return _Lane([], [])
        key = id(current[0])
        old = self._lanes.pop(key, None) or _Lane([], [])
        kept = common_prefix(old.messages, current)
        forms = old.forms[:kept]
        if kept < len(current):
            known: dict[int, Form] = {}
            if kept < len(old.messages):
                known = {id(m): f for m, f in zip(old.messages, old.forms, strict=True)}
            for message in current[kept:]:
                form = known.get(id(message))
                forms.append(self._make(message) if form is None else form)
        lane = self._lanes[key] = _Lane(current, forms)
        if old.joined <= kept:
            lane.joined, lane.prefix = old.joined, old.prefix
        if len(self._lanes) > LANES:
            del self._lanes[next(iter(self._lanes))]  # the one used longest ago
        return lane


REJOIN = 64
"""How many new forms a conversation takes before its joined prefix is made again."""


class WireBytes(WireForms[bytes]):
    """Forms that are JSON (none, one or several items of an array, joined by ", "),
    handed out with most of them joined already: a request then copies one prefix
    instead of going through every message."""

    def items(self, messages: Sequence[Message]) -> list[bytes]:
        """The non-empty pieces of the array, in order, to be joined by ", "."""
        lane = self._lane(messages)
        if len(lane.forms) - lane.joined > REJOIN:
            lane.joined = len(lane.forms)
            lane.prefix = b", ".join(filter(None, lane.forms))
        rest = list(filter(None, lane.forms[lane.joined :]))
        return [lane.prefix, *rest] if lane.prefix else rest


def common_prefix(old: list[T], new: list[T]) -> int:
    """How many leading items ``old`` and ``new`` share (list comparison: C speed, the
    same object taken as equal without asking it)."""
    size = min(len(old), len(new))
    if old[:size] == new[:size]:
        return size
    low, high = 0, size  # old[:low] == new[:low], old[:high] != new[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if old[:middle] == new[:middle]:
            low = middle
        else:
            high = middle
    return low


def encoded(value: Any) -> bytes:
    """``value`` as a request body encodes it (``json.dumps`` defaults: ASCII)."""
    return json.dumps(value).encode()


def encoded_list(items: Iterable[bytes]) -> bytes:
    """A JSON array of items already encoded, as ``json.dumps`` writes one."""
    return b"[" + b", ".join(items) + b"]"


def encoded_body(body: dict[str, Any], key: str, items: Iterable[bytes]) -> bytes:
    """``json.dumps(body).encode()``, ``body[key]`` being the array of ``items``,
    each already encoded (whatever ``body[key]`` holds is not looked at).

    One join makes the whole body: a body grows to megabytes, and each ``+`` of two
    would copy it again (into fresh pages, dearer still than the copy)."""
    pieces: list[bytes] = [b"{"]
    for name, value in body.items():
        if len(pieces) > 1:
            pieces.append(b", ")
        pieces += (encoded(name), b": ")
        if name != key:
            pieces.append(encoded(value))
            continue
        listed = list(items)
        # The items with ", " between them, put in place by slices (no loop per item).
        spaced: list[bytes] = [b", "] * (2 * len(listed) - 1) if listed else []
        spaced[::2] = listed
        pieces.append(b"[")
        pieces += spaced
        pieces.append(b"]")
    pieces.append(b"}")
    return b"".join(pieces)
