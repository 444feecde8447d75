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

from bisect import bisect_left
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from returns.result import Failure, Result

from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.assistant_parts import assistant_parts
from treadle.adapters.http_model.endpoint import HttpModel, ModelOptions, Post
from treadle.adapters.http_model.server_facts import ProbeTarget
from treadle.adapters.http_model.wire_forms import (
    REJOIN,
    WireForms,
    encoded,
    encoded_body,
    encoded_list,
    follow,
)
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
        session. This is no retry of its own: the seed's schedule (transient failures,
        their pauses) is the loop's, ``Responder``'s, for every protocol; the refusal is
        answered here because only this protocol knows what it asks to change."""
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

    _wire: WireMessages | None = None

    def protocol(self, request: ModelRequest, key: str | None) -> Post:
        headers = self.key_headers(key)
        if _thinks(request, self.options):
            reader = AnthropicReader()  # a continuation is asked for, not prefilled
        else:
            prefill = _prefill(request.continuation)
            reader = AnthropicReader(shown_whitespace=request.continuation[len(prefill) :])
        if self._wire is None:
            self._wire = WireMessages()
        thinks = _thinks(request, self.options)
        body = _body(request, [], self.model, self.options)
        marked = _mark_head(body) if self.options.prompt_cache else MAX_BREAKPOINTS
        messages = self._wire.encoded(request, thinking=thinks, marked=marked)
        if self._drops():
            thinking = body.setdefault("thinking", {"type": "adaptive"})
            thinking["block_binding"] = {"prefix_mismatch_behavior": "drop_block"}
            headers["anthropic-beta"] = BINDING_BETA
        return Post("/v1/messages", headers, encoded_body(body, "messages", messages), reader)


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
    """The JSON body of a streamed Messages request (the adapter sends the same bytes,
    each message's blocks encoded once: :class:`WireMessages`)."""
    options = options or ModelOptions()
    messages = anthropic_messages(request, thinking=_thinks(request, options))
    body = _body(request, messages, model, options)
    if options.prompt_cache:
        add_cache_breakpoints(body)
    return body


def _body(
    request: ModelRequest, messages: list[dict[str, Any]], model: str, options: ModelOptions
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "stream": True,
        "messages": messages,
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
    if request.output_schema is not None:  # structured outputs (GA: output_config.format)
        format_ = {"type": "json_schema", "schema": request.output_schema}
        body.setdefault("output_config", {})["format"] = format_
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
    marked = _mark_head(body)
    users = [m for m in body.get("messages", ()) if m["role"] == "user"]
    for message in reversed(users[-2:]):
        block = _cacheable(message["content"])
        if block is not None and marked < MAX_BREAKPOINTS:
            block["cache_control"] = dict(EPHEMERAL)
            marked += 1
    return marked


def _mark_head(body: dict[str, Any]) -> int:
    """Mark the end of the head (the system prompt, else the tools); how many marked."""
    head = body.get("system") or body.get("tools") or []
    if head:
        head[-1]["cache_control"] = dict(EPHEMERAL)
    return 1 if head else 0


def _cacheable(blocks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block of a message that may carry a marker."""
    for block in reversed(blocks):
        if _may_mark(block):
            found: dict[str, Any] = block
            return found
    return None


def _may_mark(block: dict[str, Any]) -> bool:
    return block["type"] in ("text", "tool_result", "tool_use") and block.get("text", "-") != ""


def anthropic_messages(request: ModelRequest, *, thinking: bool = False) -> list[dict[str, Any]]:
    """The conversation in Anthropic's shape: tool results are user content, and
    neighbours of one role are merged, since all results answering one assistant
    message must come in the single user message that follows it.

    A continued answer is prefilled (the model goes on from its last character),
    except with thinking on, which refuses a prefill: the answer so far then goes
    back as the assistant's, and the model is asked to go on."""
    messages: list[dict[str, Any]] = []
    turns = [(_role(message), _blocks(message)) for message in request.messages]
    for role, blocks in [*turns, *_continued(request, thinking)]:
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


def _continued(request: ModelRequest, thinking: bool) -> list[tuple[str, list[dict[str, Any]]]]:
    """The turns after the conversation that continue a cut answer (none for others)."""
    prefill = _prefill(request.continuation)
    if prefill and thinking:
        return [
            ("assistant", [{"type": "text", "text": request.continuation}]),
            ("user", [{"type": "text", "text": CONTINUE_PROMPT}]),
        ]
    if prefill:
        # The model goes on from the last character of this assistant text.
        return [("assistant", [{"type": "text", "text": prefill}])]
    return []


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


# The same messages, each message's blocks encoded once -----------------------------------

Block = tuple[str, bool, bytes]
"""A content block as sent: its type, whether it may carry a marker, its JSON."""
Turn = tuple[str, tuple[Block, ...]]
"""A message's role and blocks, before neighbours of one role are merged."""
MARKER = b', "cache_control": ' + encoded(EPHEMERAL) + b"}"
LOOSE = 8
"""Messages at the end left out of the joined prefix: markers go on the last two user
messages, never more than four back, since neighbours of one role are merged."""


def _wire_turn(message: Message) -> Turn:
    return _role(message), tuple(map(_wire_block, _blocks(message)))


def _wire_block(block: dict[str, Any]) -> Block:
    return block["type"], _may_mark(block), encoded(block)


class WireMessages:
    """:func:`anthropic_messages` with breakpoints, as the JSON of each message sent,
    made from what the last request made: each message's blocks are encoded once
    (:class:`WireForms`), and merged messages are kept up to the last one the new
    messages could change. The markers are put in when a request is joined, since they
    move with every request."""

    def __init__(self) -> None:
        self._forms = WireForms(_wire_turn)
        self._turns: list[Turn] = []
        # Each message sent: the index of its first turn, its role, blocks and JSON.
        self._starts: list[int] = []
        self._merged: list[tuple[str, list[Block]]] = []
        self._json: list[bytes] = []
        # The JSON of the first ``_joined`` messages, joined: a request copies it whole.
        self._joined = 0
        self._prefix = b""

    def encoded(self, request: ModelRequest, *, thinking: bool, marked: int) -> list[bytes]:
        """The JSON of each message; ``marked``: the breakpoints already in the body."""
        after = [(role, tuple(map(_wire_block, b))) for role, b in _continued(request, thinking)]
        forms = self._forms.of(request.messages)
        shared = follow(self._turns, [*forms, *after] if after else forms)
        turns = self._turns
        kept = bisect_left(self._starts, shared)
        # The last message kept from before could take in the turns that follow it.
        kept = max(0, kept - 1)
        if kept < self._joined:
            self._joined, self._prefix = 0, b""
        resume = self._starts[kept] if kept < len(self._starts) else 0
        del self._starts[kept:], self._merged[kept:], self._json[kept:]
        for index in range(resume, len(turns)):
            role, blocks = turns[index]
            if not blocks:
                continue  # an empty message (an interrupt before any text) says nothing
            if self._merged and self._merged[-1][0] == role and len(self._starts) > kept:
                self._merged[-1][1].extend(blocks)
            else:
                self._starts.append(index)
                self._merged.append((role, list(blocks)))
        for number in range(kept, len(self._merged)):
            role, merged = self._merged[number]
            if role == "user" and len(merged) > 1:
                # Results must lead a user message; text the person added goes after them.
                merged.sort(key=lambda block: block[0] != "tool_result")
            self._json.append(_message_json(role, [block[2] for block in merged]))
        marks = self._marks(marked)
        if len(self._json) - self._joined > REJOIN + LOOSE:
            self._joined = len(self._json) - LOOSE
            self._prefix = b", ".join(self._json[: self._joined])
        if marks and min(marks) < self._joined:  # a marker inside the prefix: none
            self._joined, self._prefix = 0, b""
        sent = self._json[self._joined :]  # the loose end: a few messages, not all
        for number, form in marks.items():
            sent[number - self._joined] = form
        return [self._prefix, *sent] if self._joined else sent

    def _marks(self, marked: int) -> dict[int, bytes]:
        """The JSON of the last two user messages with their markers (as
        :func:`add_cache_breakpoints` puts them), by their number; a joined prefix
        one of them falls in is given up."""
        sent: dict[int, bytes] = {}
        users = 0
        for number in range(len(self._merged) - 1, -1, -1):
            role, blocks = self._merged[number]
            if role != "user":
                continue
            where = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i][1]), None)
            if where is not None and marked < MAX_BREAKPOINTS:
                if number < self._joined:  # not where it was: joined again when next due
                    self._joined, self._prefix = 0, b""
                pieces = [block[2] for block in blocks]
                pieces[where] = pieces[where][:-1] + MARKER
                sent[number] = _message_json(role, pieces)
                marked += 1
            users += 1
            if users == 2:
                break
        return sent


def _message_json(role: str, blocks: list[bytes]) -> bytes:
    return b'{"role": ' + encoded(role) + b', "content": ' + encoded_list(blocks) + b"}"
