"""The Model port over OpenAI-compatible Chat Completions: OpenAI itself, and local
servers that speak the same protocol (Ollama, vLLM, llama.cpp, LM Studio).

Example::

    model = OpenAIChatModel(model="gpt-4.1", api_key=os.environ.get("OPENAI_API_KEY"))
    async for item in model.stream(request):
        ...
"""

from __future__ import annotations

from typing import Any

from treadle.adapters.http_model.endpoint import HttpModel
from treadle.adapters.http_model.exchange import EventReader
from treadle.adapters.http_model.openai_chat_reader import OpenAIChatReader
from treadle.domain.values.conversation import Message
from treadle.domain.values.model import ModelRequest, ToolSpec

OPENAI_BASE_URL = "https://api.openai.com/v1"
CONTINUE_PROMPT = "Continue exactly where your answer stopped; do not repeat anything."


class OpenAIChatModel(HttpModel):
    """Chat Completions: OpenAI itself, or any server that speaks it (no key needed)."""

    HOSTED_URL = OPENAI_BASE_URL
    KEY_ENV = "OPENAI_API_KEY"

    def protocol(
        self, request: ModelRequest, key: str | None
    ) -> tuple[str, dict[str, str], dict[str, Any], EventReader]:
        headers = {"authorization": f"Bearer {key}"} if key is not None else {}
        body = chat_request_body(request, model=self.model, hosted=self.hosted)
        return "/chat/completions", headers, body, OpenAIChatReader()


def chat_request_body(request: ModelRequest, *, model: str, hosted: bool) -> dict[str, Any]:
    """The JSON body of a streamed Chat Completions request.

    The budget is ``max_completion_tokens`` on the hosted API (its reasoning models
    refuse ``max_tokens``) and ``max_tokens`` elsewhere, the name every compatible
    server knows.
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(request),
        "stream": True,
        "stream_options": {"include_usage": True},
        ("max_completion_tokens" if hosted else "max_tokens"): request.max_tokens,
    }
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        if not request.tools_allowed:
            body["tool_choice"] = "none"
    return body


def chat_messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_message(message) for message in request.messages)
    if request.continuation:
        # The protocol has no prefill: the answer so far goes back as the assistant's,
        # and the model is asked to go on from its last character.
        messages.append({"role": "assistant", "content": request.continuation})
        messages.append({"role": "user", "content": CONTINUE_PROMPT})
    return messages


def _message(message: Message) -> dict[str, Any]:
    match message.role:
        case "user":
            return {"role": "user", "content": message.text}
        case "tool":
            # No error flag in this protocol: the result's own text says what failed.
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
        case "assistant":
            text = message.text_for_model
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            if message.tool_calls:
                entry["content"] = text or None
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in message.tool_calls
                ]
            return entry


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }
