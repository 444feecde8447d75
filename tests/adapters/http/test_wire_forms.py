"""What an adapter sends, each message encoded once and kept, is byte for byte the body
built from scratch, over long random conversations that grow, are pruned, compacted,
continued and interleaved with a sub-agent's."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from treadle.adapters.http_model import anthropic, wire_forms
from treadle.adapters.http_model.anthropic import AnthropicModel, messages_request_body
from treadle.adapters.http_model.endpoint import HttpModel, ModelOptions
from treadle.adapters.http_model.openai_chat import OpenAIChatModel, chat_request_body
from treadle.adapters.http_model.openai_responses import (
    OpenAIResponsesModel,
    responses_request_body,
)
from treadle.adapters.http_model.wire_forms import REJOIN, common_prefix, encoded_body
from treadle.domain.values.conversation import Message, Reasoning, ToolCall
from treadle.domain.values.model import ModelRequest, ToolSpec

TOOLS = (ToolSpec("bash", "Run a command.", {"type": "object", "properties": {}}),)
TEXTS = ["", "ok", 'héllo \u2028 "quoted"\n', "a\\b", "x" * 300, " trailing  "]
ARGUMENTS = ['{"command": "ls"}', "", "not json", "[1, 2]", '{"a": {"b": [1, "é"]}}']
REASONING = [
    Reasoning("thinking", "I think", "sig"),
    Reasoning("redacted_thinking", seal="data"),
    Reasoning("reasoning_content", "because"),
    Reasoning("reasoning_details", seal='[{"type": "reasoning.text", "text": "t"}]'),
    Reasoning("reasoning_item", seal='{"type": "reasoning", "id": "r1", "summary": []}'),
    Reasoning("reasoning_item", seal="broken"),
]


def _message(rng: random.Random, number: int) -> Message:
    kind = rng.choice(["user", "assistant", "assistant", "tool", "tool", "empty"])
    if kind == "user":
        return Message.user(rng.choice(TEXTS[1:]) + str(number))
    if kind == "tool":
        return Message.tool(f"c{number}", rng.choice(TEXTS), is_error=rng.random() < 0.2)
    if kind == "empty":
        return Message.assistant("", interrupted=True)
    calls = tuple(
        ToolCall(f"c{number}-{n}", "bash", rng.choice(ARGUMENTS)) for n in range(rng.randint(0, 2))
    )
    thoughts = tuple(
        Reasoning(r.kind, r.text, r.seal, rng.randint(0, 2))
        for r in rng.sample(REASONING, rng.randint(0, 3))
    )
    return Message.assistant(
        rng.choice(TEXTS), calls, interrupted=rng.random() < 0.1, reasoning=thoughts
    )


def _edit(rng: random.Random, history: list[Message], number: int) -> None:
    """One step of a turn: mostly a new message, sometimes a pruned result or a compaction."""
    roll = rng.random()
    if roll < 0.08 and len(history) > 4:
        place = rng.randrange(len(history))
        history[place] = Message.tool(f"p{number}", "[pruned]")
    elif roll < 0.1 and len(history) > 8:
        history[1 : len(history) // 2] = [Message.user(f"summary {number}")]
    elif roll < 0.12 and history:
        history.pop()
    else:
        history.append(_message(rng, number))


def _request(rng: random.Random, history: list[Message]) -> ModelRequest:
    return ModelRequest(
        system=rng.choice(["", "You are treadle."]),
        messages=history,
        tools=TOOLS if rng.random() < 0.8 else (),
        max_tokens=1000,
        continuation=rng.choice(["", "", "", "so far ", "so far"]),
        tools_allowed=rng.random() < 0.9,
        thinking_budget=rng.choice([0, 0, 500]),
    )


def _expected(model: HttpModel, request: ModelRequest) -> bytes:
    options = model.options
    if isinstance(model, AnthropicModel):
        body = messages_request_body(request, model=model.model, options=options)
    elif isinstance(model, OpenAIResponsesModel):
        body = responses_request_body(
            request, model=model.model, hosted=model.hosted, options=options
        )
    else:
        body = chat_request_body(request, model=model.model, hosted=model.hosted, options=options)
    return json.dumps(body).encode()


MODELS = [
    lambda options: OpenAIChatModel(model="m", api_key="k", options=options),
    lambda options: OpenAIChatModel(
        model="m", api_key=None, base_url="http://127.0.0.1:1/v1", options=options
    ),
    lambda options: OpenAIResponsesModel(model="gpt-5", api_key="k", options=options),
    lambda options: AnthropicModel(model="claude-x", api_key="k", options=options),
]
OPTIONS = [ModelOptions(), ModelOptions(effort="high", session="s", prompt_cache=False)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("make", MODELS)
@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("rejoin", [REJOIN, 1])
def test_a_body_joined_from_kept_messages_is_the_body_built_from_scratch(
    seed: int, make: Any, options: ModelOptions, rejoin: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # How often the joined prefix is made again: at every request, or as shipped.
    monkeypatch.setattr(wire_forms, "REJOIN", rejoin)
    monkeypatch.setattr(anthropic, "REJOIN", rejoin)
    rng = random.Random(seed)
    model = make(options)
    main: list[Message] = [Message.user("the task")]
    helper: list[Message] = [Message.user("a sub-agent's task")]
    for number in range(400):
        history = helper if rng.random() < 0.2 else main
        _edit(rng, history, number)
        if not history:
            history.append(Message.user(f"again {number}"))
        request = _request(rng, history)
        sent = model.protocol(request, "k").body
        assert sent == _expected(model, request), f"request {number}"


def test_a_message_equal_to_one_sent_before_is_sent_the_same_though_not_the_same_object() -> None:
    model = AnthropicModel(model="claude-x", api_key="k")
    first = [Message.user("go"), Message.tool("c1", "ok"), Message.user("more")]
    copy = [Message.user("go"), Message.tool("c1", "ok"), Message.user("more")]
    for history in (first, copy, first[:2], copy):
        request = ModelRequest("s", history, TOOLS, 100)
        assert model.protocol(request, "k").body == _expected(model, request)


def test_the_common_prefix_of_two_lists_is_found_by_halving() -> None:
    assert common_prefix([1, 2, 3, 4], [1, 2, 9, 4, 5]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix([7], [1]) == 0


def test_a_body_joined_from_encoded_items_is_what_json_dumps_writes() -> None:
    body = {"model": "m", "messages": None, "n": 1.5, "tools": [{"é": "\u2028"}]}
    items = [json.dumps(item).encode() for item in ({"a": 1}, ["b"], "c")]
    expected = json.dumps({**body, "messages": [{"a": 1}, ["b"], "c"]}).encode()
    assert encoded_body(body, "messages", items) == expected
