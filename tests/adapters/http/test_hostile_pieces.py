"""Sealed reasoning streamed in very many pieces, as a hostile server (or a long think)
sends it up to the answer's size limit: each piece is kept and the whole joined once
at the end, not re-copied piece by piece (which took minutes at tens of MiB), and the
pieces are the answer going on, not a silent server."""

from __future__ import annotations

import json

from returns.result import Success

from treadle.adapters.http_model.anthropic_reader import AnthropicReader
from treadle.adapters.http_model.openai_chat_reader import OpenAIChatReader
from treadle.adapters.http_model.sse import SseEvent
from treadle.domain.values.model import ReasoningReady

PIECE = "s" * 1024
PIECES = 30_000  # 30 MiB: within the 64 MiB an answer may be


def anthropic(name: str, **fields: object) -> SseEvent:
    return SseEvent(name, json.dumps({"type": name, **fields}))


def test_a_signature_in_thirty_thousand_pieces_is_read_at_once() -> None:
    reader = AnthropicReader()
    reader.read(anthropic("message_start", message={"usage": {}}))
    block = {"type": "thinking", "thinking": "", "signature": ""}
    reader.read(anthropic("content_block_start", index=0, content_block=block))
    delta = anthropic(
        "content_block_delta", index=0, delta={"type": "signature_delta", "signature": PIECE}
    )
    for _ in range(PIECES):
        assert reader.read(delta) == []
    assert reader.buffered == PIECES * len(PIECE)
    [item] = reader.read(anthropic("content_block_stop", index=0))
    assert isinstance(item, Success) and isinstance(event := item.unwrap(), ReasoningReady)
    assert event.reasoning.seal == PIECE * PIECES


def test_reasoning_details_in_thirty_thousand_pieces_are_read_at_once_as_progress() -> None:
    reader = OpenAIChatReader()
    detail = {"type": "reasoning.encrypted", "index": 0, "format": "f", "data": PIECE}
    chunk = SseEvent("", json.dumps({"choices": [{"delta": {"reasoning_details": [detail]}}]}))
    for number in range(PIECES):
        reader.read(chunk)
        # Taken in, though no item is made yet: the idle timer must not take it for silence.
        assert reader.buffered == (number + 1) * len(PIECE)
    finish = SseEvent("", json.dumps({"choices": [{"delta": {}, "finish_reason": "stop"}]}))
    [item] = reader.read(finish)[:1]
    assert isinstance(item, Success) and isinstance(event := item.unwrap(), ReasoningReady)
    assert json.loads(event.reasoning.seal) == [
        {"type": "reasoning.encrypted", "index": 0, "format": "f", "data": PIECE * PIECES}
    ]
