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
        if not messages:
            return _Lane([], [])
        key = id(messages[0])
        lane = self._lanes.pop(key, None) or _Lane([], [])
        self._lanes[key] = lane
        if len(self._lanes) > LANES:
            del self._lanes[next(iter(self._lanes))]  # the one used longest ago
        size = len(lane.messages)
        if _extends(lane.messages, messages):  # the usual case: new messages at the end
            lane.forms += map(self._make, lane.messages[size:])
            return lane
        old, forms = lane.messages, lane.forms
        lane.messages = list(messages)
        kept = common_prefix(old, lane.messages)
        lane.forms = forms[:kept]
        if kept < len(old):
            # A message changed (a pruned result, a compaction): past it, each message
            # is looked up by identity among the last request's.
            known = {id(m): f for m, f in zip(old, forms, strict=True)}
            for message in lane.messages[kept:]:
                form = known.get(id(message))
                lane.forms.append(self._make(message) if form is None else form)
        else:
            lane.forms += map(self._make, lane.messages[kept:])
        if lane.joined > kept:
            lane.joined, lane.prefix = 0, b""
        return lane


def _extends(own: list[Any], new: Sequence[Any]) -> bool:
    """Whether ``new`` is a list that extends ``own``; if so, ``own`` takes the new
    items (and only then). Touches only those: one list comparison checks the rest
    by identity, at C speed, never looking inside an item that is the same object."""
    size = len(own)
    if type(new) is not list or len(new) < size:
        return False
    own += new[size:]
    if own == new:
        return True
    del own[size:]
    return False


def follow(own: list[T], new: Sequence[T]) -> int:
    """Make ``own`` a copy of ``new`` in place; how many leading items it kept.

    The usual case, ``new`` a list that extends ``own``, touches only the new items
    (:func:`_extends`). Copying or slicing the whole of either list instead would
    touch every message of a long turn at every request, scattered in memory: most of
    what a request of a 4,000-message turn spent."""
    size = len(own)
    if _extends(own, new):
        return size
    current = list(new)
    kept = common_prefix(own, current)
    own[kept:] = current[kept:]
    return kept


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
