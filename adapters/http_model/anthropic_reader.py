"""Reading an Anthropic Messages stream into the port's events, as a state machine.

The stream is ``message_start``, then per content block ``content_block_start``,
``content_block_delta``… and ``content_block_stop``, then ``message_delta`` (stop
reason, usage) and ``message_stop``. Blocks are numbered from 0 in order; a block
that skips a number or a delta for a block that is not open means the stream cannot
be trusted, and it fails as malformed rather than guessing.

Thinking blocks stream as ``thinking_delta`` pieces (shown as reasoning) and one
``signature_delta``; a ``redacted_thinking`` block comes whole in its start. Each is
handed over as it stops, exactly as received, to be sent back in the tool loop.

A block of a kind this does not know (``server_tool_use`` and ``web_search_tool_result``
of the server's own tools, ``compaction``, ``fallback``, kinds yet to come) takes
whatever deltas its kind has and is left out of the answer: treadle asks for none of the
features that make the API want them back, and such a block never ends a turn.

Example::

    >>> reader = AnthropicReader()
    >>> reader.read(SseEvent("message_start", '{"type":"message_start","message":{}}'))
    []
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

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
    CUT_STOPS,
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

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "context_full",
    "refusal": "refusal",
}
# Anthropic's input_tokens leaves out what was read from or written to the cache;
# the three together are the whole prompt, as OpenAI's prompt_tokens counts it.
_INPUT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class _Malformed(Exception):
    """Leaves a handler at the first sign of a broken stream; never leaves this module."""


@dataclass(slots=True)
class _Block:
    kind: Literal["text", "tool_use", "thinking", "redacted_thinking", "unknown"]
    call_id: str = ""
    name: str = ""
    initial_input: str = ""  # a tool's input given whole; a redacted block's data
    parts: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)  # pieces, joined at the stop
    open: bool = True


class AnthropicReader:
    """One answer's events. ``shown_whitespace`` is the end of a continued answer that
    the prefill had to leave out (Anthropic refuses a prefill ending in whitespace):
    it is already on the screen, so the same characters at the start of the new text
    are dropped instead of shown twice.
    """

    def __init__(self, *, shown_whitespace: str = "") -> None:
        self.ended = False
        self.buffered = 0
        self._skip = shown_whitespace
        self._started = False
        self._blocks: list[_Block] = []
        self._input = dict.fromkeys(_INPUT_FIELDS, 0)
        self._output = 0
        self._thinking_tokens = 0
        self._stop: str | None = None
        self._stop_detail = ""
        self._last = "nothing"
        self._handlers: dict[str, Callable[[JsonObject], list[StreamItem]]] = {
            "content_block_delta": self._block_delta,
            "content_block_start": self._block_start,
            "content_block_stop": self._block_stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
            "error": self._error,
        }

    def read(self, event: SseEvent) -> list[StreamItem]:
        if event.name == "ping":
            return []
        payload = load_object(event)
        if isinstance(payload, MalformedStream):
            return self._end(Failure(payload))
        kind = text(payload.get("type")) or event.name
        self._last = kind
        handler = self._handlers.get(kind)
        if handler is None:
            return []  # an event kind added after this was written: nothing we need is in it
        try:
            return handler(payload)
        except _Malformed as malformed:
            return self._end(Failure(MalformedStream(str(malformed))))

    def end_of_body(self) -> list[StreamItem]:
        # A body that ends cleanly short of its end is a cut stream, as a connection
        # lost mid-answer is: retried while nothing was shown.
        detail = f"the stream ended before message_stop (after {self._last})"
        return [Failure(TransportError("connection_closed", detail))]

    def _end(self, item: StreamItem) -> list[StreamItem]:
        self.ended = True
        return [item]

    def _error(self, payload: JsonObject) -> list[StreamItem]:
        return self._end(server_error(payload.get("error")))

    def _message_start(self, payload: JsonObject) -> list[StreamItem]:
        if self._started:
            raise _Malformed("a second message_start")
        self._started = True
        self._take_usage(obj(obj(payload.get("message")).get("usage")))
        return []

    def _index(self, payload: JsonObject) -> int:
        kind = self._last  # the kind of the event being read
        if not self._started:
            raise _Malformed(f"{kind} before message_start")
        index = payload.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise _Malformed(f"{kind} without a block index")
        return index

    def _open_block(self, payload: JsonObject) -> _Block:
        index = payload.get("index")
        blocks = self._blocks
        # The common case in one test: an int naming an open block (none before start).
        if type(index) is int and 0 <= index < len(blocks) and blocks[index].open:
            return blocks[index]
        index = self._index(payload)
        raise _Malformed(f"{self._last} for block {index}, which is not open")

    def _block_start(self, payload: JsonObject) -> list[StreamItem]:
        index = self._index(payload)
        expected = len(self._blocks)
        if index < expected:
            raise _Malformed(f"content_block_start for block {index}, which already began")
        if index > expected:
            raise _Malformed(f"content_block_start for block {index} before block {expected}")
        start = obj(payload.get("content_block"))
        kind = start.get("type")
        if kind == "text":
            self._blocks.append(_Block("text"))
            return self._text(text(start.get("text")))
        if kind == "tool_use":
            given = start.get("input")
            self._blocks.append(
                _Block(
                    "tool_use",
                    call_id=text(start.get("id")),
                    name=text(start.get("name")),
                    initial_input=json.dumps(given) if given else "",
                )
            )
        elif kind == "thinking":
            block = _Block("thinking", signature=[text(start.get("signature"))])
            self._blocks.append(block)
            return self._thought(block, text(start.get("thinking")))
        elif kind == "redacted_thinking":
            self._blocks.append(_Block("redacted_thinking", initial_input=text(start.get("data"))))
        else:
            # Server-side tool use and kinds yet to come: not ours to show.
            self._blocks.append(_Block("unknown"))
        return []

    def _block_delta(self, payload: JsonObject) -> list[StreamItem]:
        block = self._open_block(payload)
        if block.kind == "unknown":
            return []  # its deltas (input_json_delta of a server tool…) are its own
        delta = obj(payload.get("delta"))
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text":
            return self._text(text(delta.get("text")))
        if kind == "input_json_delta" and block.kind == "tool_use":
            fragment = text(delta.get("partial_json"))
            block.parts.append(fragment)
            self.buffered += len(fragment)
        elif kind == "thinking_delta" and block.kind == "thinking":
            return self._thought(block, text(delta.get("thinking")))
        elif kind == "signature_delta" and block.kind == "thinking":
            signature = text(delta.get("signature"))
            block.signature.append(signature)
            self.buffered += len(signature)
        elif kind in ("text_delta", "input_json_delta", "thinking_delta", "signature_delta"):
            raise _Malformed(f"{kind} for block {payload['index']}, which is a {block.kind} block")
        # Anything else (citations, kinds yet to come) is not part of the answer.
        return []

    def _block_stop(self, payload: JsonObject) -> list[StreamItem]:
        block = self._open_block(payload)
        block.open = False
        if block.kind == "thinking":
            thought = Reasoning("thinking", "".join(block.parts), "".join(block.signature))
            return [Success(ReasoningReady(thought))]
        if block.kind == "redacted_thinking":
            sealed = Reasoning("redacted_thinking", seal=block.initial_input)
            return [Success(ReasoningReady(sealed))]
        if block.kind != "tool_use":
            return []
        # Emitted only now: a call whose block never stops was cut off (see message_stop).
        # Invalid JSON in a finished block goes on as it is; the loop answers it.
        arguments = "".join(block.parts) or block.initial_input or "{}"
        return [Success(ToolCallReady(ToolCall(block.call_id, block.name, arguments)))]

    def _message_delta(self, payload: JsonObject) -> list[StreamItem]:
        delta = obj(payload.get("delta"))
        reason = delta.get("stop_reason")
        if isinstance(reason, str):
            self._stop = reason
        if "stop_details" in delta:  # a later null clears what message_start said
            details = obj(delta.get("stop_details"))
            explanation = text(details.get("explanation"))
            category = text(details.get("category"))
            self._stop_detail = f"{category}: {explanation}" if category else explanation
        self._take_usage(obj(payload.get("usage")))
        return []

    def _message_stop(self, payload: JsonObject) -> list[StreamItem]:
        if self._stop is None:
            raise _Malformed("message_stop without a stop reason (no message_delta)")
        still_open = [
            i for i, block in enumerate(self._blocks) if block.open and block.kind != "unknown"
        ]
        if still_open and STOP_REASONS.get(self._stop) not in CUT_STOPS:
            raise _Malformed(f"message_stop while block {still_open[0]} is still open")
        usage = Usage(
            sum(self._input.values()),
            self._output,
            cache_read_tokens=self._input["cache_read_input_tokens"],
            cache_write_tokens=self._input["cache_creation_input_tokens"],
            reasoning_tokens=self._thinking_tokens,
        )
        reason = STOP_REASONS.get(self._stop, "other")
        detail = self._stop if reason == "other" else self._stop_detail
        self.ended = True
        return [Success(UsageReported(usage)), Success(StreamEnd(reason, detail))]

    def _take_usage(self, usage: JsonObject) -> None:
        # Counts in message_delta are cumulative: each one present replaces the last.
        for name in _INPUT_FIELDS:
            if name in usage:
                self._input[name] = count(usage[name])
        if "output_tokens" in usage:
            self._output = count(usage["output_tokens"])
        details = obj(usage.get("output_tokens_details"))
        if "thinking_tokens" in details:
            self._thinking_tokens = count(details["thinking_tokens"])

    def _thought(self, block: _Block, new: str) -> list[StreamItem]:
        if not new:
            return []
        block.parts.append(new)
        return [Success(ReasoningText(new))]

    def _text(self, new: str) -> list[StreamItem]:
        if self._skip and new:
            new = self._after_shown_whitespace(new)
        return [Success(TextDelta(new))] if new else []

    def _after_shown_whitespace(self, new: str) -> str:
        same = 0
        while same < min(len(new), len(self._skip)) and new[same] == self._skip[same]:
            same += 1
        # All of this delta matched: more of the shown whitespace may follow.
        self._skip = self._skip[same:] if same == len(new) else ""
        return new[same:]
