"""The Model port over the OpenAI Responses API, streamed: OpenAI's own (the only API
its newest models take tools with reasoning on), and servers that speak it.

Stateless, as Codex uses it: ``store: false``, the whole conversation sent as input
items every time, and each reasoning item that came back (with its
``encrypted_content``, asked for by ``include``) returned exactly as it came, in its
place before the calls it led to.

Example::

    model = OpenAIResponsesModel(model="gpt-5.1-codex", api_key=os.environ.get("OPENAI_API_KEY"))
    async for item in model.stream(request):
        ...
"""

from __future__ import annotations

import re
from typing import Any

from treadle.adapters.http_model.assistant_parts import assistant_parts
from treadle.adapters.http_model.endpoint import ModelOptions, OpenAIModel, Post
from treadle.adapters.http_model.openai_chat import CONTINUE_PROMPT
from treadle.adapters.http_model.openai_responses_reader import OpenAIResponsesReader
from treadle.adapters.http_model.payload import decode
from treadle.adapters.http_model.wire_forms import WireBytes, encoded, encoded_body
from treadle.domain.rules.arguments import sendable_arguments
from treadle.domain.values.conversation import Message, Reasoning
from treadle.domain.values.model import ModelRequest, ToolSpec

# Models that reason: they take a reasoning setting and hand back encrypted reasoning.
# Others refuse both ("Encrypted content is not supported with this model").
REASONING_MODELS = re.compile(r"(?:^|/)(?:o\d|gpt-5(?!-chat)|gpt-oss|codex)", re.IGNORECASE)


class OpenAIResponsesModel(OpenAIModel):
    """Responses: OpenAI itself, or any server that speaks it (no key needed)."""

    _forms: WireBytes | None = None

    def protocol(self, request: ModelRequest, key: str | None) -> Post:
        if self._forms is None:
            # A message is none, one or several items: its form is their JSON, joined.
            self._forms = WireBytes(lambda message: b", ".join(map(encoded, _items(message))))
        items = [*self._forms.items(request.messages), *map(encoded, _continued(request))]
        body = _body(request, [], self.model, self.hosted, self.options)
        return Post(
            "/responses",
            self.key_headers(key),
            encoded_body(body, "input", filter(None, items)),
            OpenAIResponsesReader(),
        )


def reasons(model: str, effort: str) -> bool:
    """Whether to ask ``model`` for reasoning: an effort is configured, or its name is
    that of a reasoning model (``o3``, ``gpt-5.1-codex``…)."""
    return bool(effort) or REASONING_MODELS.search(model) is not None


def responses_request_body(
    request: ModelRequest, *, model: str, hosted: bool, options: ModelOptions | None = None
) -> dict[str, Any]:
    """The JSON body of a streamed, stateless Responses request (the adapter sends the
    same bytes, each message encoded once)."""
    return _body(request, responses_input(request), model, hosted, options or ModelOptions())


def _body(
    request: ModelRequest,
    items: list[dict[str, Any]],
    model: str,
    hosted: bool,
    options: ModelOptions,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "input": items,
        "stream": True,
        "store": False,
        "max_output_tokens": request.max_tokens,
    }
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        body["tool_choice"] = "auto" if request.tools_allowed else "none"
        body["parallel_tool_calls"] = True
    if reasons(model, options.effort):
        reasoning: dict[str, str] = {"summary": "auto"}
        if options.effort:
            reasoning["effort"] = options.effort
        body["reasoning"] = reasoning
        body["include"] = ["reasoning.encrypted_content"]
    if hosted and options.session:
        body["prompt_cache_key"] = options.session
    if hosted and request.output_schema is not None:
        # Not strict: strict mode takes only a subset of JSON Schema; treadle validates.
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": "final_answer",
                "schema": request.output_schema,
                "strict": False,
            }
        }
    return body


def responses_input(request: ModelRequest) -> list[dict[str, Any]]:
    """The conversation as input items; a continued answer goes back as the assistant's,
    and the model is asked to go on from there."""
    items: list[dict[str, Any]] = []
    for message in request.messages:
        items += _items(message)
    return items + _continued(request)


def _continued(request: ModelRequest) -> list[dict[str, Any]]:
    """The items after the conversation: a continued answer, and the ask to go on."""
    if not request.continuation:
        return []
    return [_assistant_text(request.continuation), _user_text(CONTINUE_PROMPT)]


def _items(message: Message) -> list[dict[str, Any]]:
    match message.role:
        case "user":
            return [_user_text(message.text)]
        case "tool":
            # No error flag in this protocol: the result's own text says what failed.
            return [
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.text,
                }
            ]
        case "assistant":
            return assistant_parts(
                message,
                reasoning=_reasoning_item,
                text=_assistant_text,
                call=lambda call: {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    # Arguments that are not a JSON object go back as {}, as on Chat.
                    "arguments": sendable_arguments(call.arguments),
                },
            )


def _reasoning_item(reasoning: Reasoning) -> dict[str, Any] | None:
    """A reasoning item exactly as it came (none for another protocol's, or one whose
    seal is not an item: a transcript edited by hand)."""
    if reasoning.kind != "reasoning_item":
        return None
    try:
        item = decode(reasoning.seal)
    except ValueError:
        return None
    return item if isinstance(item, dict) else None


def _user_text(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _assistant_text(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "strict": False,
    }
