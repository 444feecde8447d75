"""The Model port over the Anthropic Messages API, streamed.

Example::

    model = AnthropicModel(model="claude-sonnet-4-5", api_key=os.environ.get("ANTHROPIC_API_KEY"))
    async for item in model.stream(request):
        ...
"""

from __future__ import annotations

import json
from typing import Any

from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.endpoint import HttpModel
from treadle.adapters.http_model.exchange import EventReader
from treadle.domain.values.conversation import Message
from treadle.domain.values.model import ModelRequest, ToolSpec

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicModel(HttpModel):
    """Messages, with the ``anthropic-version`` header; a gateway needs no key."""

    HOSTED_URL = ANTHROPIC_BASE_URL
    KEY_ENV = "ANTHROPIC_API_KEY"

    def normalized_base_url(self, base_url: str) -> str:
        # The path is /v1/messages under the base URL; a base URL given with its /v1
        # (as OpenAI-compatible ones are) would otherwise ask for /v1/v1/messages.
        return base_url.removesuffix("/v1")

    def protocol(
        self, request: ModelRequest, key: str | None
    ) -> tuple[str, dict[str, str], dict[str, Any], EventReader]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key is not None:
            headers["x-api-key"] = key
        prefill = _prefill(request.continuation)
        reader = AnthropicReader(shown_whitespace=request.continuation[len(prefill) :])
        return "/v1/messages", headers, messages_request_body(request, model=self.model), reader


def messages_request_body(request: ModelRequest, *, model: str) -> dict[str, Any]:
    """The JSON body of a streamed Messages request."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "stream": True,
        "messages": anthropic_messages(request),
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        if not request.tools_allowed:
            body["tool_choice"] = {"type": "none"}
    return body


def anthropic_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The conversation in Anthropic's shape: tool results are user content, and
    neighbours of one role are merged, since all results answering one assistant
    message must come in the single user message that follows it."""
    messages: list[dict[str, Any]] = []
    prefill = _prefill(request.continuation)
    turns = [(_role(message), _blocks(message)) for message in request.messages]
    if prefill:
        # The model goes on from the last character of this assistant text.
        turns.append(("assistant", [{"type": "text", "text": prefill}]))
    for role, blocks in turns:
        if not blocks:
            continue  # an empty message (an interrupt before any text) says nothing
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    for message in messages:
        content = message["content"]
        if message["role"] == "user" and len(content) > 1:
            # Results must lead a user message; text the person added goes after them.
            content.sort(key=lambda block: block["type"] != "tool_result")
    return messages


def _role(message: Message) -> str:
    return "assistant" if message.role == "assistant" else "user"


def _prefill(continuation: str) -> str:
    """The answer so far, as a prefill: Anthropic refuses one that ends in whitespace.
    What is cut here is already on the screen; the reader drops it from the new text."""
    return continuation.rstrip()


def _blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.text,
        }
        if message.is_error:
            result["is_error"] = True
        return [result]
    if message.text_for_model:
        blocks.append({"type": "text", "text": message.text_for_model})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        )
    return blocks


def _input(arguments: str) -> dict[str, Any]:
    # The API takes an object. Arguments that were not one were answered with a tool
    # error; sending {} keeps the conversation valid, and that error explains the rest.
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": dict(spec.parameters),
    }
