"""The readers as pure state machines, on what the recordings do not show: thinking
blocks at their edges, reasoning deltas of each server, and the Responses API's item
events — events in, port events out, no socket."""

from __future__ import annotations

import json
from typing import Any

import pytest
from returns.result import Failure

from tests.adapters.http.test_http_readers import (
    DONE,
    START,
    STOP,
    anthropic,
    block_stop,
    chunk,
    feed,
    malformed,
    message_delta,
    text_block,
    text_delta,
)
from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.endpoint import StreamItem
from treadle.adapters.http_model.openai_chat_reader import OpenAIChatReader
from treadle.adapters.http_model.openai_responses_reader import OpenAIResponsesReader
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.conversation import Reasoning, ToolCall, Usage
from treadle.domain.values.model import (
    HttpStatusError,
    ReasoningReady,
    ReasoningText,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    TransportError,
    UsageReported,
)

# Anthropic thinking ------------------------------------------------------------------


def thinking_block(index: int) -> SseEvent:
    block = {"type": "thinking", "thinking": "", "signature": ""}
    return anthropic("content_block_start", index=index, content_block=block)


def thinking_delta(index: int, text: str) -> SseEvent:
    delta = {"type": "thinking_delta", "thinking": text}
    return anthropic("content_block_delta", index=index, delta=delta)


def signature_delta(index: int, signature: str) -> SseEvent:
    delta = {"type": "signature_delta", "signature": signature}
    return anthropic("content_block_delta", index=index, delta=delta)


def values(items: list[StreamItem]) -> list[object]:
    return [item.unwrap() for item in items]


def test_a_thinking_block_is_shown_as_it_streams_and_handed_over_whole_when_it_stops() -> None:
    items = feed(
        AnthropicReader(),
        START,
        thinking_block(0),
        thinking_delta(0, "First, "),
        thinking_delta(0, "the tests."),
        signature_delta(0, "EqQB"),
        signature_delta(0, "CgIY"),  # a signature in two pieces is still one signature
        block_stop(0),
        text_block(1),
        text_delta(1, "Done."),
        block_stop(1),
        message_delta("end_turn"),
        STOP,
    )
    assert values(items) == [
        ReasoningText("First, "),
        ReasoningText("the tests."),
        ReasoningReady(Reasoning("thinking", "First, the tests.", "EqQBCgIY")),
        TextDelta("Done."),
        UsageReported(Usage(5, 7)),
        StreamEnd("end_turn"),
    ]


def test_a_thinking_block_cut_by_the_budget_is_not_kept() -> None:
    items = feed(
        AnthropicReader(),
        START,
        thinking_block(0),
        thinking_delta(0, "Hmm"),
        message_delta("max_tokens"),
        STOP,
    )
    assert values(items) == [
        ReasoningText("Hmm"),
        UsageReported(Usage(5, 7)),
        StreamEnd("max_tokens"),
    ]


@pytest.mark.parametrize(
    ("events", "says"),
    [
        (
            (START, text_block(0), thinking_delta(0, "x")),
            "thinking_delta for block 0, which is a text block",
        ),
        (
            (START, text_block(0), signature_delta(0, "x")),
            "signature_delta for block 0, which is a text",
        ),
        (
            (START, thinking_block(0), text_delta(0, "x")),
            "text_delta for block 0, which is a thinking block",
        ),
    ],
)
def test_a_thinking_delta_for_another_kind_of_block_is_malformed(
    events: tuple[SseEvent, ...], says: str
) -> None:
    assert says in malformed(feed(AnthropicReader(), *events))


# Chat Completions reasoning ------------------------------------------------------------


def test_a_server_that_says_reasoning_is_read_like_one_that_says_reasoning_content() -> None:
    both = chunk({"reasoning_content": "kept", "reasoning": "kept"})
    items = feed(OpenAIChatReader(), chunk({"reasoning": "vLLM "}), both, chunk({}, "stop"), DONE)
    assert values(items)[:3] == [
        ReasoningText("vLLM "),
        ReasoningText("kept"),  # the same text under both names is shown once
        ReasoningReady(Reasoning("reasoning_content", "vLLM kept")),
    ]


def test_reasoning_comes_before_the_calls_it_led_to() -> None:
    call = {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "ls", "arguments": ""}}]}
    items = feed(
        OpenAIChatReader(),
        chunk({"reasoning_content": "list"}),
        chunk(call),
        chunk({}, "tool_calls"),
        DONE,
    )
    assert values(items) == [
        ReasoningText("list"),
        ReasoningReady(Reasoning("reasoning_content", "list")),
        ToolCallReady(ToolCall("c1", "ls", "{}")),
        StreamEnd("tool_use"),
    ]


def test_deepseek_cache_hits_count_as_cache_reads_inside_the_prompt() -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 9, "prompt_cache_hit_tokens": 64}
    items = feed(OpenAIChatReader(), chunk({}, "stop"), chunk(usage=usage), DONE)
    assert values(items)[0] == UsageReported(Usage(100, 9, cache_read_tokens=64))


def test_reasoning_details_in_pieces_are_joined_by_index_their_kind_kept_once() -> None:
    def detail(**fields: Any) -> SseEvent:
        return chunk({"reasoning_details": [{"format": "anthropic-claude-v1", **fields}]})

    items = feed(
        OpenAIChatReader(),
        detail(type="reasoning.text", text="a", index=0),
        detail(type="reasoning.text", text="b", index=0),
        detail(type="reasoning.text", signature="sig", index=0),
        chunk({}, "stop"),
        DONE,
    )
    [sealed] = [v.reasoning for v in values(items) if isinstance(v, ReasoningReady)]
    assert json.loads(sealed.seal) == [
        {
            "format": "anthropic-claude-v1",
            "type": "reasoning.text",
            "text": "ab",
            "index": 0,
            "signature": "sig",
        }
    ]


# The Responses API ---------------------------------------------------------------------


def event(kind: str, **fields: Any) -> SseEvent:
    return SseEvent(kind, json.dumps({"type": kind, **fields}))


def added(index: int, kind: str, **item: Any) -> SseEvent:
    return event("response.output_item.added", output_index=index, item={"type": kind, **item})


def done(index: int, kind: str, **item: Any) -> SseEvent:
    return event("response.output_item.done", output_index=index, item={"type": kind, **item})


def said(index: int, text: str) -> SseEvent:
    return event("response.output_text.delta", output_index=index, delta=text)


def summary(index: int, part: int, text: str) -> SseEvent:
    return event(
        "response.reasoning_summary_text.delta", output_index=index, summary_index=part, delta=text
    )


USAGE = {
    "input_tokens": 90,
    "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 16},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 12},
}
COMPLETED = event("response.completed", response={"status": "completed", "usage": USAGE})


def responses(*events: SseEvent) -> list[StreamItem]:
    reader = OpenAIResponsesReader()
    return [item for each in events for item in reader.read(each)]


def test_a_response_reads_its_items_in_order_and_counts_its_usage_by_kind() -> None:
    item = {
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "A"}, {"type": "summary_text", "text": "B"}],
        "encrypted_content": "gAAA",
    }
    items = responses(
        event("response.created", response={}),
        event("response.in_progress", response={}),
        added(0, "reasoning", id="rs_1", summary=[]),
        summary(0, 0, "A"),
        summary(0, 1, "B"),  # a second part of the summary starts a paragraph of its own
        done(0, "reasoning", **item),
        added(1, "message"),
        said(1, "Hi"),
        done(1, "message"),
        event("response.some_future_event", anything=1),
        COMPLETED,
    )
    assert values(items) == [
        ReasoningText("A"),
        ReasoningText("\n\nB"),
        ReasoningReady(
            Reasoning("reasoning_item", "A\n\nB", json.dumps({"type": "reasoning", **item}))
        ),
        TextDelta("Hi"),
        UsageReported(Usage(90, 20, 64, 16, 12)),
        StreamEnd("end_turn"),
    ]


def test_function_calls_are_taken_from_their_finished_items() -> None:
    items = responses(
        added(0, "function_call", call_id="c1", name="ls", arguments=""),
        event("response.function_call_arguments.delta", output_index=0, delta='{"a"'),
        event("response.function_call_arguments.delta", output_index=0, delta=": 1}"),
        done(0, "function_call", call_id="c1", name="ls", arguments='{"a": 1}'),
        added(1, "function_call", call_id="c2", name="pwd"),
        event("response.function_call_arguments.delta", output_index=1, delta="{}"),
        done(1, "function_call", call_id="c2", name="pwd"),  # no arguments: the deltas'
        COMPLETED,
    )
    assert values(items)[:2] == [
        ToolCallReady(ToolCall("c1", "ls", '{"a": 1}')),
        ToolCallReady(ToolCall("c2", "pwd", "{}")),
    ]
    assert values(items)[-1] == StreamEnd("tool_use")


def test_a_message_sent_whole_is_shown_whole_and_a_refusal_is_said_to_be_one() -> None:
    content = [{"type": "refusal", "refusal": "I can't help with that."}]
    items = responses(added(0, "message"), done(0, "message", content=content), COMPLETED)
    assert values(items)[0] == TextDelta("I can't help with that.")
    assert values(items)[-1] == StreamEnd("refusal")


@pytest.mark.parametrize(
    ("reason", "end"),
    [
        ("max_output_tokens", StreamEnd("max_tokens")),
        ("content_filter", StreamEnd("refusal")),
        ("max_messages", StreamEnd("other", "max_messages")),
        (None, StreamEnd("other", "incomplete")),
    ],
)
def test_an_incomplete_response_says_why(reason: str | None, end: StreamEnd) -> None:
    details = {"reason": reason} if reason else None
    items = responses(event("response.incomplete", response={"incomplete_details": details}))
    assert values(items) == [end]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"code": "rate_limit_exceeded", "message": "Slow down"},
            HttpStatusError(429, "rate_limit_exceeded: Slow down", mid_stream=True),
        ),
        (
            {"code": "server_error", "message": "Oops", "param": None},
            HttpStatusError(500, "server_error: Oops", mid_stream=True),
        ),
        (
            {"error": {"type": "server_error", "code": None, "message": "Nested"}},
            HttpStatusError(500, "server_error: Nested", mid_stream=True),
        ),
    ],
)
def test_an_error_event_flat_or_nested_fails_as_the_retry_rules_know_it(
    error: dict[str, Any], expected: HttpStatusError
) -> None:
    items = responses(added(0, "message"), said(0, "Hi"), event("error", **error))
    assert items[-1] == Failure(expected)
    assert len(items) == 2


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ((said(0, "x"),), "for output item 0, which was never added"),
        ((added(0, "message"), added(0, "message")), "output item 0 was added twice"),
        (
            (added(0, "function_call"), said(0, "x")),
            "for output item 0, which is a function_call item",
        ),
        ((added(0, "message"), done(0, "message"), said(0, "x")), "which is already done"),
        ((done(0, "function_call", call_id="c"),), "function call item 0 arrived without a name"),
        ((added(0, "function_call", name="ls"), COMPLETED), "while function call 0 is unfinished"),
        ((SseEvent("response.completed", "{not json"),), "bad JSON in the response.completed"),
    ],
)
def test_a_responses_stream_out_of_order_is_malformed(
    events: tuple[SseEvent, ...], says: str
) -> None:
    assert says in malformed(responses(*events))


def test_a_responses_stream_that_just_stops_is_a_cut_stream() -> None:
    reader = OpenAIResponsesReader()
    reader.read(added(0, "message"))
    assert reader.end_of_body() == [
        Failure(
            TransportError(
                "connection_closed",
                "the stream ended before response.completed (after response.output_item.added)",
            )
        )
    ]


def test_raw_reasoning_text_and_a_streamed_refusal_are_read_too() -> None:
    raw = event(
        "response.reasoning_text.delta", output_index=0, content_index=0, delta="raw thought"
    )
    items = responses(
        added(0, "reasoning", id="rs_1"),
        raw,
        done(
            0, "reasoning", id="rs_1", content=[{"type": "reasoning_text", "text": "raw thought"}]
        ),
        added(1, "message"),
        event("response.refusal.delta", output_index=1, delta="No."),
        done(1, "message"),
        COMPLETED,
    )
    shown = values(items)
    assert shown[0] == ReasoningText("raw thought")  # shown once, not again when done
    assert [type(v).__name__ for v in shown] == [
        "ReasoningText",
        "ReasoningReady",
        "TextDelta",
        "UsageReported",
        "StreamEnd",
    ]
    assert shown[1].reasoning.text == "raw thought"  # type: ignore[attr-defined]
    assert shown[-1] == StreamEnd("refusal")
