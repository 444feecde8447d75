"""The Model port over OpenAI-compatible Chat Completions: OpenAI itself, and local
servers that speak the same protocol (Ollama, vLLM, llama.cpp, LM Studio).

Example::

    model = OpenAIChatModel(model="gpt-4.1", api_key=os.environ.get("OPENAI_API_KEY"))
    async for item in model.stream(request):
        ...
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from returns.result import Result

from treadle.adapters.http_model.exchange import HttpRequest, exchange, failing
from treadle.adapters.http_model.openai_chat_reader import OpenAIChatReader
from treadle.adapters.http_model.transport import Connection, checked_base_url
from treadle.ports.conversation import Message
from treadle.ports.model import (
    CredentialsRejected,
    ModelError,
    ModelRequest,
    StreamEvent,
    ToolSpec,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
CONTINUE_PROMPT = "Continue exactly where your answer stopped; do not repeat anything."


class OpenAIChatModel:
    """Chat Completions, streamed; one attempt per :meth:`stream` call, each on a new
    connection (the turn loop decides about retries).

    ``api_key`` is the key itself (the caller reads it from ``key_env``, which is only
    named here to say what to set). The hosted API needs one; a server at another
    ``base_url`` gets one only if it is given. ``transport`` is for tests and
    benchmarks: the adapter then uses it as lent, and never closes it.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None,
        key_env: str = "OPENAI_API_KEY",
        connect_timeout: float = 10,
        read_timeout: float = 120,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = checked_base_url(base_url)
        self.key_env = key_env
        self._key = api_key or None
        self._hosted = self.base_url == OPENAI_BASE_URL
        self._connection = Connection(connect_timeout, read_timeout, transport)

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        if self._key is None and self._hosted:
            return failing(CredentialsRejected(f"no API key: set {self.key_env}"))
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._key is not None:
            headers["authorization"] = f"Bearer {self._key}"
        body = chat_request_body(request, model=self.model, hosted=self._hosted)
        http_request = HttpRequest(
            f"{self.base_url}/chat/completions",
            headers,
            json.dumps(body).encode(),
            self._key,
            self.key_env,
        )
        return exchange(http_request, self._connection, OpenAIChatReader())


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
