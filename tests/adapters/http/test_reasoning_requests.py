"""What goes back on the wire after reasoning, protocol by protocol: the request that
follows a tool call is the one the documented fixtures show (``requests/``), each
adapter sends only the reasoning its protocol takes, and the options a session sets
(thinking, effort, the prompt cache) land where each API wants them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import (
    KEY,
    STREAMS,
    a_request,
    anthropic_text_stream,
    listen,
    openai_text_stream,
    responses_text_stream,
    stream_file,
)
from tests.adapters.http.test_http_requests import Recorder
from treadle.adapters.http_model import (
    AnthropicModel,
    ModelOptions,
    OpenAIChatModel,
    OpenAIResponsesModel,
)
from treadle.adapters.http_model.anthropic import CONTINUE_PROMPT, add_cache_breakpoints
from treadle.adapters.http_model.endpoint import HttpModel
from treadle.domain.values.conversation import Message, Reasoning, ToolCall
from treadle.domain.values.model import ModelRequest, ToolSpec

READ_FILE = ToolSpec(
    "read_file",
    "Read a file from the workspace.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
EPHEMERAL = {"type": "ephemeral"}
THOUGHT = Reasoning("thinking", "Think.", seal="sig")
CONTENT = Reasoning("reasoning_content", "Reason.")
ITEM = Reasoning("reasoning_item", "Sum.", seal='{"type": "reasoning", "id": "rs_1"}')


def fixture_request(name: str) -> dict[str, Any]:
    return json.loads((STREAMS / "requests" / name).read_text())  # type: ignore[no-any-return]


async def follow_up(
    model: HttpModel, server: ScriptedServer, stream: str, task: str, result: str
) -> dict[str, Any]:
    """The body of the request after the tool call that ``stream`` makes."""
    server.add(Reply.sse(stream_file(stream)))
    first = await listen(model.stream(a_request(messages=[Message.user(task)], tools=[READ_FILE])))
    [call] = first.calls
    history = [
        Message.user(task),
        Message.assistant(first.text, (call,), reasoning=tuple(first.reasoning)),
        Message.tool(call.id, result),
    ]
    server.add(Reply.sse(stream_file(stream)))
    await listen(model.stream(a_request(messages=history, tools=[READ_FILE])))
    return server.requests[-1].json()  # type: ignore[no-any-return]


# What follows a tool call --------------------------------------------------------------


async def test_anthropic_sends_the_thinking_block_back_unmodified_before_its_tool_use(
    server: ScriptedServer,
) -> None:
    model = AnthropicModel(model="claude", base_url=server.base_url, api_key=KEY)
    expected = fixture_request("anthropic_followup_thinking_tool_result.json")
    task = expected["messages"][0]["content"]
    result = expected["messages"][2]["content"][0]["content"]
    body = await follow_up(
        model, server, "anthropic-thinking/thinking_then_tool_use.sse", task, result
    )
    assert body["messages"][1] == expected["messages"][1]
    assert body["messages"][2] == expected["messages"][2]  # the result, marked for the cache


async def test_deepseek_gets_reasoning_content_back_beside_the_tool_calls(
    server: ScriptedServer,
) -> None:
    model = OpenAIChatModel(model="deepseek", base_url=server.base_url, api_key=KEY)
    expected = fixture_request("deepseek_followup_tool_result.json")
    task = expected["messages"][0]["content"]
    result = expected["messages"][2]["content"]
    body = await follow_up(
        model, server, "chat-reasoning/deepseek_reasoning_then_tool_call.sse", task, result
    )
    assert body["messages"][2:] == expected["messages"][1:]  # after the system prompt


async def test_openrouter_gets_its_reasoning_details_back_as_they_came(
    server: ScriptedServer,
) -> None:
    model = OpenAIChatModel(model="openai/gpt-5.1", base_url=server.base_url, api_key=KEY)
    stream = "chat-reasoning/openrouter_encrypted_reasoning_then_tool_call.sse"
    body = await follow_up(model, server, stream, "Which port?", "port = 8123")
    details = body["messages"][2]["reasoning_details"]
    assert [d["type"] for d in details] == ["reasoning.summary", "reasoning.encrypted"]
    assert details[1]["data"].startswith("gAAAAABz7J5W") and details[1]["id"].startswith("rs_0c1d")


async def test_responses_sends_the_encrypted_reasoning_item_back_before_its_call(
    server: ScriptedServer,
) -> None:
    model = OpenAIResponsesModel(model="gpt-5.1-codex", base_url=server.base_url, api_key=KEY)
    expected = fixture_request("responses_followup_after_function_call.json")
    task = expected["input"][0]["content"][0]["text"]
    result = expected["input"][3]["output"]
    body = await follow_up(
        model, server, "responses/reasoning_then_function_call.sse", task, result
    )
    assert body["input"] == expected["input"]
    for key in ("store", "stream", "include", "tool_choice", "parallel_tool_calls"):
        assert body[key] == expected[key], key
    assert body["reasoning"] == {"summary": "auto"}  # no effort configured: the model's own


# Each protocol takes its own reasoning only ------------------------------------------------


@pytest.mark.parametrize(
    ("make", "kept"),
    [
        (lambda url: AnthropicModel(model="claude", base_url=url, api_key=KEY), "thinking"),
        (
            lambda url: OpenAIChatModel(model="deepseek", base_url=url, api_key=KEY),
            "reasoning_content",
        ),
        (lambda url: OpenAIResponsesModel(model="o3", base_url=url, api_key=KEY), "reasoning"),
    ],
    ids=["anthropic", "chat", "responses"],
)
async def test_a_history_from_another_protocol_sends_only_what_this_one_takes(
    server: ScriptedServer, make: Any, kept: str
) -> None:
    call = ToolCall("c1", "read_file", '{"path": "a"}')
    history = [
        Message.user("go"),
        Message.assistant("", (call,), reasoning=(THOUGHT, CONTENT, ITEM)),
        Message.tool("c1", "text"),
    ]
    server.add(Reply.sse(b""))
    await listen(make(server.base_url).stream(a_request(messages=history, tools=[READ_FILE])))
    sent = json.dumps(server.requests[0].json())
    marks = {"thinking": "Think.", "reasoning_content": "Reason.", "reasoning": "rs_1"}
    assert [kind for kind, mark in marks.items() if mark in sent] == [kept]


async def test_reasoning_goes_back_where_it_came_among_the_calls(server: ScriptedServer) -> None:
    calls = (ToolCall("c1", "read_file", "{}"), ToolCall("c2", "read_file", "{}"))
    later = Reasoning("thinking", "Second thought.", seal="sig2", position=1)
    history = [
        Message.user("go"),
        Message.assistant("Reading.", calls, reasoning=(THOUGHT, later)),
        Message.tool("c1", "a"),
        Message.tool("c2", "b"),
    ]
    model = AnthropicModel(model="claude", base_url=server.base_url, api_key=KEY)
    server.add(Reply.sse(anthropic_text_stream(["ok"])))
    await listen(model.stream(a_request(messages=history, tools=[READ_FILE])))
    content = server.requests[0].json()["messages"][1]["content"]
    assert [block.get("thinking") or block.get("text") or block["id"] for block in content] == [
        "Think.",
        "Reading.",
        "c1",
        "Second thought.",
        "c2",
    ]


# Thinking, effort, and the cache -----------------------------------------------------------


async def test_anthropic_thinks_with_a_budget_or_adaptively_with_an_effort(
    server: ScriptedServer,
) -> None:
    for options, thinking_budget in (
        (ModelOptions(), 2048),
        (ModelOptions(effort="high"), 0),
        (ModelOptions(), 0),
    ):
        model = AnthropicModel(
            model="claude", base_url=server.base_url, api_key=KEY, options=options
        )
        server.add(Reply.sse(anthropic_text_stream(["ok"])))
        request = ModelRequest(
            "sys", [Message.user("go")], [], 8192, thinking_budget=thinking_budget
        )
        await listen(model.stream(request))
    budget, adaptive, plain = (seen.json() for seen in server.requests)
    assert budget["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert budget["max_tokens"] == 8192  # the thinking counts inside it
    assert "output_config" not in budget
    assert adaptive["thinking"] == {"type": "adaptive"}
    assert adaptive["output_config"] == {"effort": "high"}
    assert "thinking" not in plain and "output_config" not in plain


async def test_a_thinking_answer_is_continued_by_asking_not_by_prefill(
    server: ScriptedServer,
) -> None:
    model = AnthropicModel(model="claude", base_url=server.base_url, api_key=KEY)
    server.add(Reply.sse(anthropic_text_stream([" more."])))
    request = ModelRequest(
        "sys", [Message.user("go")], [], 8192, continuation="So far ", thinking_budget=2048
    )
    heard = await listen(model.stream(request))
    messages = server.requests[0].json()["messages"]
    assert messages[-2] == {"role": "assistant", "content": [{"type": "text", "text": "So far "}]}
    assert messages[-1]["content"][0]["text"] == CONTINUE_PROMPT
    assert heard.text == " more."  # nothing of the shown text is held back


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (
            lambda url, o: OpenAIChatModel(model="o4-mini", base_url=url, api_key=KEY, options=o),
            "reasoning_effort",
        ),
        (
            lambda url, o: OpenAIResponsesModel(
                model="o4-mini", base_url=url, api_key=KEY, options=o
            ),
            "reasoning",
        ),
    ],
    ids=["chat", "responses"],
)
async def test_an_effort_is_passed_where_configured(
    server: ScriptedServer, make: Any, field: str
) -> None:
    server.add(Reply.sse(b""), Reply.sse(b""))
    await listen(make(server.base_url, ModelOptions(effort="low")).stream(a_request()))
    await listen(make(server.base_url, ModelOptions()).stream(a_request()))
    configured, default = (seen.json() for seen in server.requests)
    assert configured[field] in ("low", {"effort": "low", "summary": "auto"})
    assert "reasoning_effort" not in default
    assert default.get("reasoning", {}).get("effort") is None


async def test_a_model_that_does_not_reason_is_not_asked_for_encrypted_reasoning(
    server: ScriptedServer,
) -> None:
    server.add(Reply.sse(b""), Reply.sse(b""))
    for name in ("gpt-4.1", "gpt-5-chat-latest"):
        model = OpenAIResponsesModel(model=name, base_url=server.base_url, api_key=KEY)
        await listen(model.stream(a_request()))
    for seen in server.requests:
        assert "include" not in seen.json() and "reasoning" not in seen.json()
        assert seen.json()["store"] is False


@pytest.mark.parametrize("adapter", [OpenAIChatModel, OpenAIResponsesModel])
async def test_openais_own_api_is_told_the_session_for_its_prompt_cache(adapter: Any) -> None:
    recorder = Recorder(openai_text_stream(["ok"]))
    options = ModelOptions(session="20261201-101010-abcdef")
    hosted = adapter(model="gpt-5.1", api_key=KEY, transport=recorder, options=options)
    await listen(hosted.stream(a_request()))
    assert json.loads(recorder.requests[0].content)["prompt_cache_key"] == options.session


@pytest.mark.parametrize("adapter", [OpenAIChatModel, OpenAIResponsesModel])
async def test_other_servers_are_not_told_the_session(server: ScriptedServer, adapter: Any) -> None:
    server.add(Reply.sse(b""))
    local = adapter(
        model="qwen", base_url=server.base_url, api_key=None, options=ModelOptions(session="s1")
    )
    await listen(local.stream(a_request()))
    assert "prompt_cache_key" not in server.requests[0].json()


async def test_openais_own_chat_api_gets_no_reasoning_content() -> None:
    recorder = Recorder(openai_text_stream(["ok"]))
    model = OpenAIChatModel(model="gpt-5.1", api_key=KEY, transport=recorder)
    call = ToolCall("c1", "read_file", "{}")
    history = [Message.user("go"), Message.assistant("", (call,)), Message.tool("c1", "a")]
    await listen(model.stream(a_request(messages=history)))
    assert "reasoning_content" not in json.loads(recorder.requests[0].content)["messages"][2]


@pytest.mark.parametrize(
    ("make", "stream"),
    [
        (
            lambda url: OpenAIChatModel(model="m", base_url=url, api_key=KEY),
            openai_text_stream(["ok"]),
        ),
        (
            lambda url: OpenAIResponsesModel(model="o3", base_url=url, api_key=KEY),
            responses_text_stream(["ok"]),
        ),
        (
            lambda url: AnthropicModel(model="c", base_url=url, api_key=KEY),
            anthropic_text_stream(["ok"]),
        ),
    ],
    ids=["chat", "responses", "anthropic"],
)
async def test_the_head_of_a_request_is_the_same_bytes_from_one_request_to_the_next(
    server: ScriptedServer, make: Any, stream: bytes
) -> None:
    """Nothing that changes per request comes before the history: a server's prefix
    cache holds from one request of a turn to the next."""
    call = ToolCall("c1", "read_file", "{}")
    grown = [Message.user("go"), Message.assistant("", (call,)), Message.tool("c1", "a")]
    model = make(server.base_url)
    for messages, budget in (([Message.user("go")], 1024), (grown, 2048)):
        server.add(Reply.sse(stream))
        await listen(
            model.stream(a_request(messages=messages, tools=[READ_FILE], max_tokens=budget))
        )
    first, second = (_without_what_moves(seen.json()) for seen in server.requests)
    history = "messages" if "messages" in first else "input"
    assert {k: v for k, v in first.items() if k != history} == {
        k: v for k, v in second.items() if k != history
    }
    assert second[history][: len(first[history])] == first[history]


def _without_what_moves(body: dict[str, Any]) -> dict[str, Any]:
    """A body without its budget and its cache markers: what moves between requests."""
    for key in ("max_tokens", "max_output_tokens", "max_completion_tokens"):
        body.pop(key, None)
    blocks = [*body.get("system", []), *body.get("tools", [])]
    for message in body.get("messages", []):
        if isinstance(message.get("content"), list):
            blocks += message["content"]
    for block in blocks:
        if isinstance(block, dict):
            block.pop("cache_control", None)
    return body


def test_breakpoints_mark_the_head_and_the_two_newest_user_messages_never_an_empty_text() -> None:
    body: dict[str, Any] = {
        "system": [{"type": "text", "text": "sys"}],
        "tools": [{"name": "t"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "one"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
            {
                "role": "user",
                "content": [{"type": "text", "text": "two"}, {"type": "text", "text": ""}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
            {"role": "user", "content": [{"type": "text", "text": "three"}]},
        ],
    }
    assert add_cache_breakpoints(body) == 3
    marked = [
        block["text"]
        for message in body["messages"]
        for block in message["content"]
        if "cache_control" in block
    ]
    assert marked == ["two", "three"]
    assert "cache_control" in body["system"][0] and "cache_control" not in body["tools"][0]
