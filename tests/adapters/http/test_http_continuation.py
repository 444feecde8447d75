"""Continuing an answer cut by the token budget: the model is asked to go on from the
last character shown, and only the new text comes back — nothing repeated or lost at
the seam, including the whitespace an Anthropic prefill may not end with."""

from __future__ import annotations

import pytest

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import (
    KEY,
    a_request,
    anthropic_text_stream,
    listen,
    openai_text_stream,
)
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.openai_chat import CONTINUE_PROMPT
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.conversation import Message


async def _anthropic_continues(
    server: ScriptedServer, shown: str, deltas: list[str]
) -> tuple[str, list[dict[str, object]]]:
    server.add(Reply.sse(anthropic_text_stream(deltas)))
    model = AnthropicModel(model="claude-test", base_url=server.base_url, api_key=KEY)
    heard = await listen(model.stream(a_request(continuation=shown)))
    assert heard.end is not None
    return heard.text, server.requests[-1].json()["messages"]


async def test_anthropic_prefills_the_answer_so_far_without_its_trailing_whitespace(
    server: ScriptedServer,
) -> None:
    new, messages = await _anthropic_continues(server, "The files are a.py and ", [" b.py."])
    assert messages[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "The files are a.py and"}],
    }
    # The space was on screen already: the seam shows it once.
    assert "The files are a.py and " + new == "The files are a.py and b.py."


@pytest.mark.parametrize(
    ("shown", "deltas", "seen"),
    [
        # The model rewrites the whitespace the prefill left out, split across deltas.
        ("Step 1 done.\n\n", ["\n", "\nStep", " 2"], "Step 1 done.\n\nStep 2"),
        # It writes only part of it: nothing is lost either.
        ("Step 1 done.\n\n", ["\nStep 2"], "Step 1 done.\n\nStep 2"),
        # It goes straight on: the shown whitespace stays the separator.
        ("a.py and ", ["b.py"], "a.py and b.py"),
        # It starts with other whitespace: kept, since it was not shown.
        ("end. ", ["\nNext"], "end. \nNext"),
        # Nothing was left out of the prefill: everything new is shown.
        ("abc", [" def"], "abc def"),
        # Only whitespace that matches is dropped, and only at the seam.
        ("x  ", [" ", "y ", " z"], "x  y  z"),
    ],
)
async def test_the_seam_of_a_continued_anthropic_answer(
    server: ScriptedServer, shown: str, deltas: list[str], seen: str
) -> None:
    new, _ = await _anthropic_continues(server, shown, deltas)
    assert shown + new == seen


async def test_an_answer_of_whitespace_only_is_not_prefilled(server: ScriptedServer) -> None:
    new, messages = await _anthropic_continues(server, "\n\n", ["Hello"])
    assert [message["role"] for message in messages] == ["user"]
    assert new == "Hello"


async def test_the_prefill_follows_a_tool_result_in_its_own_assistant_message(
    server: ScriptedServer,
) -> None:
    server.add(Reply.sse(anthropic_text_stream(["more"])))
    model = AnthropicModel(model="claude-test", base_url=server.base_url, api_key=KEY)
    history = (Message.user("go"), Message.assistant("", ()), Message.tool("call_1", "ok"))
    await listen(model.stream(a_request(messages=history, continuation="So far")))
    messages = server.requests[-1].json()["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant"]
    assert messages[-1]["content"][-1] == {"type": "text", "text": "So far"}


def test_a_delta_made_only_of_shown_whitespace_yields_nothing() -> None:
    reader = AnthropicReader(shown_whitespace="\n\n")
    reader.read(SseEvent("message_start", '{"type":"message_start","message":{}}'))
    start = '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'
    reader.read(SseEvent("content_block_start", start))
    delta = '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\\n"}}'
    assert reader.read(SseEvent("content_block_delta", delta)) == []


async def test_openai_chat_sends_the_answer_so_far_and_asks_to_continue(
    server: ScriptedServer,
) -> None:
    server.add(Reply.sse(openai_text_stream([" b.py."])))
    model = OpenAIChatModel(model="gpt-test", base_url=server.base_url, api_key=KEY)
    heard = await listen(model.stream(a_request(continuation="The files are a.py and")))
    assert heard.text == " b.py."
    messages = server.requests[-1].json()["messages"]
    assert messages[-2:] == [
        {"role": "assistant", "content": "The files are a.py and"},
        {"role": "user", "content": CONTINUE_PROMPT},
    ]
    assert CONTINUE_PROMPT == "Continue exactly where your answer stopped; do not repeat anything."
