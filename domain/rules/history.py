"""The conversation of one agent: fingerprinted, always sendable, and what it weighs.

Messages are appended as the turn goes; only the context window's rules replace some
(a pruned tool result) or all of them (a compacted conversation). The transcript keeps
every message ever appended, and records each replacement. The encrypted reasoning
kept is bounded as each message is appended (:mod:`kept_reasoning`): what that drops
follows from the messages alone, so it is not recorded, and a history rebuilt from the
same messages drops the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import replace

from treadle.domain.rules import kept_reasoning
from treadle.domain.rules.tokens import Measure, message_tokens
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.text import well_formed

INTERRUPTED_RESULT = "interrupted: the turn was stopped before this call finished"


class History:
    """Messages in order, with a running digest and a running token estimate.

    Both grow with each append instead of going over the whole history on every
    request, so a long turn stays linear: ``tokens_since(n)`` is the estimate of the
    messages from index ``n`` on, at the cost of one subtraction. The digest's state
    after each message is kept too, so that replacing a few messages near the end (a
    pruning) costs what follows them, not the whole conversation.
    """

    seal_bound = kept_reasoning.KEPT_SEAL_BYTES
    """The most encrypted reasoning kept to send back (:mod:`kept_reasoning`)."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: list[Message] = []
        self._call_ids: set[str] = set()
        self._hash = hashlib.sha256()
        self._states = [self._hash.copy()]  # _states[i]: the digest after i messages
        self._tokens = [0]  # _tokens[i]: the estimate of the first i messages
        self._sealed: list[tuple[int, int, int]] = []  # kept seals: message, item, bytes
        self._sealed_bytes = 0
        # Each held message's canonical bytes and estimate, by identity: a pruning or a
        # compaction goes over the messages after its first change again, and most of
        # them are the same objects (what is no longer held is swept: see _forget_gone).
        self._weighed: dict[int, tuple[Message, bytes, int, Measure]] = {}
        self.measure: Measure = message_tokens
        """The estimate of one message (:meth:`measured_by` sets another)."""
        self.listener: Callable[[Message], None] | None = None
        """Told of every message appended from now on (the transcript keeps them)."""
        for message in messages:
            self.append(message)

    def append(self, message: Message) -> None:
        message = self._take(message)
        if self.listener is not None:
            self.listener(message)

    def _take(self, message: Message) -> Message:
        """Append ``message`` as the conversation may keep it, and drop the encrypted
        reasoning it leaves no room for (:mod:`kept_reasoning`)."""
        if message.reasoning:
            message = kept_reasoning.bounded([message], self.seal_bound)[0]
        self._messages.append(message)
        self._account(message)
        self._seal(len(self._messages) - 1, message)
        return message

    def _account(self, message: Message) -> None:
        self._call_ids.update(call.id for call in message.tool_calls)
        weighed = self._weighed.get(id(message))
        if weighed is None or weighed[0] is not message or weighed[3] is not self.measure:
            weighed = (message, _canonical(message), self.measure(message), self.measure)
            self._weighed[id(message)] = weighed
        self._hash.update(weighed[1])
        self._states.append(self._hash.copy())
        self._tokens.append(self._tokens[-1] + weighed[2])

    def _forget_gone(self) -> None:
        """Keep the weights of the messages still held only (after a replacement), once
        those of messages gone outnumber them: the sweep then costs nothing a request."""
        if len(self._weighed) <= 2 * len(self._messages) + 64:
            return
        held = {id(message) for message in self._messages}
        self._weighed = {key: value for key, value in self._weighed.items() if key in held}

    def _seal(self, at: int, message: Message) -> None:
        for item, reasoning in enumerate(message.reasoning):
            if size := kept_reasoning.seal_bytes(reasoning):
                self._sealed.append((at, item, size))
                self._sealed_bytes += size
        if self._sealed_bytes <= self.seal_bound:
            return
        cut = kept_reasoning.first_kept([size for *_, size in self._sealed], self.seal_bound)
        dropped, self._sealed = self._sealed[:cut], self._sealed[cut:]
        self._sealed_bytes -= sum(size for *_, size in dropped)
        items: dict[int, list[int]] = {}
        for index, item, _ in dropped:
            items.setdefault(index, []).append(item)
        for index, each in items.items():
            self._messages[index] = kept_reasoning.without_seals(self._messages[index], each)
        self._account_from(min(items))

    def _account_from(self, first: int) -> None:
        """The digest and estimate again from message ``first`` on (it changed)."""
        del self._states[first + 1 :], self._tokens[first + 1 :]
        self._hash = self._states[first].copy()
        for message in self._messages[first:]:
            self._account(message)

    def _unseal_from(self, first: int) -> None:
        """Forget the kept seals of the messages from ``first`` on (they are replaced)."""
        self._sealed = [entry for entry in self._sealed if entry[0] < first]
        self._sealed_bytes = sum(size for *_, size in self._sealed)

    def replace(self, messages: Iterable[Message]) -> None:
        """Send ``messages`` from now on instead (a compacted or pruned conversation).

        What is unchanged at the start (the same message objects) is kept as it is.
        The listener is not told: the caller records the replacement as one event.
        """
        new = list(messages)
        same, limit = 0, min(len(new), len(self._messages))
        while same < limit and new[same] is self._messages[same]:
            same += 1
        del self._messages[same:], self._states[same + 1 :], self._tokens[same + 1 :]
        self._hash = self._states[same].copy()
        self._unseal_from(same)
        # The calls of the messages replaced are gone: a rebuilt conversation has none.
        self._call_ids = {call.id for message in self._messages for call in message.tool_calls}
        for message in new[same:]:
            self._take(message)
        self._forget_gone()

    def put(self, positions: Sequence[int], messages: Sequence[Message]) -> None:
        """Put ``messages`` in place of those at ``positions`` (stubs for pruned results):
        what comes before the first of them is not gone over again."""
        if not positions:
            return
        first = min(positions)
        tail = self._messages[first:]
        for index, message in zip(positions, messages, strict=True):
            tail[index - first] = message
        del self._messages[first:], self._states[first + 1 :], self._tokens[first + 1 :]
        self._hash = self._states[first].copy()
        self._unseal_from(first)
        for message in tail:
            self._take(message)
        self._forget_gone()

    def measured_by(self, measure: Measure) -> None:
        """Estimate each message with ``measure`` from now on (and those held)."""
        if measure is not self.measure:
            self.measure = measure
            self._account_from(0)

    def tokens_since(self, index: int) -> int:
        """The estimated tokens of the messages from ``index`` on."""
        return self._tokens[-1] - self._tokens[min(max(index, 0), len(self._messages))]

    @property
    def tokens(self) -> int:
        return self._tokens[-1]

    @property
    def messages(self) -> Sequence[Message]:
        return self._messages

    @property
    def call_ids(self) -> Set[str]:
        """The ids of every tool call in the conversation."""
        return self._call_ids

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
    fields: list[object] = [
        message.role,
        message.text,
        [[c.id, c.name, c.arguments] for c in message.tool_calls],
        message.tool_call_id,
        message.is_error,
        message.interrupted,
    ]
    if message.reasoning:  # only then: histories without reasoning keep their digests
        fields.append([[r.kind, r.text, r.seal, str(r.position)] for r in message.reasoning])
    # The digest must never fail, whatever a message holds.
    return json.dumps(fields, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def unique_call(call: ToolCall, *taken: Set[str]) -> ToolCall:
    """``call`` with an id no other call in the conversation has, and well-formed text.

    Results are matched to calls by id, so two calls with one id would lose a result
    (and a provider refuses such a history). A repeated or empty id gets a suffix.

    Example: ``unique_call(ToolCall("c1", "bash", "{}"), {"c1"}).id`` is ``"c1_2"``.
    """
    call = ToolCall(well_formed(call.id), well_formed(call.name), well_formed(call.arguments))
    if call.id and not any(call.id in ids for ids in taken):
        return call
    stem = call.id or "call"
    number = 2
    while any(f"{stem}_{number}" in ids for ids in taken):
        number += 1
    return replace(call, id=f"{stem}_{number}")


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
