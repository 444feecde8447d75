"""The Model port over OpenAI-compatible Chat Completions: OpenAI itself, and local
servers that speak the same protocol (Ollama, vLLM, llama.cpp, LM Studio).

Reasoning that streamed in goes back as DeepSeek's rule asks: ``reasoning_content`` on
every assistant message that called tools (``""`` when it thought nothing), and
OpenRouter's ``reasoning_details`` as they came. OpenAI's own API shows no reasoning on
this protocol and gets neither. The head of every request (the system prompt, the
tools) is the same from one request to the next, so a server's prefix cache holds,
and OpenAI's own API is told the session (``prompt_cache_key``) to route it there.

Example::

    model = OpenAIChatModel(model="gpt-4.1", api_key=os.environ.get("OPENAI_API_KEY"))
    async for item in model.stream(request):
        ...
"""

from __future__ import annotations

from typing import Any

from treadle.adapters.http_model.endpoint import OPENAI_BASE_URL, ModelOptions, OpenAIModel, Post
from treadle.adapters.http_model.openai_chat_reader import OpenAIChatReader
from treadle.adapters.http_model.payload import decode
from treadle.adapters.http_model.wire_forms import WireBytes, encoded, encoded_body
from treadle.domain.rules.arguments import sendable_arguments
from treadle.domain.values.conversation import Message
from treadle.domain.values.model import ModelRequest, ToolSpec

__all__ = ["OPENAI_BASE_URL", "OpenAIChatModel", "chat_messages", "chat_request_body"]
CONTINUE_PROMPT = "Continue exactly where your answer stopped; do not repeat anything."


class OpenAIChatModel(OpenAIModel):
    """Chat Completions: OpenAI itself, or any server that speaks it (no key needed)."""

    _forms: dict[bool, WireBytes] | None = None

    def protocol(self, request: ModelRequest, key: str | None) -> Post:
        echo = self.options.reasoning_echo and not self.hosted
        if self._forms is None:
            self._forms = {}
        forms = self._forms.get(echo)
        if forms is None:
            forms = self._forms[echo] = WireBytes(lambda message: encoded(_message(message, echo)))
        head, tail = _around(request)
        items = [*map(encoded, head), *forms.items(request.messages), *map(encoded, tail)]
        body = _body(request, [], self.model, self.hosted, self.options)
        return Post(
            "/chat/completions",
            self.key_headers(key),
            encoded_body(body, "messages", items),
            OpenAIChatReader(),
        )


def chat_request_body(
    request: ModelRequest, *, model: str, hosted: bool, options: ModelOptions | None = None
) -> dict[str, Any]:
    """The JSON body of a streamed Chat Completions request.

    The budget is ``max_completion_tokens`` on the hosted API (its reasoning models
    refuse ``max_tokens``) and ``max_tokens`` elsewhere, the name every compatible
    server knows. (The adapter sends the same bytes, each message encoded once.)
    """
    options = options or ModelOptions()
    messages = chat_messages(request, echo=options.reasoning_echo and not hosted)
    return _body(request, messages, model, hosted, options)


def _body(
    request: ModelRequest,
    messages: list[dict[str, Any]],
    model: str,
    hosted: bool,
    options: ModelOptions,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        ("max_completion_tokens" if hosted else "max_tokens"): request.max_tokens,
    }
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        if not request.tools_allowed:
            body["tool_choice"] = "none"
    if options.effort:
        body["reasoning_effort"] = options.effort
    if hosted and options.session:
        body["prompt_cache_key"] = options.session
    if hosted and request.output_schema is not None:
        # Not strict: strict mode takes only a subset of JSON Schema; treadle validates.
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": "final_answer",
                "schema": request.output_schema,
                "strict": False,
            },
        }
    return body


def chat_messages(request: ModelRequest, *, echo: bool = True) -> list[dict[str, Any]]:
    """The conversation in Chat Completions' shape; ``echo`` sends reasoning back."""
    head, tail = _around(request)
    return [*head, *(_message(message, echo) for message in request.messages), *tail]


def _around(request: ModelRequest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The entries before the conversation (the system prompt) and after it."""
    head = [{"role": "system", "content": request.system}] if request.system else []
    tail = []
    if request.continuation:
        # The protocol has no prefill: the answer so far goes back as the assistant's,
        # and the model is asked to go on from its last character.
        tail.append({"role": "assistant", "content": request.continuation})
        tail.append({"role": "user", "content": CONTINUE_PROMPT})
    return head, tail


def _message(message: Message, echo: bool) -> dict[str, Any]:
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
                # Arguments that are not a JSON object go back as {}: llama.cpp (and
                # Ollama) refuse any request that holds them. The transcript keeps them
                # as written, and the call's tool error quotes them to the model.
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": sendable_arguments(call.arguments),
                        },
                    }
                    for call in message.tool_calls
                ]
                if echo:
                    # DeepSeek refuses a tool loop without it, even when it is empty.
                    entry["reasoning_content"] = "".join(
                        r.text for r in message.reasoning if r.kind == "reasoning_content"
                    )
            details = [r.seal for r in message.reasoning if r.kind == "reasoning_details"]
            if echo and details:
                entry["reasoning_details"] = [d for seal in details for d in _details(seal)]
            return entry


def _details(seal: str) -> list[Any]:
    """OpenRouter's reasoning details as they came (nothing, should the seal be broken)."""
    try:
        details = decode(seal)
    except ValueError:
        return []
    return details if isinstance(details, list) else []


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }
