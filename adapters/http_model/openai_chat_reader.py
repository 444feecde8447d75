"""Reading an OpenAI Chat Completions stream (``chat.completion.chunk``) into the
port's events, as a state machine.

Each chunk carries ``choices[].delta`` fragments; tool calls arrive as fragments
keyed by their ``index`` (id and name first, then pieces of the arguments). The
choice's ``finish_reason`` ends it, a chunk with ``usage`` and empty ``choices``
follows when ``stream_options.include_usage`` was asked for, and ``data: [DONE]``
ends the stream. Only choice 0 is read: treadle asks for one answer, and a server
that sends more is answered with the first.

Reasoning comes in ``reasoning_content`` deltas (DeepSeek, llama.cpp, older vLLM) or
``reasoning`` ones (OpenRouter, vLLM); OpenRouter adds ``reasoning_details``, signed or
encrypted pieces that must go back unmodified. All of it is handed over when the
choice finishes, before its tool calls.

Example::

    >>> reader = OpenAIChatReader()
    >>> reader.read(SseEvent("", '{"choices":[{"index":0,"delta":{"content":"Hi"}}]}'))
    [<Success: TextDelta(text='Hi')>]
"""

from __future__ import annotations

import json
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

FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


# The fields of a reasoning detail that stream in pieces.
DETAIL_TEXTS = frozenset({"text", "summary", "data", "signature"})


@dataclass(slots=True)
class _CallParts:
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIChatReader:
    """One answer's events, assembled from the fragments of choice 0.

    A cut for length (``finish_reason: length``) is said as ``max_tokens`` whatever its
    size: one short of the budget asked may be the window's (llama.cpp at a full
    context) or a gateway's cap on answers, which the stream cannot tell apart; the loop
    judges it from what it knows of the window (:func:`~treadle.domain.rules.
    context_window.cut_kind`)."""

    def __init__(self) -> None:
        self.ended = False
        self.buffered = 0
        self._calls: dict[int, _CallParts] = {}
        self._finish: str | None = None
        self._refused = False
        self._called = False
        self._usage: Usage | None = None
        self._chunks = 0
        self._reasoning: list[str] = []
        self._details: dict[int, JsonObject] = {}
        self._detail_texts: dict[int, dict[str, list[str]]] = {}  # pieces, joined at the end

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
            self._usage = chat_usage(usage)
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
        # A body that ends cleanly short of its end is a cut stream, as a connection
        # lost mid-answer is: retried while nothing was shown.
        where = f"after {self._chunks} chunks, before any finish_reason"
        detail = f"the stream ended before data: [DONE] ({where})"
        return [Failure(TransportError("connection_closed", detail))]

    def _choice(self, choice: JsonObject) -> list[StreamItem]:
        items: list[StreamItem] = []
        delta = obj(choice.get("delta"))
        thought = text(delta.get("reasoning_content")) or text(delta.get("reasoning"))
        if thought:
            self._reasoning.append(thought)
            items.append(Success(ReasoningText(thought)))
        details = delta.get("reasoning_details")
        for detail in details if isinstance(details, list) else []:
            self._take_detail(obj(detail))
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
            items.extend(self._finished_reasoning())
            items.extend(self._finished_calls(finish))
        return items

    def _take_detail(self, detail: JsonObject) -> None:
        """A piece of a reasoning detail: pieces of one index are one detail, their
        texts joined in order (OpenRouter streams a signed text in many pieces); its
        other fields (type, format, id) are those it first came with."""
        index = detail.get("index", len(self._details))
        index = index if isinstance(index, int) else len(self._details)
        whole = self._details.setdefault(index, {})
        texts = self._detail_texts.setdefault(index, {})
        for name, value in detail.items():
            if name in DETAIL_TEXTS and isinstance(value, str):
                whole.setdefault(name, None)  # its place among the fields
                texts.setdefault(name, []).append(value)
                self.buffered += len(value)
            elif whole.get(name) is None:
                whole[name] = value

    def _finished_reasoning(self) -> list[StreamItem]:
        items: list[StreamItem] = []
        if self._reasoning:
            thought = Reasoning("reasoning_content", "".join(self._reasoning))
            items.append(Success(ReasoningReady(thought)))
        if self._details:
            details = [
                self._details[index] | {n: "".join(p) for n, p in self._detail_texts[index].items()}
                for index in sorted(self._details)
            ]
            sealed = Reasoning("reasoning_details", seal=json.dumps(details, ensure_ascii=False))
            items.append(Success(ReasoningReady(sealed)))
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
            self.buffered += len(arguments)

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


def chat_usage(usage: JsonObject) -> Usage:
    """Chat Completions usage by kind: cached tokens are part of the prompt's count,
    reasoning part of the completion's (DeepSeek says cache hits in its own field)."""
    prompt = obj(usage.get("prompt_tokens_details"))
    completion = obj(usage.get("completion_tokens_details"))
    return Usage(
        count(usage.get("prompt_tokens")),
        count(usage.get("completion_tokens")),
        cache_read_tokens=count(prompt.get("cached_tokens"))
        or count(usage.get("prompt_cache_hit_tokens")),
        cache_write_tokens=count(prompt.get("cache_write_tokens")),
        reasoning_tokens=count(completion.get("reasoning_tokens")),
    )
