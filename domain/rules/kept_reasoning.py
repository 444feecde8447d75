"""How much encrypted reasoning a conversation keeps to send back.

A Responses reasoning item (``reasoning_item``) comes back with its
``encrypted_content``, which only the server can read, and goes back with every later
request of the conversation. The server takes a request without it (its reasoning is
then not carried over), so it is the one kind of reasoning that can be left out: the
others are either small or wanted back (Anthropic refuses a tool loop whose thinking
block is missing).

Nothing else bounds it: a server (or something between) that hands back 15 MiB a
answer makes every later request 15 MiB larger. So a conversation keeps at most
:data:`KEPT_SEAL_BYTES` of it, the newest first (the reasoning behind the calls being
answered is what helps the model most): going back from the newest item, each is kept
while the total stays within the bound, and the first that does not fit is dropped with
every older one. An item larger than the bound alone is never kept, and it is not
counted: it is dropped as it arrives. A dropped item
keeps its summary, the text a person reads, and loses its seal: it is no longer sent
(a reasoning item without its encrypted content would be looked up by its id, which a
``store: false`` conversation does not have).

Example::

    >>> sizes = [600_000, 300_000, 500_000]
    >>> first_kept(sizes, bound=1_000_000)
    1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from treadle.domain.values.conversation import Message, Reasoning

KEPT_SEAL_BYTES = 1 << 20
"""The most encrypted reasoning (its items' JSON text) one conversation sends back: 1 MiB,
some 300,000 tokens by the estimate, more than any answer's reasoning (a real item
holds a few kilobytes for each thousand tokens of thought) and less than a window."""


def droppable(reasoning: Reasoning) -> bool:
    """Whether ``reasoning`` is encrypted reasoning the server can do without."""
    return reasoning.kind == "reasoning_item" and bool(reasoning.seal)


def seal_bytes(reasoning: Reasoning) -> int:
    """What ``reasoning`` adds to every request while it is kept (0 if it cannot be
    dropped): its seal's length, the JSON text that goes back."""
    return len(reasoning.seal) if droppable(reasoning) else 0


def unsealed(reasoning: Reasoning) -> Reasoning:
    """``reasoning`` without its seal: its summary stays, nothing of it is sent."""
    return replace(reasoning, seal="")


def kept_on_arrival(reasoning: Reasoning, bound: int = KEPT_SEAL_BYTES) -> Reasoning:
    """Reasoning as it may be kept at all: one item over the bound never is."""
    return unsealed(reasoning) if seal_bytes(reasoning) > bound else reasoning


def first_kept(sizes: Sequence[int], bound: int = KEPT_SEAL_BYTES) -> int:
    """Of items of these sizes (oldest first), the index of the oldest one kept: the
    newest ones whose total stays within ``bound`` are, the others not."""
    total = 0
    for index in range(len(sizes) - 1, -1, -1):
        total += sizes[index]
        if total > bound:
            return index + 1
    return 0


def without_seals(message: Message, items: Sequence[int]) -> Message:
    """``message`` with the seals of its reasoning at ``items`` (indexes) dropped."""
    drop = set(items)
    reasoning = tuple(
        unsealed(r) if index in drop else r for index, r in enumerate(message.reasoning)
    )
    return replace(message, reasoning=reasoning)


def bounded(messages: Sequence[Message], bound: int = KEPT_SEAL_BYTES) -> list[Message]:
    """``messages`` with only the encrypted reasoning they may keep (the same message
    objects where nothing is dropped): what a conversation holds after each of them
    was appended in turn (an item over the bound alone was never kept)."""
    messages = [_arrived(message, bound) for message in messages]
    sealed = [
        (at, item, seal_bytes(r))
        for at, message in enumerate(messages)
        for item, r in enumerate(message.reasoning)
        if droppable(r)
    ]
    cut = first_kept([size for _, _, size in sealed], bound)
    dropped: dict[int, list[int]] = {}
    for at, item, _ in sealed[:cut]:
        dropped.setdefault(at, []).append(item)
    return [
        without_seals(message, dropped[at]) if at in dropped else message
        for at, message in enumerate(messages)
    ]


def _arrived(message: Message, bound: int) -> Message:
    over = [i for i, r in enumerate(message.reasoning) if seal_bytes(r) > bound]
    return without_seals(message, over) if over else message
