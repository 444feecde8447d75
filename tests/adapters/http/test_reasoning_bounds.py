"""Encrypted reasoning that a Responses server hands back is kept within a bound: the
real turn loop, the real adapter and the real transcript against a real server whose
answers each carry megabytes of ``encrypted_content`` and a tool call."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.http.server import Reply, ScriptedServer, SeenRequest
from tests.adapters.http.support import KEY
from tests.adapters.http.thinking_server import sse
from tests.entrypoints.test_replay import replay
from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner, RecordingTerminal
from treadle.adapters.http_model import OpenAIResponsesModel
from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript, read_transcript
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.kept_reasoning import KEPT_SEAL_BYTES
from treadle.domain.rules.resume import rebuild_history
from treadle.domain.rules.tokens import estimate_tokens
from treadle.domain.values.outcome import OutcomeKind

pytestmark = pytest.mark.slow

MIB = 1 << 20
CALLS = 9
SECRET_PLACE = "<encrypted content>"


@dataclass
class Reasoner:
    """The guard of a server: each request is answered at once with a reasoning item of
    ``size`` bytes of encrypted content and a call (``calls`` of them, then a text), so
    that no more than one answer is ever held in memory. It notes each body's size and
    the encrypted content each request sent back."""

    size: int
    calls: int = CALLS
    bodies: list[int] = field(default_factory=list)
    sent_back: list[list[str]] = field(default_factory=list)

    def __call__(self, seen: SeenRequest) -> Reply:
        body = seen.json()
        self.bodies.append(len(seen.body))
        self.sent_back.append([i["id"] for i in body["input"] if i.get("type") == "reasoning"])
        number = len(self.bodies)
        if number > self.calls:
            return Reply.sse(_stream(number, 0, None))
        return Reply.sse(_stream(number, self.size, f"call_{number}"))


def _stream(number: int, size: int, call: str | None) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = []
    output = 0
    if size:
        item = {
            "id": f"rs_{number}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": f"Thought {number}."}],
            "encrypted_content": SECRET_PLACE,
        }
        events.append(_added(output, {**item, "summary": [], "encrypted_content": ""}))
        events.append(("response.output_item.done", _done(output, item)))
        output += 1
    if call is None:
        message: dict[str, Any] = {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done."}],
        }
        events.append(_added(output, {**message, "content": []}))
        events.append(("response.output_text.delta", _text(output, f"msg_{number}", "Done.")))
        events.append(("response.output_item.done", _done(output, message)))
    else:
        arguments = json.dumps({"command": "ls"})
        function = {
            "id": f"fc_{number}",
            "type": "function_call",
            "call_id": call,
            "name": "bash",
            "arguments": arguments,
        }
        events.append(_added(output, {**function, "arguments": ""}))
        events.append(("response.output_item.done", _done(output, function)))
    usage = {"input_tokens": 50, "output_tokens": 30}
    completed = {"status": "completed", "usage": usage}
    events.append(("response.completed", {"type": "response.completed", "response": completed}))
    # The content is put in last: JSON-encoding 15 MiB for each answer costs seconds.
    return sse(events).replace(SECRET_PLACE.encode(), b"g" * size)


def _added(index: int, item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    added = {"type": "response.output_item.added", "output_index": index, "item": item}
    return "response.output_item.added", added


def _done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def _text(index: int, item_id: str, delta: str) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": item_id,
        "output_index": index,
        "content_index": 0,
        "delta": delta,
    }


SECRET = "hunter2-0123456789"


async def _run(reasoner: Reasoner, path: Path) -> Agent:
    """One turn; the listing shows a secret, which the transcript redacts."""
    clock = FakeClock()
    transcript = JsonlTranscript(path, redact=Redactor([SECRET]))
    async with ScriptedServer.running(guard=reasoner) as server:
        model = OpenAIResponsesModel(model="gpt-5.1-codex", base_url=server.base_url, api_key=KEY)
        runner = FakeRunner(clock, {"ls": FakeProcess(f"a.py {SECRET}\n")})
        ports = TurnPorts(model, clock, runner, RecordingTerminal(), transcript)
        agent = Agent(ports, TurnSettings(session_dir=""))
        outcome = await agent.run_turn("List it, nine times.")
    transcript.close()
    assert outcome.kind is OutcomeKind.FINISHED, outcome.screen_line
    return agent


async def test_reasoning_of_15_mib_an_answer_is_never_sent_back_nor_recorded(
    tmp_path: Path,
) -> None:
    reasoner = Reasoner(15 * MIB)
    path = tmp_path / "transcript.jsonl"
    agent = await _run(reasoner, path)
    assert len(reasoner.bodies) == CALLS + 1
    # Every request stays the size of the conversation without it: a few kilobytes.
    assert max(reasoner.bodies) < 64 << 10, reasoner.bodies
    assert reasoner.sent_back == [[]] * (CALLS + 1)
    # Neither the history nor the transcript holds it; the summaries stay.
    kept = [r for m in agent.history.messages for r in m.reasoning]
    assert [r.text for r in kept] == [f"Thought {n}." for n in range(1, CALLS + 1)]
    assert all(r.seal == "" for r in kept)
    assert path.stat().st_size < 256 << 10


async def test_the_newest_reasoning_is_sent_back_within_the_bound_and_counted(
    tmp_path: Path,
) -> None:
    size = 300 << 10  # three fit in the bound, a fourth does not
    reasoner = Reasoner(size)
    path = tmp_path / "transcript.jsonl"
    agent = await _run(reasoner, path)
    per_item = KEPT_SEAL_BYTES // (size + 200)
    assert per_item == 3
    # Each request sends back the newest three items that came before it, no more.
    for number, sent in enumerate(reasoner.sent_back, start=1):
        newest = [f"rs_{n}" for n in range(max(1, number - per_item), number)]
        assert sent == newest, (number, sent)
    assert max(reasoner.bodies) < KEPT_SEAL_BYTES + (64 << 10)
    # The history holds what it sends, and its estimate counts it.
    seals = sum(len(r.seal) for m in agent.history.messages for r in m.reasoning)
    assert 3 * size < seals <= KEPT_SEAL_BYTES
    assert agent.history.tokens >= estimate_tokens("x" * seals)
    # The transcript holds each item where it came (the response, the message), and
    # a resume keeps the same.
    assert path.stat().st_size < CALLS * 2 * (size + (16 << 10))
    resumed = rebuild_history(read_transcript(path))
    assert [m.reasoning for m in resumed.messages] == [m.reasoning for m in agent.history.messages]
    # A replay sends what the live session sent, request by request (the recorded
    # messages are redacted: they are compared as the live history kept them).
    code, out = await replay(path)
    assert code == 0 and out.startswith(f"replay: {CALLS + 1} requests, no divergence"), out
