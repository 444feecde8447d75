"""What the HTTP adapter tests share: the fixture files, a request, and what a stream said."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from returns.result import Failure, Result, Success

from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage
from treadle.domain.values.model import (
    ModelError,
    ModelRequest,
    ReasoningReady,
    ReasoningText,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolSpec,
    UsageReported,
)

STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "streams"
KEY = "sk-test-3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


def stream_file(name: str) -> bytes:
    """A fixture, e.g. ``stream_file("anthropic/basic_response.sse")``."""
    return (STREAMS / name).read_bytes()


def a_request(
    *,
    messages: Sequence[Message] = (Message.user("What is the weather in Paris?"),),
    tools: Sequence[ToolSpec] = (),
    continuation: str = "",
    max_tokens: int = 1024,
    system: str = "You are terse.",
) -> ModelRequest:
    return ModelRequest(
        system=system,
        messages=tuple(messages),
        tools=tuple(tools),
        max_tokens=max_tokens,
        continuation=continuation,
    )


@dataclass
class Heard:
    """Everything a stream yielded, in order, and sorted by kind."""

    items: list[Result[StreamEvent, ModelError]] = field(default_factory=list)

    @property
    def events(self) -> list[StreamEvent]:
        return [item.unwrap() for item in self.items if isinstance(item, Success)]

    @property
    def deltas(self) -> list[str]:
        return [event.text for event in self.events if isinstance(event, TextDelta)]

    @property
    def text(self) -> str:
        return "".join(self.deltas)

    @property
    def thoughts(self) -> str:
        """The reasoning text shown, all of it."""
        return "".join(event.text for event in self.events if isinstance(event, ReasoningText))

    @property
    def reasoning(self) -> list[Reasoning]:
        """The reasoning handed over to be kept, in order."""
        return [event.reasoning for event in self.events if isinstance(event, ReasoningReady)]

    @property
    def calls(self) -> list[ToolCall]:
        return [event.call for event in self.events if isinstance(event, ToolCallReady)]

    @property
    def usage(self) -> Usage | None:
        reported = [event.usage for event in self.events if isinstance(event, UsageReported)]
        return reported[-1] if reported else None

    @property
    def end(self) -> StreamEnd | None:
        last = self.items[-1] if self.items else None
        match last:
            case Success(StreamEnd() as end):
                return end
        return None

    @property
    def failure(self) -> ModelError | None:
        failures = [item.failure() for item in self.items if isinstance(item, Failure)]
        assert len(failures) <= 1, f"more than one failure: {failures}"
        if failures:
            assert isinstance(self.items[-1], Failure), "a failure must be the last item"
        return failures[0] if failures else None


async def listen(stream: AsyncIterator[Result[StreamEvent, ModelError]]) -> Heard:
    heard = Heard()
    async for item in stream:
        heard.items.append(item)
    return heard


def anthropic_text_stream(deltas: Sequence[str], *, stop: str = "end_turn") -> bytes:
    """A well-formed Anthropic stream of one text block made of ``deltas``."""
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 9}}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        *[
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            )
            for text in deltas
        ],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": len(deltas)},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


def openai_text_stream(deltas: Sequence[str], *, finish: str = "stop") -> bytes:
    """A well-formed Chat Completions stream of ``deltas``, with usage and [DONE]."""

    def chunk(delta: dict[str, str], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return f"data: {json.dumps({'object': 'chat.completion.chunk', 'choices': [choice]})}\n\n"

    usage = {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": len(deltas)}}
    return "".join(
        [
            chunk({"role": "assistant", "content": ""}),
            *[chunk({"content": text}) for text in deltas],
            chunk({}, finish),
            f"data: {json.dumps(usage)}\n\n",
            "data: [DONE]\n\n",
        ]
    ).encode()


def responses_text_stream(deltas: Sequence[str], *, incomplete: bool = False) -> bytes:
    """A well-formed Responses stream of one message made of ``deltas``; cut by its
    ``max_output_tokens`` when ``incomplete``."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    text = "".join(deltas)
    finished = {**message, "content": [{"type": "output_text", "text": text, "annotations": []}]}
    end = "response.incomplete" if incomplete else "response.completed"
    response: dict[str, object] = {
        "status": "incomplete" if incomplete else "completed",
        "usage": {"input_tokens": 9, "output_tokens": len(deltas)},
    }
    if incomplete:
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    events = [
        ("response.created", {"type": "response.created", "response": {"status": "in_progress"}}),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": message},
        ),
        *[
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": delta,
                },
            )
            for delta in deltas
        ],
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": finished},
        ),
        (end, {"type": end, "response": response}),
    ]
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )
