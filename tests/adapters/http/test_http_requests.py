"""What goes on the wire: the body each protocol expects, the headers, and the key —
sent where it belongs and nowhere else, never in a message that comes back."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import KEY, a_request, listen, stream_file
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.model import CredentialsRejected, ToolSpec

BASH = ToolSpec(
    "bash",
    "Run a command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
CALL = ToolCall("call_1", "bash", '{"command": "ls"}')
EPHEMERAL = {"type": "ephemeral"}
BROKEN_CALL = ToolCall("call_2", "bash", '{"command": ls}')
HISTORY = (
    Message.user("List the files."),
    Message.assistant("Looking.", (CALL, BROKEN_CALL)),
    Message.tool("call_1", "a.py\nb.py"),
    Message.tool("call_2", "invalid JSON arguments", is_error=True),
    Message.assistant("Two files."),
    Message.user("Thanks."),
)


class Recorder(httpx.AsyncBaseTransport):
    """Answers every request with ``body`` and keeps the requests."""

    def __init__(self, body: bytes = b"") -> None:
        self.body = body
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=self.body)


async def test_openai_chat_request_carries_the_whole_conversation(server: ScriptedServer) -> None:
    server.add(Reply.sse(stream_file("openai-chat/text_with_usage.sse")))
    model = OpenAIChatModel(model="gpt-test", base_url=f"{server.base_url}/v1/", api_key=KEY)
    await listen(model.stream(a_request(messages=HISTORY, tools=[BASH], max_tokens=2048)))
    [seen] = server.requests
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.headers["authorization"] == f"Bearer {KEY}"
    assert seen.headers["accept"] == "text/event-stream"
    assert seen.headers["content-type"] == "application/json"
    assert seen.json() == {
        "model": "gpt-test",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 2048,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": "Looking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        # Not JSON: sent as an empty object, which every server accepts.
                        "function": {"name": "bash", "arguments": "{}"},
                    },
                ],
                # DeepSeek's rule, on every server but OpenAI's own: even when empty.
                "reasoning_content": "",
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
            {"role": "tool", "tool_call_id": "call_2", "content": "invalid JSON arguments"},
            {"role": "assistant", "content": "Two files."},
            {"role": "user", "content": "Thanks."},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "bash",
                    "description": "Run a command.",
                    "parameters": dict(BASH.parameters),
                },
            }
        ],
    }


async def test_openai_chat_asks_the_hosted_api_with_max_completion_tokens() -> None:
    recorder = Recorder(stream_file("openai-chat/text_with_usage.sse"))
    model = OpenAIChatModel(model="gpt-4.1", api_key=KEY, transport=recorder)
    await listen(model.stream(a_request(max_tokens=512)))
    [sent] = recorder.requests
    assert str(sent.url) == "https://api.openai.com/v1/chat/completions"
    body = json.loads(sent.content)
    assert body["max_completion_tokens"] == 512
    assert "max_tokens" not in body


async def test_openai_chat_sends_no_empty_tools_or_system(server: ScriptedServer) -> None:
    server.add(Reply.sse(stream_file("openai-chat/text_with_usage.sse")))
    model = OpenAIChatModel(model="gpt-test", base_url=server.base_url, api_key=KEY)
    await listen(model.stream(a_request(system="", tools=())))
    body = server.requests[0].json()
    assert "tools" not in body
    assert [message["role"] for message in body["messages"]] == ["user"]


async def test_anthropic_request_carries_the_whole_conversation(server: ScriptedServer) -> None:
    server.add(Reply.sse(stream_file("anthropic/basic_response.sse")))
    model = AnthropicModel(model="claude-test", base_url=server.base_url, api_key=KEY)
    await listen(model.stream(a_request(messages=HISTORY, tools=[BASH], max_tokens=2048)))
    [seen] = server.requests
    assert (seen.method, seen.path) == ("POST", "/v1/messages")
    assert seen.headers["x-api-key"] == KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in seen.headers
    assert seen.json() == {
        "model": "claude-test",
        "max_tokens": 2048,
        "stream": True,
        # The stable head, and the two newest user messages, are marked for the cache.
        "system": [{"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "List the files."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "bash",
                        "input": {"command": "ls"},
                    },
                    # Arguments that are not JSON still need an object here.
                    {"type": "tool_use", "id": "call_2", "name": "bash", "input": {}},
                ],
            },
            {
                # Both results answer one assistant message: one user message holds them.
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "a.py\nb.py"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": "invalid JSON arguments",
                        "is_error": True,
                        "cache_control": EPHEMERAL,
                    },
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]},
            {
                "role": "user",
                "content": [{"type": "text", "text": "Thanks.", "cache_control": EPHEMERAL}],
            },
        ],
        "tools": [
            {
                "name": "bash",
                "description": "Run a command.",
                "input_schema": dict(BASH.parameters),
            }
        ],
    }


async def test_anthropic_puts_tool_results_before_what_the_person_added() -> None:
    recorder = Recorder(stream_file("anthropic/basic_response.sse"))
    model = AnthropicModel(model="claude-test", api_key=KEY, transport=recorder)
    history = (
        Message.user("Run ls."),
        Message.assistant("", (CALL,)),
        Message.user("Also, hurry."),
        Message.tool("call_1", "a.py"),
        Message.assistant("", interrupted=True),
    )
    await listen(model.stream(a_request(messages=history)))
    messages = json.loads(recorder.requests[0].content)["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}
    ]
    assert [block["type"] for block in messages[2]["content"]] == ["tool_result", "text"]


@pytest.mark.parametrize(
    ("make", "needed"),
    [
        (lambda t: OpenAIChatModel(model="gpt", api_key=None, transport=t), "OPENAI_API_KEY"),
        (lambda t: AnthropicModel(model="claude", api_key="", transport=t), "ANTHROPIC_API_KEY"),
        (
            lambda t: OpenAIChatModel(model="gpt", api_key=None, key_env="WORK_KEY", transport=t),
            "WORK_KEY",
        ),
    ],
)
async def test_the_hosted_api_without_a_key_is_not_even_asked(make, needed) -> None:
    recorder = Recorder()
    heard = await listen(make(recorder).stream(a_request()))
    assert heard.failure == CredentialsRejected(f"no API key: set {needed}")
    assert recorder.requests == []


async def test_a_local_server_needs_no_key(server: ScriptedServer) -> None:
    server.add(Reply.sse(stream_file("openai-chat/text_with_usage.sse")))
    model = OpenAIChatModel(model="llama", base_url=server.base_url, api_key=None)
    heard = await listen(model.stream(a_request()))
    assert heard.end is not None
    assert "authorization" not in server.requests[0].headers


MASKED = KEY[:6] + "***" + KEY[-4:]


@pytest.mark.parametrize(
    "reply",
    [
        Reply.error(400, {"error": {"message": f"bad request from key {KEY}", "type": "x"}}),
        Reply.error(500, {"error": {"message": f"Incorrect API key provided: {MASKED}."}}),
        Reply.error(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        Reply(503, (f"upstream said Bearer {KEY}".encode(),), "text/plain"),
        Reply.sse(
            b'data: {"error": {"message": "key %s is over quota", "type": "server_error"}}\n\n'
            % KEY.encode()
        ),
    ],
    ids=["400", "500-masked", "401", "503-text", "mid-stream"],
)
async def test_the_key_never_comes_back_in_a_message(server: ScriptedServer, reply: Reply) -> None:
    server.add(reply)
    model = OpenAIChatModel(model="gpt-test", base_url=server.base_url, api_key=KEY)
    heard = await listen(model.stream(a_request()))
    assert heard.failure is not None
    message = heard.failure.describe() + repr(heard.failure)
    assert KEY not in message
    assert MASKED not in message
    assert KEY not in repr(model)


def test_a_base_url_that_is_not_http_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        OpenAIChatModel(model="gpt", base_url="localhost:11434/v1", api_key=None)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_an_interrupted_answer_is_sent_back_marked_as_cut_off(protocol: str) -> None:
    name = (
        "openai-chat/text_with_usage.sse"
        if protocol == "openai"
        else "anthropic/basic_response.sse"
    )
    recorder = Recorder(stream_file(name))
    model = (
        OpenAIChatModel(model="gpt", api_key=KEY, transport=recorder)
        if protocol == "openai"
        else AnthropicModel(model="claude-test", api_key=KEY, transport=recorder)
    )
    history = (
        Message.user("Explain."),
        Message.assistant("It is because", interrupted=True),
        Message.user("Go on."),
    )
    await listen(model.stream(a_request(messages=history)))
    messages = json.loads(recorder.requests[0].content)["messages"]
    assistant = next(m for m in messages if m["role"] == "assistant")
    content = assistant["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    assert text == "It is because\n\n[this answer was cut off here]"


def test_an_anthropic_base_url_given_with_its_v1_is_not_doubled() -> None:
    model = AnthropicModel(model="claude", base_url="http://127.0.0.1:9/v1/", api_key=KEY)
    assert model.base_url == "http://127.0.0.1:9"


async def test_a_server_that_answers_json_instead_of_a_stream_is_named_as_such() -> None:
    class JsonAnswer(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]})

    model = OpenAIChatModel(
        model="gpt", base_url="http://127.0.0.1:9/v1", api_key=None, transport=JsonAnswer()
    )
    items = await listen(model.stream(a_request()))
    assert "answered with one JSON document, not an event stream" in str(items.items[-1])
