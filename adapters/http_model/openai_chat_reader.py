"""Reading an OpenAI Chat Completions stream (``chat.completion.chunk``) into the
port's events, as a state machine.

Each chunk carries ``choices[].delta`` fragments; tool calls arrive as fragments
keyed by their ``index`` (id and name first, then pieces of the arguments). The
choice's ``finish_reason`` ends it, a chunk with ``usage`` and empty ``choices``
follows when ``stream_options.include_usage`` was asked for, and ``data: [DONE]``
ends the stream. Only choice 0 is read: treadle asks for one answer, and a server
that sends more is answered with the first.

Example::

    >>> reader = OpenAIChatReader()
    >>> reader.read(SseEvent("", '{"choices":[{"index":0,"delta":{"content":"Hi"}}]}'))
    [<Success: TextDelta(text='Hi')>]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from returns.result import Failure, Success

from treadle.adapters.http_model.exchange import StreamItem
from treadle.adapters.http_model.payload import (
    JsonObject,
    count,
    load_object,
    obj,
    server_error,
    text,
)
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.model import (
    MalformedStream,
    StopReason,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    UsageReported,
)

FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


@dataclass(slots=True)
class _CallParts:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIChatReader:
    """One answer's events, assembled from the fragments of choice 0."""

    def __init__(self) -> None:
        self.ended = False
        self._calls: dict[int, _CallParts] = {}
        self._finish: str | None = None
        self._refused = False
        self._called = False
        self._usage: Usage | None = None
        self._chunks = 0

    def read(self, event: SseEvent) -> list[StreamItem]:
        if event.data == "[DONE]":
            return self._done()
        payload = load_object(event)
        if isinstance(payload, MalformedStream):
            return self._end([Failure(payload)])
        self._chunks += 1
        if "error" in payload or event.name == "error":
            return self._end([server_error(payload.get("error", payload))])
        usage = payload.get("usage")
        if isinstance(usage, dict):
            # Some servers repeat a running total on every chunk; the last one counts.
            self._usage = Usage(
                count(usage.get("prompt_tokens")), count(usage.get("completion_tokens"))
            )
        items: list[StreamItem] = []
        choices = payload.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            choice = obj(choice)
            if choice.get("index", 0) == 0:
                items.extend(self._choice(choice))
        return items

    def end_of_body(self) -> list[StreamItem]:
        if self._finish is not None:
            # Some servers close the stream after the finish chunk without [DONE]; the
            # answer is whole (the usage chunk, if any, came before the close).
            return self._done()
        where = f"after {self._chunks} chunks, before any finish_reason"
        return [Failure(MalformedStream(f"the stream ended before data: [DONE] ({where})"))]

    def _choice(self, choice: JsonObject) -> list[StreamItem]:
        items: list[StreamItem] = []
        delta = obj(choice.get("delta"))
        content = text(delta.get("content"))
        if content:
            items.append(Success(TextDelta(content)))
        # A refusal is the model's answer in its own field: shown like text, so the
        # person reads why, and reported as a refusal at the end.
        refusal = text(delta.get("refusal"))
        if refusal:
            self._refused = True
            items.append(Success(TextDelta(refusal)))
        fragments = delta.get("tool_calls")
        for position, fragment in enumerate(fragments if isinstance(fragments, list) else []):
            self._take_call_fragment(position, obj(fragment))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and self._finish is None:
            self._finish = finish
            items.extend(self._finished_calls(finish))
        return items

    def _take_call_fragment(self, position: int, fragment: JsonObject) -> None:
        index = fragment.get("index", position)
        parts = self._calls.setdefault(index if isinstance(index, int) else position, _CallParts())
        function = obj(fragment.get("function"))
        parts.call_id = parts.call_id or text(fragment.get("id"))
        parts.name = parts.name or text(function.get("name"))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)  # some local servers send the object itself
        if isinstance(arguments, str) and arguments:
            parts.arguments.append(arguments)

    def _finished_calls(self, finish: str) -> list[StreamItem]:
        if finish == "length":
            return []  # arguments cut by the budget: the loop asks again, bigger
        items: list[StreamItem] = []
        for index in sorted(self._calls):
            parts = self._calls[index]
            if not parts.name:
                return self._end(
                    [Failure(MalformedStream(f"tool call {index} arrived without a name"))]
                )
            call = ToolCall(
                parts.call_id or f"call_{index}",
                parts.name,
                "".join(parts.arguments) or "{}",
            )
            items.append(Success(ToolCallReady(call)))
        self._called = bool(items)
        return items

    def _done(self) -> list[StreamItem]:
        if self._finish is None:
            return self._end([Failure(MalformedStream("data: [DONE] before any finish_reason"))])
        reason = FINISH_REASONS.get(self._finish, "other")
        if reason == "end_turn" and self._refused:
            reason = "refusal"
        elif reason == "end_turn" and self._called:
            reason = "tool_use"  # local servers that say "stop" after calling a tool
        items: list[StreamItem] = []
        if self._usage is not None:
            items.append(Success(UsageReported(self._usage)))
        detail = self._finish if reason == "other" else ""
        items.append(Success(StreamEnd(reason, detail)))
        return self._end(items)

    def _end(self, items: list[StreamItem]) -> list[StreamItem]:
        self.ended = True
        return items
