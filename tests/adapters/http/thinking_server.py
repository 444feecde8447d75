"""A server that thinks, for the real test server's ``guard``: it signs the reasoning it
streams, and refuses a tool loop unless that reasoning comes back unchanged, as the
real APIs do. Anthropic wants its thinking blocks back with valid signatures before
the tool use they led to; DeepSeek wants ``reasoning_content`` on every assistant
message that called tools; OpenAI's Responses API wants each encrypted reasoning item
back, whole, before its function call. For Anthropic it also checks the cache
markers: never more than four, never on thinking, and it keeps the prefix before the
first one of every request, to compare.

Example::

    thinker = ThinkingServer("anthropic")
    async with ScriptedServer.running(guard=thinker) as server:
        server.add(thinker.calling("I need the file list.", Call("call_1", "bash", ls)))
        server.add(thinker.answering("Done."))
        ...
    assert thinker.refusals == []
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.adapters.http.server import Reply, SeenRequest
from tests.adapters.http.support import STREAMS

Protocol = Literal["anthropic", "chat", "responses"]
SECRET = b"only this server knows"
MAX_MARKERS = 4
DEEPSEEK_REFUSAL = json.loads(
    (STREAMS / "errors/deepseek_400_reasoning_content_missing.json").read_text()
)
NOT_PERSISTED = json.loads(
    (STREAMS / "errors/openai_responses_404_item_not_persisted.json").read_text()
)


def sign(*parts: str) -> str:
    """What only this server can write: an HMAC of ``parts``, base64."""
    digest = hmac.new(SECRET, "\x00".join(parts).encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def sse(events: Sequence[tuple[str, dict[str, Any]]]) -> bytes:
    """Named events (``name`` "" for an unnamed ``data:`` line), one blank line after each."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


@dataclass(frozen=True)
class Call:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ThinkingServer:
    """The guard of a :class:`ScriptedServer`, and the maker of the streams it plays.

    ``refusals`` says why each refused request was refused; ``prefixes`` holds, for each
    Anthropic request, its prefix up to and with the first cache marker, as canonical
    JSON; ``markers`` how many markers each request carried.
    """

    protocol: Protocol
    refusals: list[str] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    markers: list[int] = field(default_factory=list)
    owed: dict[str, Any] = field(default_factory=dict)  # call id: what must come back first
    _items: int = 0

    # The guard ------------------------------------------------------------------------

    def __call__(self, seen: SeenRequest) -> Reply | None:
        body = seen.json()
        check = {
            "anthropic": self._anthropic,
            "chat": self._chat,
            "responses": self._responses,
        }[self.protocol]
        refusal = check(body)
        if refusal is None:
            return None
        why, reply = refusal
        self.refusals.append(why)
        return reply

    def _anthropic(self, body: dict[str, Any]) -> tuple[str, Reply] | None:
        blocks = [("tools", tool) for tool in body.get("tools", [])]
        blocks += [("system", block) for block in body.get("system", [])]
        for message in body["messages"]:
            content = message["content"]
            for block in content if isinstance(content, list) else [{"text": content}]:
                blocks.append((message["role"], block))
        marked = [i for i, (_, block) in enumerate(blocks) if "cache_control" in block]
        self.markers.append(len(marked))
        if len(marked) > MAX_MARKERS:
            why = f"A maximum of 4 blocks with cache_control may be provided. Found {len(marked)}."
            return why, _anthropic_error(why)
        for index in marked:
            if blocks[index][1].get("type") in ("thinking", "redacted_thinking"):
                why = "cache_control cannot be set on thinking blocks"
                return why, _anthropic_error(why)
        if marked:
            # As sent: keys in the order the request had them, so a reordering shows.
            self.prefixes.append(json.dumps(blocks[: marked[0] + 1], ensure_ascii=False))
        for number, message in enumerate(body["messages"]):
            content = message["content"]
            if message["role"] != "assistant" or not isinstance(content, list):
                continue
            for position, block in enumerate(content):
                if block.get("type") == "thinking" and block.get("signature") != sign(
                    block.get("thinking", "")
                ):
                    where = f"messages.{number}.content.{position}"
                    why = f"{where}: Invalid `signature` in `thinking` block"
                    return why, _anthropic_error(why)
                owed = (
                    self.owed.get(block.get("id", "")) if block.get("type") == "tool_use" else None
                )
                if owed is not None and content[: len(owed)] != owed:
                    why = (
                        f"messages.{number}.content.0.type: Expected `thinking` or "
                        "`redacted_thinking`, but found something else. When `thinking` is "
                        "enabled, an assistant message with tool use must start with the "
                        "thinking blocks it was given, unmodified"
                    )
                    return why, _anthropic_error(why)
        return None

    def _chat(self, body: dict[str, Any]) -> tuple[str, Reply] | None:
        for message in body["messages"]:
            if message["role"] != "assistant" or not message.get("tool_calls"):
                continue
            owed = {self.owed.get(call["id"]) for call in message["tool_calls"]} - {None}
            given = message.get("reasoning_content")
            if given is None or (owed and owed != {given}):
                why = DEEPSEEK_REFUSAL["error"]["message"]
                return why, Reply.error(400, DEEPSEEK_REFUSAL)
        return None

    def _responses(self, body: dict[str, Any]) -> tuple[str, Reply] | None:
        if body.get("store") is not False or "reasoning.encrypted_content" not in body.get(
            "include", []
        ):
            why = "stateless reasoning needs store: false and include reasoning.encrypted_content"
            return why, _openai_error(400, why)
        items = body["input"]
        for position, item in enumerate(items):
            if item.get("type") == "reasoning":
                if "encrypted_content" not in item:
                    return NOT_PERSISTED["error"]["message"], Reply.error(404, NOT_PERSISTED)
                summary = "".join(part["text"] for part in item.get("summary", []))
                if item["encrypted_content"] != _encrypted(item.get("id", ""), summary):
                    shown = item["encrypted_content"][:8]
                    why = f"The encrypted content {shown}… could not be verified."
                    return why, _openai_error(400, why, "invalid_encrypted_content")
            owed = (
                self.owed.get(item.get("call_id", ""))
                if item.get("type") == "function_call"
                else None
            )
            if owed is not None and owed not in items[:position]:
                why = (
                    f"Item '{item.get('call_id')}' of type 'function_call' was provided without "
                    f"its required 'reasoning' item: '{owed['id']}'."
                )
                return why, _openai_error(400, why)
        return None

    # The streams it plays ---------------------------------------------------------------

    def calling(self, thought: str, *calls: Call, redacted: str = "") -> Reply:
        """A response that thinks ``thought`` (and, for Anthropic, holds a redacted block
        of data ``redacted``), then calls ``calls``; what must come back is noted."""
        make = {"anthropic": self._anthropic_calling, "chat": self._chat_calling}
        return Reply.sse(make.get(self.protocol, self._responses_calling)(thought, calls, redacted))

    def answering(self, text: str, thought: str = "") -> Reply:
        """A response that thinks ``thought`` (if any), then answers ``text``."""
        make = {"anthropic": self._anthropic_calling, "chat": self._chat_calling}
        return Reply.sse(make.get(self.protocol, self._responses_calling)(thought, (), "", text))

    def _anthropic_calling(
        self, thought: str, calls: Sequence[Call], redacted: str, text: str = ""
    ) -> bytes:
        usage = {"input_tokens": 50, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": {"usage": usage}})
        ]
        given: list[dict[str, Any]] = []
        index = 0
        if thought:
            block = {"type": "thinking", "thinking": "", "signature": ""}
            events.append(_start(index, block))
            half = len(thought) // 2
            for piece in (thought[:half], thought[half:]):
                events.append(_delta(index, {"type": "thinking_delta", "thinking": piece}))
            signature = sign(thought)
            events.append(_delta(index, {"type": "signature_delta", "signature": signature}))
            events.append(_stop(index))
            given.append({"type": "thinking", "thinking": thought, "signature": signature})
            index += 1
        if redacted:
            events += [_start(index, {"type": "redacted_thinking", "data": redacted}), _stop(index)]
            given.append({"type": "redacted_thinking", "data": redacted})
            index += 1
        if text:
            events.append(_start(index, {"type": "text", "text": ""}))
            events += [_delta(index, {"type": "text_delta", "text": text}), _stop(index)]
            index += 1
        for call in calls:
            events.append(
                _start(index, {"type": "tool_use", "id": call.id, "name": call.name, "input": {}})
            )
            partial = {"type": "input_json_delta", "partial_json": json.dumps(call.arguments)}
            events += [_delta(index, partial), _stop(index)]
            self.owed[call.id] = given
            index += 1
        stop = "tool_use" if calls else "end_turn"
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop},
                    "usage": {"output_tokens": 30},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return sse(events)

    def _chat_calling(
        self, thought: str, calls: Sequence[Call], redacted: str, text: str = ""
    ) -> bytes:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, dict[str, Any]]:
            return "", {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
        half = len(thought) // 2
        events += [
            chunk({"content": None, "reasoning_content": piece})
            for piece in (thought[:half], thought[half:])
            if piece
        ]
        if text:
            events.append(chunk({"content": text}))
        for number, call in enumerate(calls):
            fragment = {
                "index": number,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            events.append(chunk({"tool_calls": [fragment]}))
            self.owed[call.id] = thought
        events.append(chunk({}, "tool_calls" if calls else "stop"))
        usage = {
            "prompt_tokens": 50,
            "completion_tokens": 30,
            "completion_tokens_details": {"reasoning_tokens": 20},
        }
        events.append(("", {"choices": [], "usage": usage}))
        return sse(events) + b"data: [DONE]\n\n"

    def _responses_calling(
        self, thought: str, calls: Sequence[Call], redacted: str, text: str = ""
    ) -> bytes:
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "response.created",
                {"type": "response.created", "response": {"status": "in_progress"}},
            )
        ]
        output = 0
        if thought:
            self._items += 1
            item_id = f"rs_{self._items:04d}"
            events.append(_added(output, {"id": item_id, "type": "reasoning", "summary": []}))
            half = len(thought) // 2
            for piece in (thought[:half], thought[half:]):
                events.append(
                    (
                        "response.reasoning_summary_text.delta",
                        {
                            "type": "response.reasoning_summary_text.delta",
                            "item_id": item_id,
                            "output_index": output,
                            "summary_index": 0,
                            "delta": piece,
                        },
                    )
                )
            reasoning = {
                "id": item_id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": thought}],
                "encrypted_content": _encrypted(item_id, thought),
            }
            events.append(_done(output, reasoning))
            output += 1
        if text:
            message = {"id": f"msg_{output}", "type": "message", "role": "assistant", "content": []}
            events.append(_added(output, message))
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": message["id"],
                        "output_index": output,
                        "content_index": 0,
                        "delta": text,
                    },
                )
            )
            events.append(
                _done(output, {**message, "content": [{"type": "output_text", "text": text}]})
            )
            output += 1
        for call in calls:
            item = {
                "id": f"fc_{call.id}",
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": "",
            }
            events.append(_added(output, item))
            events.append(_done(output, {**item, "arguments": json.dumps(call.arguments)}))
            if thought:
                self.owed[call.id] = reasoning
            output += 1
        usage = {
            "input_tokens": 50,
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 20},
        }
        events.append(
            (
                "response.completed",
                {"type": "response.completed", "response": {"status": "completed", "usage": usage}},
            )
        )
        return sse(events)


def _encrypted(item_id: str, summary: str) -> str:
    return "gAAAAAB" + sign(item_id, summary)


def _anthropic_error(message: str) -> Reply:
    return Reply.error(
        400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    )


def _openai_error(status: int, message: str, code: str | None = None) -> Reply:
    error = {"message": message, "type": "invalid_request_error", "param": "input", "code": code}
    return Reply.error(status, {"error": error})


def _start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_start", {
        "type": "content_block_start",
        "index": index,
        "content_block": block,
    }


def _delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> tuple[str, dict[str, Any]]:
    return "content_block_stop", {"type": "content_block_stop", "index": index}


def _added(index: int, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "response.output_item.added", {
        "type": "response.output_item.added",
        "output_index": index,
        "item": item,
    }


def _done(index: int, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "response.output_item.done", {
        "type": "response.output_item.done",
        "output_index": index,
        "item": item,
    }
