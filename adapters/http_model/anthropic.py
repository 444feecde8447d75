"""The Model port over the Anthropic Messages API, streamed.

Extended thinking is asked for with a budget (``thinking_budget``) or an effort
(adaptive thinking); thinking and redacted-thinking blocks go back unmodified on the
assistant messages that had them, as the API requires in a tool loop. Prompt caching
puts ``cache_control`` breakpoints on the stable head (tools and system prompt) and on
the newest user messages, so each request reads what the one before it wrote.

Example::

    model = AnthropicModel(model="claude-sonnet-4-5", api_key=os.environ.get("ANTHROPIC_API_KEY"))
    async for item in model.stream(request):
        ...
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from returns.result import Failure, Result

from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.assistant_parts import assistant_parts
from treadle.adapters.http_model.endpoint import HttpModel, ModelOptions
from treadle.adapters.http_model.exchange import EventReader
from treadle.adapters.http_model.server_facts import ProbeTarget
from treadle.domain.rules.arguments import arguments_object
from treadle.domain.values.conversation import Message, Reasoning
from treadle.domain.values.model import (
    HttpStatusError,
    ModelError,
    ModelRequest,
    StreamEvent,
    ToolSpec,
)

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
CONTINUE_PROMPT = "Continue exactly where your answer stopped; do not repeat anything."
MAX_BREAKPOINTS = 4
"""The most ``cache_control`` markers the API takes in one request."""
EPHEMERAL = {"type": "ephemeral"}
BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The ``anthropic-beta`` value that lets a request say what to do with a thinking block
whose prefix changed."""
BINDING_MODELS = ("claude-fable-5-1",)
"""Models known to check that nothing before a thinking block sent back has changed
(Anthropic's "preserved thinking"); others are learned from their first refusal."""


class AnthropicModel(HttpModel):
    """Messages, with the ``anthropic-version`` header; a gateway needs no key."""

    HOSTED_URL = ANTHROPIC_BASE_URL
    KEY_ENV = "ANTHROPIC_API_KEY"
    drops_stale_thinking = False
    """Whether requests ask the API to drop a thinking block whose prefix changed rather
    than refuse them: treadle edits the history it sends (pruned results, compactions,
    a continued answer kept as one), which a model that binds its blocks to their
    prefix refuses by default. Set for the models known to, or once one refuses."""

    def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        return self._stream_learning_binding(request)

    async def _stream_learning_binding(
        self, request: ModelRequest
    ) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        """The answer; a refusal of a thinking block bound to another prefix (decided
        before any output) is answered at once by the same request, asking for such
        blocks to be dropped, as the refusal itself says to, and for the rest of the
        session."""
        for attempt in (1, 2):
            items = super().stream(request)
            try:
                async for item in items:
                    if attempt == 1 and not self._drops() and _asks_to_drop_bound_blocks(item):
                        self.drops_stale_thinking = True
                        break
                    yield item
                else:
                    return
            finally:
                close = getattr(items, "aclose", None)
                if close is not None:
                    await close()

    def _drops(self) -> bool:
        return self.drops_stale_thinking or self.model.startswith(BINDING_MODELS)

    def normalized_base_url(self, base_url: str) -> str:
        # The path is /v1/messages under the base URL; a base URL given with its /v1
        # (as OpenAI-compatible ones are) would otherwise ask for /v1/v1/messages.
        return base_url.removesuffix("/v1")

    def key_headers(self, key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key is not None:
            headers["x-api-key"] = key
        return headers

    def probe_target(self) -> ProbeTarget:
        # The base URL holds no /v1 here: the list of models is under /v1, as Messages is.
        return replace(super().probe_target(), models_url=f"{self.base_url}/v1/models")

    def protocol(
        self, request: ModelRequest, key: str | None
    ) -> tuple[str, dict[str, str], dict[str, Any], EventReader]:
        headers = self.key_headers(key)
        if _thinks(request, self.options):
            reader = AnthropicReader()  # a continuation is asked for, not prefilled
        else:
            prefill = _prefill(request.continuation)
            reader = AnthropicReader(shown_whitespace=request.continuation[len(prefill) :])
        body = messages_request_body(request, model=self.model, options=self.options)
        if self._drops():
            thinking = body.setdefault("thinking", {"type": "adaptive"})
            thinking["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
            headers["anthropic-beta"] = BINDING_BETA
        return "/v1/messages", headers, body, reader


def _asks_to_drop_bound_blocks(item: Result[StreamEvent, ModelError]) -> bool:
    """Whether ``item`` is the API's refusal of a thinking block bound to another
    conversation, which names the setting that lets it drop the block instead."""
    if not isinstance(item, Failure):
        return False
    error = item.failure()
    return (
        isinstance(error, HttpStatusError)
        and error.status == 400
        and "prefix_mismatch_behavior" in error.detail
    )


def messages_request_body(
    request: ModelRequest, *, model: str, options: ModelOptions | None = None
) -> dict[str, Any]:
    """The JSON body of a streamed Messages request."""
    options = options or ModelOptions()
    thinking = _thinks(request, options)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "stream": True,
        "messages": anthropic_messages(request, thinking=thinking),
    }
    if request.system:
        body["system"] = [{"type": "text", "text": request.system}]
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
        if not request.tools_allowed:
            body["tool_choice"] = {"type": "none"}
    if request.thinking_budget:
        body["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
    elif options.effort:
        body["thinking"] = {"type": "adaptive"}
    if options.effort:
        body["output_config"] = {"effort": options.effort}
    if options.prompt_cache:
        add_cache_breakpoints(body)
    return body


def _thinks(request: ModelRequest, options: ModelOptions) -> bool:
    return bool(request.thinking_budget or options.effort)


def add_cache_breakpoints(body: dict[str, Any]) -> int:
    """Mark what the next request will send again, so that it is read from the cache:
    the head (tools and system prompt, one marker at its end) and the last two user
    messages (the newest, written now and read by the next request, and the one the
    previous request marked, read now). Returns how many markers were put in; never
    more than the API's four, never on a thinking block or an empty text.

    Markers cost nothing where the prefix is too short to cache; a write costs 1.25×
    the input price and a read 0.1×, so a loop whose every request re-reads the last
    one's prefix pays about a third of its uncached price.
    """
    marked = 0
    head = body.get("system") or body.get("tools") or []
    if head:
        head[-1]["cache_control"] = dict(EPHEMERAL)
        marked += 1
    users = [m for m in body.get("messages", ()) if m["role"] == "user"]
    for message in reversed(users[-2:]):
        block = _cacheable(message["content"])
        if block is not None and marked < MAX_BREAKPOINTS:
            block["cache_control"] = dict(EPHEMERAL)
            marked += 1
    return marked


def _cacheable(blocks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block of a message that may carry a marker."""
    for block in reversed(blocks):
        if block["type"] in ("text", "tool_result", "tool_use") and block.get("text", "-") != "":
            found: dict[str, Any] = block
            return found
    return None


def anthropic_messages(request: ModelRequest, *, thinking: bool = False) -> list[dict[str, Any]]:
    """The conversation in Anthropic's shape: tool results are user content, and
    neighbours of one role are merged, since all results answering one assistant
    message must come in the single user message that follows it.

    A continued answer is prefilled (the model goes on from its last character),
    except with thinking on, which refuses a prefill: the answer so far then goes
    back as the assistant's, and the model is asked to go on."""
    messages: list[dict[str, Any]] = []
    prefill = _prefill(request.continuation)
    turns = [(_role(message), _blocks(message)) for message in request.messages]
    if prefill and thinking:
        turns.append(("assistant", [{"type": "text", "text": request.continuation}]))
        turns.append(("user", [{"type": "text", "text": CONTINUE_PROMPT}]))
    elif prefill:
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
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.text,
        }
        if message.is_error:
            result["is_error"] = True
        return [result]
    return assistant_parts(
        message,
        reasoning=_thinking_block,
        text=lambda text: {"type": "text", "text": text},
        call=lambda call: {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": _input(call.arguments),
        },
    )


def _thinking_block(reasoning: Reasoning) -> dict[str, Any] | None:
    """A thinking block exactly as it came; reasoning of other protocols stays home."""
    if reasoning.kind == "thinking":
        return {"type": "thinking", "thinking": reasoning.text, "signature": reasoning.seal}
    if reasoning.kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": reasoning.seal}
    return None


def _input(arguments: str) -> dict[str, Any]:
    # The API takes an object. Arguments that were not one were answered with a tool
    # error; sending {} keeps the conversation valid, and that error explains the rest.
    return arguments_object(arguments) or {}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": spec.description,
        "input_schema": dict(spec.parameters),
    }
