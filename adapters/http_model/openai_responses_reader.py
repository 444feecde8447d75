"""Reading an OpenAI Responses stream into the port's events, as a state machine.

The stream is named events: ``response.created``, then for each output item
``response.output_item.added``, its deltas (``response.output_text.delta``,
``response.function_call_arguments.delta``, ``response.reasoning_summary_text.delta``…)
and ``response.output_item.done`` with the finished item, then one terminal event:
``response.completed``, ``response.incomplete`` (a budget or a filter cut it) or
``response.failed``; an ``error`` event may end it anywhere. There is no ``[DONE]``.

Deltas are shown as they come; each finished item is taken from its ``done`` event,
the one place where a reasoning item's ``encrypted_content`` is whole. Items are
keyed by ``output_index``; an event without one (codex's test servers, some proxies)
names its item by id (``item_id``, or the item's own ``id``), and one with neither
belongs to the item last added and not yet done. A delta for an item that was never
added means the stream cannot be trusted. Event kinds this does not know are skipped.

Example::

    >>> reader = OpenAIResponsesReader()
    >>> reader.read(SseEvent("response.created", '{"type":"response.created"}'))
    []
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from returns.result import Failure, Success

from treadle.adapters.http_model.endpoint import StreamItem
from treadle.adapters.http_model.payload import (
    JsonObject,
    count,
    load_object,
    obj,
    server_error,
    text,
)
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.conversation import Reasoning, ToolCall, Usage
from treadle.domain.values.model import (
    MalformedStream,
    ReasoningReady,
    ReasoningText,
    StopReason,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    TransportError,
    UsageReported,
)

INCOMPLETE_REASONS: dict[str, StopReason] = {
    "max_output_tokens": "max_tokens",
    "content_filter": "refusal",
}
PART_BREAK = "\n\n"
"""Between two parts of a reasoning summary, as the screen shows them."""


class _Malformed(Exception):
    """Leaves a handler at the first sign of a broken stream; never leaves this module."""


@dataclass(slots=True)
class _Item:
    kind: str
    name: str  # how messages name it: its output_index, its id, or its place
    arguments: list[str] = field(default_factory=list)
    streamed: bool = False  # some of its text or reasoning was shown already
    part: object = None  # the summary or content part the last reasoning came from
    done: bool = False


class OpenAIResponsesReader:
    """One response's events, assembled item by item."""

    def __init__(self) -> None:
        self.ended = False
        self.buffered = 0
        self._items: list[_Item] = []
        # Per kind, the items not yet done, latest last (done ones are dropped lazily):
        # what an event that names no item belongs to, found in constant time.
        self._open: dict[str, list[_Item]] = {}
        self._by_index: dict[int, _Item] = {}
        self._by_id: dict[str, _Item] = {}
        self._called = False
        self._refused = False
        self._last = "nothing"
        self._handlers: dict[str, Callable[[JsonObject], list[StreamItem]]] = {
            "response.output_item.added": self._item_added,
            "response.output_text.delta": self._text_delta,
            "response.refusal.delta": self._refusal_delta,
            "response.function_call_arguments.delta": self._arguments_delta,
            "response.reasoning_summary_text.delta": self._reasoning_delta,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.output_item.done": self._item_done,
            "response.completed": self._completed,
            "response.incomplete": self._incomplete,
            "response.failed": self._failed,
            "error": self._error,
        }

    def read(self, event: SseEvent) -> list[StreamItem]:
        payload = load_object(event)
        if isinstance(payload, MalformedStream):
            return self._end([Failure(payload)])
        kind = text(payload.get("type")) or event.name
        self._last = kind
        handler = self._handlers.get(kind)
        if handler is None:
            return []  # created, in_progress, parts, .done echoes, kinds yet to come
        try:
            return handler(payload)
        except _Malformed as malformed:
            return self._end([Failure(MalformedStream(str(malformed)))])

    def end_of_body(self) -> list[StreamItem]:
        # A body that ends cleanly short of its end is a cut stream, as a connection
        # lost mid-answer is: retried while nothing was shown.
        detail = f"the stream ended before response.completed (after {self._last})"
        return [Failure(TransportError("connection_closed", detail))]

    def _end(self, items: list[StreamItem]) -> list[StreamItem]:
        self.ended = True
        return items

    # Items --------------------------------------------------------------------------

    def _key(self, payload: JsonObject) -> int | str | None:
        """What names the event's item: its output_index, else its item's id, else
        nothing (the item is then the one last added and not yet done)."""
        index = payload.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        return text(payload.get("item_id")) or text(obj(payload.get("item")).get("id")) or None

    def _find(self, key: int | str | None, kind: str = "") -> _Item | None:
        """The item ``key`` names; with no key, the last one of ``kind`` not yet done."""
        if isinstance(key, int):
            return self._by_index.get(key)
        if key is not None:
            return self._by_id.get(key)
        waiting = self._open.get(kind, [])
        while waiting and waiting[-1].done:
            waiting.pop()
        return waiting[-1] if waiting else None

    def _add(self, key: int | str | None, kind: str, item_id: str = "") -> _Item:
        """A new item; one added with an index is found by its id too, for a server
        that gives the index on some events and only the id on others."""
        item = _Item(kind or "other", _named(key) if key is not None else f"#{len(self._items)}")
        self._items.append(item)
        self._open.setdefault(item.kind, []).append(item)
        if isinstance(key, int):
            self._by_index[key] = item
        elif key is not None:
            self._by_id[key] = item
        if item_id:
            self._by_id.setdefault(item_id, item)
        return item

    def _item(self, payload: JsonObject, kind: str) -> _Item:
        key = self._key(payload)
        item = self._find(key, kind)
        if item is None and key is None:
            # Nothing names an item and none of its kind is open: it starts its own.
            item = self._add(None, kind)
        if item is None or item.done:
            state = "which is already done" if item is not None else "which was never added"
            raise _Malformed(f"{self._last} for output item {_named(key)}, {state}")
        if item.kind != kind:
            raise _Malformed(
                f"{self._last} for output item {item.name}, which is a {item.kind} item"
            )
        return item

    def _item_added(self, payload: JsonObject) -> list[StreamItem]:
        key = self._key(payload)
        if key is not None and self._find(key) is not None:
            raise _Malformed(f"output item {_named(key)} was added twice")
        added = obj(payload.get("item"))
        self._add(key, text(added.get("type")), text(added.get("id")))
        return []

    def _text_delta(self, payload: JsonObject) -> list[StreamItem]:
        item = self._item(payload, "message")
        delta = text(payload.get("delta"))
        item.streamed = item.streamed or bool(delta)
        return [Success(TextDelta(delta))] if delta else []

    def _refusal_delta(self, payload: JsonObject) -> list[StreamItem]:
        # The model's refusal is its answer: shown like text, reported at the end.
        self._refused = True
        return self._text_delta(payload)

    def _arguments_delta(self, payload: JsonObject) -> list[StreamItem]:
        fragment = text(payload.get("delta"))
        self._item(payload, "function_call").arguments.append(fragment)
        self.buffered += len(fragment)
        return []

    def _reasoning_delta(self, payload: JsonObject) -> list[StreamItem]:
        item = self._item(payload, "reasoning")
        delta = text(payload.get("delta"))
        if not delta:
            return []
        part = (self._last, payload.get("summary_index", payload.get("content_index")))
        if item.streamed and part != item.part:
            delta = PART_BREAK + delta
        item.streamed, item.part = True, part
        return [Success(ReasoningText(delta))]

    def _item_done(self, payload: JsonObject) -> list[StreamItem]:
        key = self._key(payload)
        finished = obj(payload.get("item"))
        kind = text(finished.get("type"))
        item = self._find(key, kind or "other")
        if item is None:
            item = self._add(key, kind, text(finished.get("id")))  # finished whole, never added
        if item.done:
            raise _Malformed(f"output item {item.name} was done twice")
        item.done = True
        match kind:
            case "function_call":
                name = text(finished.get("name"))
                if not name:
                    raise _Malformed(f"function call item {item.name} arrived without a name")
                call_id = text(finished.get("call_id")) or text(finished.get("id"))
                arguments = text(finished.get("arguments")) or "".join(item.arguments) or "{}"
                self._called = True
                return [Success(ToolCallReady(ToolCall(call_id, name, arguments)))]
            case "reasoning":
                readable = _reasoning_text(finished)
                items: list[StreamItem] = []
                if readable and not item.streamed:
                    items.append(Success(ReasoningText(readable)))
                seal = json.dumps(finished, ensure_ascii=False)
                items.append(Success(ReasoningReady(Reasoning("reasoning_item", readable, seal))))
                return items
            case "message" if not item.streamed:
                # A server that sent the message whole, with no deltas: shown now.
                return self._whole_message(finished)
        return []

    def _whole_message(self, message: JsonObject) -> list[StreamItem]:
        items: list[StreamItem] = []
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            part = obj(part)
            if part.get("type") == "refusal":
                self._refused = True
            shown = text(part.get("text")) or text(part.get("refusal"))
            if shown:
                items.append(Success(TextDelta(shown)))
        return items

    # Endings ------------------------------------------------------------------------

    def _completed(self, payload: JsonObject) -> list[StreamItem]:
        unfinished = [
            item.name for item in self._items if item.kind == "function_call" and not item.done
        ]
        if unfinished:
            raise _Malformed(
                f"response.completed while function call {unfinished[0]} is unfinished"
            )
        reason: StopReason = (
            "tool_use" if self._called else "refusal" if self._refused else "end_turn"
        )
        return self._finish(payload, reason, "")

    def _incomplete(self, payload: JsonObject) -> list[StreamItem]:
        why = text(obj(obj(payload.get("response")).get("incomplete_details")).get("reason"))
        reason = INCOMPLETE_REASONS.get(why, "other")
        return self._finish(payload, reason, (why or "incomplete") if reason == "other" else "")

    def _finish(self, payload: JsonObject, reason: StopReason, detail: str) -> list[StreamItem]:
        usage = obj(obj(payload.get("response")).get("usage"))
        items: list[StreamItem] = []
        if usage:
            items.append(Success(UsageReported(responses_usage(usage))))
        items.append(Success(StreamEnd(reason, detail)))
        return self._end(items)

    def _failed(self, payload: JsonObject) -> list[StreamItem]:
        error = obj(obj(payload.get("response")).get("error"))
        return self._end([_reported(error)])

    def _error(self, payload: JsonObject) -> list[StreamItem]:
        # The SDK's type is flat (code, message); servers have been seen nesting it.
        nested = payload.get("error")
        return self._end([_reported(nested if isinstance(nested, dict) else payload)])


def _named(key: int | str | None) -> str:
    """An item as messages name it: ``3`` by its output_index, ``'msg_1'`` by its id."""
    return repr(key) if isinstance(key, str) else str(key)


def _reported(error: JsonObject) -> StreamItem:
    """An error inside the stream, its code (the most specific word) as its kind."""
    kind = text(error.get("code")) or text(error.get("type"))
    kind = "" if kind == "error" else kind  # the flat event's own type says nothing
    return server_error({"type": kind, "message": text(error.get("message"))})


def _reasoning_text(item: JsonObject) -> str:
    """What a person can read of a reasoning item: its summary, or its raw text."""
    parts: list[str] = []
    for name in ("summary", "content"):
        entries = item.get(name)
        for entry in entries if isinstance(entries, list) else []:
            piece = text(obj(entry).get("text"))
            if piece:
                parts.append(piece)
        if parts:
            break
    return PART_BREAK.join(parts)


def responses_usage(usage: JsonObject) -> Usage:
    """Responses usage by kind: cached tokens are part of the input's count, reasoning
    part of the output's."""
    given = obj(usage.get("input_tokens_details"))
    written = obj(usage.get("output_tokens_details"))
    return Usage(
        count(usage.get("input_tokens")),
        count(usage.get("output_tokens")),
        cache_read_tokens=count(given.get("cached_tokens")),
        cache_write_tokens=count(given.get("cache_write_tokens")),
        reasoning_tokens=count(written.get("reasoning_tokens")),
    )
