"""The two protocol readers as pure state machines: events in, port events out — the
edge cases no recording shows, without a socket in sight."""

from __future__ import annotations

import json
from typing import Any

import pytest
from returns.result import Failure, Success

from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.endpoint import StreamItem
from treadle.adapters.http_model.openai_chat_reader import OpenAIChatReader
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.conversation import Reasoning, ToolCall, Usage
from treadle.domain.values.model import (
    HttpStatusError,
    MalformedStream,
    ModelError,
    ReasoningReady,
    ReasoningText,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    TransportError,
    UsageReported,
)

# Anthropic ---------------------------------------------------------------------


def anthropic(kind: str, **fields: Any) -> SseEvent:
    return SseEvent(kind, json.dumps({"type": kind, **fields}))


START = anthropic("message_start", message={"usage": {"input_tokens": 5, "output_tokens": 1}})


def text_block(index: int) -> SseEvent:
    return anthropic("content_block_start", index=index, content_block={"type": "text", "text": ""})


def tool_block(index: int) -> SseEvent:
    block = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}
    return anthropic("content_block_start", index=index, content_block=block)


def text_delta(index: int, text: str) -> SseEvent:
    return anthropic("content_block_delta", index=index, delta={"type": "text_delta", "text": text})


def json_delta(index: int, part: str) -> SseEvent:
    delta = {"type": "input_json_delta", "partial_json": part}
    return anthropic("content_block_delta", index=index, delta=delta)


def block_stop(index: int) -> SseEvent:
    return anthropic("content_block_stop", index=index)


def message_delta(stop: str, output: int = 7) -> SseEvent:
    return anthropic("message_delta", delta={"stop_reason": stop}, usage={"output_tokens": output})


STOP = anthropic("message_stop")


def feed(reader: AnthropicReader | OpenAIChatReader, *events: SseEvent) -> list[StreamItem]:
    return [item for event in events for item in reader.read(event)]


def malformed(items: list[StreamItem]) -> str:
    assert isinstance(items[-1], Failure), items
    error = items[-1].failure()
    assert isinstance(error, MalformedStream), error
    return error.detail


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ((text_block(0),), "content_block_start before message_start"),
        ((START, START), "a second message_start"),
        ((START, text_block(1)), "content_block_start for block 1 before block 0"),
        ((START, text_block(0), text_block(0)), "block 0, which already began"),
        ((START, text_delta(5, "x")), "content_block_delta for block 5, which is not open"),
        ((START, text_block(0), block_stop(0), text_delta(0, "x")), "block 0, which is not open"),
        ((START, block_stop(0)), "content_block_stop for block 0, which is not open"),
        (
            (START, tool_block(0), text_delta(0, "x")),
            "text_delta for block 0, which is a tool_use block",
        ),
        (
            (START, text_block(0), json_delta(0, "{")),
            "input_json_delta for block 0, which is a text block",
        ),
        ((START, anthropic("content_block_delta", delta={})), "without a block index"),
        ((START, STOP), "message_stop without a stop reason"),
        (
            (START, tool_block(0), json_delta(0, "{}"), message_delta("tool_use"), STOP),
            "message_stop while block 0 is still open",
        ),
        (
            (START, SseEvent("content_block_delta", '{"type": "content_')),
            "bad JSON in the content_block_delta event",
        ),
        (
            (SseEvent("message_start", "[1, 2]"),),
            "the message_start event holds JSON that is not an object",
        ),
    ],
)
def test_an_anthropic_stream_out_of_order_is_malformed(
    events: tuple[SseEvent, ...], says: str
) -> None:
    assert says in malformed(feed(AnthropicReader(), *events))


@pytest.mark.parametrize(
    ("block", "deltas"),
    [
        (
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            [{"type": "input_json_delta", "partial_json": '{"query": "x"}'}],
        ),
        ({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}, []),
        (
            {"type": "compaction", "content": None},
            [{"type": "compaction_delta", "content": "Earlier, in short."}],
        ),
        ({"type": "a_future_block"}, [{"type": "text_delta", "text": "not ours"}]),
    ],
)
def test_a_block_of_a_kind_treadle_does_not_know_is_left_out_and_never_ends_the_turn(
    block: dict[str, Any], deltas: list[dict[str, Any]]
) -> None:
    items = feed(
        AnthropicReader(),
        START,
        anthropic("content_block_start", index=0, content_block=block),
        *[anthropic("content_block_delta", index=0, delta=delta) for delta in deltas],
        block_stop(0),
        text_block(1),
        text_delta(1, "Found it."),
        block_stop(1),
        message_delta("end_turn"),
        STOP,
    )
    assert items == [
        Success(TextDelta("Found it.")),
        Success(UsageReported(Usage(5, 7))),
        Success(StreamEnd("end_turn")),
    ]


def test_a_block_of_an_unknown_kind_left_open_does_not_fail_the_answer() -> None:
    block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    items = feed(
        AnthropicReader(),
        START,
        anthropic("content_block_start", index=0, content_block=block),
        message_delta("end_turn"),
        STOP,
    )
    assert items[-1] == Success(StreamEnd("end_turn"))


def test_anthropic_pings_and_unknown_events_are_read_past() -> None:
    reader = AnthropicReader()
    items = feed(
        reader,
        START,
        SseEvent("ping", "not even JSON"),
        anthropic("a_future_event", anything=[1]),
        text_block(0),
        text_delta(0, "Hi"),
        block_stop(0),
        message_delta("end_turn"),
        STOP,
    )
    assert items == [
        Success(TextDelta("Hi")),
        Success(UsageReported(Usage(5, 7))),
        Success(StreamEnd("end_turn")),
    ]


def test_a_tool_call_cut_by_the_budget_is_not_handed_over() -> None:
    items = feed(
        AnthropicReader(),
        START,
        tool_block(0),
        json_delta(0, '{"command": "l'),
        message_delta("max_tokens"),
        STOP,
    )
    assert not any(isinstance(item.unwrap(), ToolCallReady) for item in items)
    assert items[-1] == Success(StreamEnd("max_tokens"))


def test_a_tool_call_is_handed_over_when_its_block_stops() -> None:
    reader = AnthropicReader()
    assert (
        feed(reader, START, tool_block(0), json_delta(0, '{"command":'), json_delta(0, ' "ls"}'))
        == []
    )
    assert feed(reader, block_stop(0)) == [
        Success(ToolCallReady(ToolCall("toolu_1", "bash", '{"command": "ls"}')))
    ]


def test_an_input_given_whole_at_the_start_is_kept() -> None:
    block = {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "a.py"}}
    items = feed(
        AnthropicReader(),
        START,
        anthropic("content_block_start", index=0, content_block=block),
        block_stop(0),
    )
    assert items == [Success(ToolCallReady(ToolCall("toolu_9", "read_file", '{"path": "a.py"}')))]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"type": "overloaded_error", "message": "Overloaded"},
            HttpStatusError(503, "overloaded_error: Overloaded", mid_stream=True),
        ),
        (
            {"type": "api_error", "message": "Internal"},
            HttpStatusError(500, "api_error: Internal", mid_stream=True),
        ),
        (
            {"type": "rate_limit_error", "message": "Slow"},
            HttpStatusError(429, "rate_limit_error: Slow", mid_stream=True),
        ),
        (
            {"type": "invalid_request_error", "message": "Bad"},
            MalformedStream(
                "the server sent an error event mid-stream: invalid_request_error: Bad"
            ),
        ),
    ],
)
def test_an_error_event_mid_stream(error: dict[str, str], expected: ModelError) -> None:
    items = feed(
        AnthropicReader(),
        START,
        text_block(0),
        text_delta(0, "Hi"),
        anthropic("error", error=error),
    )
    assert items == [Success(TextDelta("Hi")), Failure(expected)]


def test_an_unknown_stop_reason_is_other_and_says_which() -> None:
    items = feed(AnthropicReader(), START, message_delta("pause_turn"), STOP)
    assert items[-1] == Success(StreamEnd("other", "pause_turn"))


def test_anthropic_stop_sequence_ends_the_turn() -> None:
    items = feed(AnthropicReader(), START, message_delta("stop_sequence"), STOP)
    assert items[-1] == Success(StreamEnd("end_turn"))


def test_anthropic_end_of_body_is_a_cut_stream_that_names_the_last_event() -> None:
    reader = AnthropicReader()
    feed(reader, START, text_block(0))
    assert reader.end_of_body() == [
        Failure(
            TransportError(
                "connection_closed",
                "the stream ended before message_stop (after content_block_start)",
            )
        )
    ]


# OpenAI Chat Completions --------------------------------------------------------


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **top: Any
) -> SseEvent:
    choices = (
        []
        if delta is None and finish is None
        else [{"index": index, "delta": delta or {}, "finish_reason": finish}]
    )
    return SseEvent("", json.dumps({"object": "chat.completion.chunk", "choices": choices, **top}))


DONE = SseEvent("", "[DONE]")


def call_fragment(index: int, **fields: Any) -> dict[str, Any]:
    function = {key: fields.pop(key) for key in ("name", "arguments") if key in fields}
    return {"tool_calls": [{"index": index, **fields, "function": function}]}


def test_openai_done_before_any_finish_reason_is_malformed() -> None:
    assert malformed(feed(OpenAIChatReader(), chunk({"content": "Hi"}), DONE)) == (
        "data: [DONE] before any finish_reason"
    )


def test_openai_end_of_body_is_a_cut_stream_that_says_how_far_it_got() -> None:
    reader = OpenAIChatReader()
    feed(reader, chunk({"content": "Hi"}), chunk({"content": " there"}))
    assert reader.end_of_body() == [
        Failure(
            TransportError(
                "connection_closed",
                "the stream ended before data: [DONE] (after 2 chunks, before any finish_reason)",
            )
        )
    ]


def test_openai_a_finished_stream_closed_without_done_is_whole() -> None:
    reader = OpenAIChatReader()
    feed(
        reader,
        chunk({"content": "Hi"}),
        chunk({}, "stop"),
        chunk(usage={"prompt_tokens": 3, "completion_tokens": 1}),
    )
    assert reader.end_of_body() == [
        Success(UsageReported(Usage(3, 1))),
        Success(StreamEnd("end_turn")),
    ]


def test_openai_bad_json_is_malformed() -> None:
    assert "bad JSON in an event" in malformed(
        feed(OpenAIChatReader(), SseEvent("", '{"choices": ['))
    )


def test_openai_arguments_cut_by_length_are_not_handed_over() -> None:
    items = feed(
        OpenAIChatReader(),
        chunk(call_fragment(0, id="call_1", name="bash", arguments='{"comm')),
        chunk({}, "length"),
        DONE,
    )
    assert items == [Success(StreamEnd("max_tokens"))]


def test_a_local_server_that_says_stop_after_a_tool_call_still_means_tool_use() -> None:
    items = feed(
        OpenAIChatReader(),
        chunk(call_fragment(0, id="call_1", name="update_plan")),
        chunk({}, "stop"),
        DONE,
    )
    assert items == [
        Success(ToolCallReady(ToolCall("call_1", "update_plan", "{}"))),
        Success(StreamEnd("tool_use")),
    ]


def test_arguments_sent_as_an_object_are_kept_as_json_text() -> None:
    fragment = call_fragment(0, id="call_1", name="bash", arguments={"command": "ls"})
    items = feed(OpenAIChatReader(), chunk(fragment), chunk({}, "tool_calls"), DONE)
    assert items[0] == Success(ToolCallReady(ToolCall("call_1", "bash", '{"command": "ls"}')))


def test_a_tool_call_without_a_name_is_malformed() -> None:
    items = feed(
        OpenAIChatReader(),
        chunk(call_fragment(0, id="call_1", arguments="{}")),
        chunk({}, "tool_calls"),
    )
    assert malformed(items) == "tool call 0 arrived without a name"


def test_running_usage_on_every_chunk_is_reported_once_at_the_end() -> None:
    items = feed(
        OpenAIChatReader(),
        chunk({"content": "a"}, usage={"prompt_tokens": 4, "completion_tokens": 1}),
        chunk({"content": "b"}, usage={"prompt_tokens": 4, "completion_tokens": 2}),
        chunk({}, "stop", usage={"prompt_tokens": 4, "completion_tokens": 3}),
        DONE,
    )
    assert [item.unwrap() for item in items] == [
        TextDelta("a"),
        TextDelta("b"),
        UsageReported(Usage(4, 3)),
        StreamEnd("end_turn"),
    ]


def test_a_server_that_reports_no_usage_reports_none() -> None:
    items = feed(OpenAIChatReader(), chunk({"content": "a"}), chunk({}, "stop"), DONE)
    assert [item.unwrap() for item in items] == [TextDelta("a"), StreamEnd("end_turn")]


@pytest.mark.parametrize(
    ("finish", "end"),
    [
        ("stop", StreamEnd("end_turn")),
        ("length", StreamEnd("max_tokens")),
        ("tool_calls", StreamEnd("tool_use")),
        ("content_filter", StreamEnd("refusal")),
        ("function_call", StreamEnd("other", "function_call")),
    ],
)
def test_openai_finish_reasons(finish: str, end: StreamEnd) -> None:
    assert feed(OpenAIChatReader(), chunk({}, finish), DONE) == [Success(end)]


def test_reasoning_is_read_apart_from_the_answer_and_other_choices_not_at_all() -> None:
    items = feed(
        OpenAIChatReader(),
        chunk({"reasoning_content": "Let me think."}),
        chunk({"content": "other"}, index=1),
        chunk({"content": "mine"}),
        chunk({}, "stop"),
        DONE,
    )
    assert [item.unwrap() for item in items] == [
        ReasoningText("Let me think."),
        TextDelta("mine"),
        ReasoningReady(Reasoning("reasoning_content", "Let me think.")),
        StreamEnd("end_turn"),
    ]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"message": "Busy", "type": "server_error"},
            HttpStatusError(500, "server_error: Busy", mid_stream=True),
        ),
        (
            {"message": "Bad", "type": "BadRequestError", "code": 400},
            HttpStatusError(400, "BadRequestError: Bad", mid_stream=True),
        ),
        (
            {"message": "Slow", "code": "rate_limit_exceeded"},
            HttpStatusError(429, "rate_limit_exceeded: Slow", mid_stream=True),
        ),
        ({"message": "Odd"}, MalformedStream("the server sent an error event mid-stream: Odd")),
        (
            "plain words",
            MalformedStream("the server sent an error event mid-stream: plain words"),
        ),
    ],
)
def test_an_openai_error_chunk_mid_stream(error: Any, expected: ModelError) -> None:
    items = feed(
        OpenAIChatReader(), chunk({"content": "Hi"}), SseEvent("", json.dumps({"error": error}))
    )
    assert items == [Success(TextDelta("Hi")), Failure(expected)]
