"""Responses streams whose events carry no ``output_index``, as codex's own test servers
send them (``codex-rs/core/tests/common/responses.rs``: ``ev_assistant_message``,
``ev_output_text_delta``, ``ev_function_call``…): each item is found by its id, and
an event that names no item belongs to the one last added and not yet done."""

from __future__ import annotations

from typing import Any

import pytest
from returns.result import Success

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import KEY, a_request, listen
from tests.adapters.http.test_http_readers import malformed
from tests.adapters.http.test_reasoning_readers import event, responses, values
from treadle.adapters.http_model import OpenAIResponsesModel
from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.model import (
    ReasoningReady,
    ReasoningText,
    StreamEnd,
    TextDelta,
    ToolCallReady,
    UsageReported,
)

CREATED = event("response.created", response={"id": "resp_1"})
# codex's ev_completed: usage with null details.
COMPLETED = event(
    "response.completed",
    response={
        "id": "resp_1",
        "usage": {
            "input_tokens": 12,
            "input_tokens_details": None,
            "output_tokens": 5,
            "output_tokens_details": None,
            "total_tokens": 17,
        },
    },
)


def item_added(kind: str, **item: Any) -> Any:
    return event("response.output_item.added", item={"type": kind, **item})


def item_done(kind: str, **item: Any) -> Any:
    return event("response.output_item.done", item={"type": kind, **item})


def test_a_message_added_then_streamed_then_done_by_id_is_shown_once() -> None:
    items = responses(
        CREATED,
        item_added("message", role="assistant", id="msg_1", content=[]),
        event("response.output_text.delta", delta="Hel"),  # no index, no item_id
        event("response.output_text.delta", item_id="msg_1", delta="lo"),
        item_done(
            "message",
            role="assistant",
            id="msg_1",
            content=[{"type": "output_text", "text": "Hello"}],
        ),
        COMPLETED,
    )
    assert values(items) == [
        TextDelta("Hel"),
        TextDelta("lo"),
        UsageReported(Usage(12, 5)),
        StreamEnd("end_turn"),
    ]


def test_items_given_whole_with_no_index_and_no_id_are_read_in_order() -> None:
    items = responses(
        CREATED,
        item_done(
            "reasoning", id="rs_1", summary=[{"type": "summary_text", "text": "Look first."}]
        ),
        item_done("message", role="assistant", content=[{"type": "output_text", "text": "Now:"}]),
        item_done("function_call", call_id="call_1", name="bash", arguments='{"command":"ls"}'),
        item_done("function_call", call_id="call_2", name="bash", arguments='{"command":"pwd"}'),
        COMPLETED,
    )
    shown = values(items)
    assert shown[0] == ReasoningText("Look first.")
    assert isinstance(shown[1], ReasoningReady)
    assert shown[2:] == [
        TextDelta("Now:"),
        ToolCallReady(ToolCall("call_1", "bash", '{"command":"ls"}')),
        ToolCallReady(ToolCall("call_2", "bash", '{"command":"pwd"}')),
        UsageReported(Usage(12, 5)),
        StreamEnd("tool_use"),
    ]


def test_a_delta_with_nothing_to_name_its_item_starts_one_of_its_own() -> None:
    items = responses(
        CREATED,
        event("response.reasoning_summary_text.delta", summary_index=0, delta="Hmm."),
        event("response.output_text.delta", delta="Hi"),
        COMPLETED,
    )
    assert values(items)[:2] == [ReasoningText("Hmm."), TextDelta("Hi")]
    assert items[-1] == Success(StreamEnd("end_turn"))


def test_streamed_arguments_of_a_call_without_an_index_are_its_own() -> None:
    items = responses(
        item_added("function_call", id="fc_1", call_id="call_1", name="bash", arguments=""),
        event("response.function_call_arguments.delta", item_id="fc_1", delta='{"command":'),
        event("response.function_call_arguments.delta", delta='"ls"}'),
        item_done("function_call", id="fc_1", call_id="call_1", name="bash"),
        COMPLETED,
    )
    assert values(items)[0] == ToolCallReady(ToolCall("call_1", "bash", '{"command":"ls"}'))


def test_an_item_added_by_index_is_found_by_its_id_on_events_that_give_only_that() -> None:
    items = responses(
        event("response.output_item.added", output_index=0, item={"type": "message", "id": "m"}),
        event("response.output_text.delta", item_id="m", delta="Hi"),
        event("response.output_item.done", item={"type": "message", "id": "m"}),
        COMPLETED,
    )
    assert values(items)[0] == TextDelta("Hi")
    assert items[-1] == Success(StreamEnd("end_turn"))


@pytest.mark.parametrize(
    ("events", "says"),
    [
        (
            (event("response.output_text.delta", item_id="msg_9", delta="x"),),
            "for output item 'msg_9', which was never added",
        ),
        (
            (item_added("message", id="msg_1"), item_added("message", id="msg_1")),
            "output item 'msg_1' was added twice",
        ),
        (
            (
                item_added("function_call", id="fc_1"),
                event("response.output_text.delta", item_id="fc_1", delta="x"),
            ),
            "for output item 'fc_1', which is a function_call item",
        ),
        (
            (
                item_added("message", id="msg_1"),
                item_done("message", id="msg_1"),
                event("response.output_text.delta", item_id="msg_1", delta="x"),
            ),
            "for output item 'msg_1', which is already done",
        ),
    ],
)
def test_an_item_named_by_id_is_held_to_the_same_order_as_one_named_by_index(
    events: tuple[Any, ...], says: str
) -> None:
    assert says in malformed(responses(*events))


async def test_a_stream_built_by_codexs_test_helpers_is_read_over_a_socket(
    server: ScriptedServer,
) -> None:
    # Written the way codex's sse() helper writes events: "event:" then compact data.
    events = [
        CREATED,
        item_added("message", role="assistant", id="msg_1", content=[]),
        event("response.output_text.delta", delta="All "),
        event("response.output_text.delta", delta="done."),
        item_done(
            "message",
            role="assistant",
            id="msg_1",
            content=[{"type": "output_text", "text": "All done."}],
        ),
        item_done("function_call", call_id="call_1", name="update_plan", arguments="{}"),
        COMPLETED,
    ]
    body = b"".join(f"event: {e.name}\ndata: {e.data}\n\n".encode() for e in events)
    server.add(Reply.sse(body))
    model = OpenAIResponsesModel(model="gpt-test", base_url=server.base_url, api_key=KEY)
    heard = await listen(model.stream(a_request()))
    assert heard.failure is None
    assert heard.text == "All done."
    assert heard.calls == [ToolCall("call_1", "update_plan", "{}")]
    assert heard.usage == Usage(12, 5)
    assert heard.end == StreamEnd("tool_use")
