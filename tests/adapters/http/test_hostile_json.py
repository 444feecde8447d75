"""JSON a hostile server (or a hand-edited transcript) nests too deeply, or fills with
numbers longer than Python reads: every reader fails the answer as malformed instead
of raising, and what a reader keeps is sure to encode again when it is sent back."""

from __future__ import annotations

import json

import pytest
from returns.result import Failure

from treadle.adapters.http_model.anthropic import messages_request_body
from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.endpoint import EventReader
from treadle.adapters.http_model.openai_chat import chat_request_body
from treadle.adapters.http_model.openai_chat_reader import OpenAIChatReader
from treadle.adapters.http_model.openai_responses import responses_request_body
from treadle.adapters.http_model.openai_responses_reader import OpenAIResponsesReader
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.conversation import Message, Reasoning, ToolCall
from treadle.domain.values.model import MalformedStream, ModelRequest

DEEP = "[" * 100_000 + "]" * 100_000
# Decodes at the top of the stack, but not once more at the depth where it is re-encoded.
NEARLY_TOO_DEEP = "[" * 985 + "]" * 985
HUGE_NUMBER = "1" * 5_000

READERS = [OpenAIChatReader, AnthropicReader, OpenAIResponsesReader]


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize(
    "data",
    [DEEP, '{"a": ' + DEEP + "}", ' {"a": ' + DEEP + "}", '{"a": ' + HUGE_NUMBER + "}"],
    ids=["deep", "deep-inside", "deep-with-space", "huge-number"],
)
def test_an_event_no_decoder_can_read_fails_the_answer(
    reader: type[EventReader], data: str
) -> None:
    one = reader()
    [item] = one.read(SseEvent("response.created", data))
    assert isinstance(item, Failure) and isinstance(item.failure(), MalformedStream)
    assert one.ended


def test_a_reasoning_item_nested_nearly_too_deep_is_refused_not_kept() -> None:
    item = {"id": "rs_0", "type": "reasoning", "summary": [], "x": "@"}
    data = json.dumps(
        {"type": "response.output_item.done", "output_index": 0, "item": item}
    ).replace('"@"', NEARLY_TOO_DEEP)
    [failure] = OpenAIResponsesReader().read(SseEvent("response.output_item.done", data))
    assert isinstance(failure, Failure)
    assert "nested too deeply" in str(failure.failure())


def _assistant(reasoning: Reasoning) -> ModelRequest:
    call = ToolCall("c1", "bash", '{"command": "ls"}')
    return ModelRequest(
        system="s",
        messages=(
            Message.user("go"),
            Message.assistant("", (call,), reasoning=(reasoning,)),
            Message.tool("c1", "ok"),
        ),
        tools=(),
        max_tokens=100,
    )


@pytest.mark.parametrize("nested", [DEEP, NEARLY_TOO_DEEP])
def test_a_seal_edited_to_nest_too_deeply_is_left_out_of_the_request(nested: str) -> None:
    item = Reasoning("reasoning_item", "", '{"type": "reasoning", "x": ' + nested + "}")
    body = responses_request_body(_assistant(item), model="gpt-5", hosted=False)
    assert [entry["type"] for entry in json.loads(json.dumps(body))["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    details = Reasoning("reasoning_details", "", "[" + nested + "]")
    body = chat_request_body(_assistant(details), model="m", hosted=False)
    assert "reasoning_details" not in json.loads(json.dumps(body))["messages"][1]
    # Thinking blocks are strings: whatever they hold goes back as it came.
    thought = Reasoning("thinking", nested, "sig")
    assert json.dumps(messages_request_body(_assistant(thought), model="claude"))
