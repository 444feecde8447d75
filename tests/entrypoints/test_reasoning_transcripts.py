"""A conversation that holds reasoning — Anthropic thinking and redacted blocks with
their signatures, Chat Completions reasoning content, encrypted Responses items — goes
into the transcript and comes back exactly: a resumed session's next request is one the
thinking server accepts, and a replay checks it request by request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adapters.http.server import ScriptedServer
from tests.adapters.http.test_reasoning_loops import COMMANDS, LIST, model_for
from tests.adapters.http.thinking_server import Protocol, ThinkingServer
from tests.entrypoints.test_replay import record, replay
from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner, RecordingTerminal
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.http_model.endpoint import HttpModel
from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript, read_transcript
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.resume import rebuild_history
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.conversation import Reasoning
from treadle.domain.values.outcome import OutcomeKind

THINKING = Reasoning("thinking", "List first.", seal="EqQBCgIYAhIM")
REDACTED = Reasoning("redacted_thinking", seal="EmE6iFbCFNUi1OtJq")
CONTENT = Reasoning("reasoning_content", "DeepSeek thought.")
ITEM = Reasoning(
    "reasoning_item",
    "**Summary**",
    seal=json.dumps({"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAAAB9"}),
)
SCRIPT = [
    R.calling("bash", command="ls").thinking(THINKING, REDACTED),
    R.calling("bash", command="ls").thinking(CONTENT),
    R.calling("bash", command="ls").thinking(ITEM),
    R.saying("Three files.").thinking(THINKING),
]
LS = {"ls": FakeProcess("a\nb\nc\n")}


def kept_reasoning(path: Path) -> list[tuple[Reasoning, ...]]:
    history = rebuild_history(read_transcript(path))
    return [m.reasoning for m in history.messages if m.role == "assistant"]


async def test_reasoning_of_every_kind_comes_back_from_the_transcript_exactly(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcript.jsonl"
    [outcome] = await record(path, [(SCRIPT, "count the files")], processes=LS)
    assert outcome.kind is OutcomeKind.FINISHED
    assert kept_reasoning(path) == [(THINKING, REDACTED), (CONTENT,), (ITEM,), (THINKING,)]


async def test_a_replay_reproduces_the_reasoning_and_checks_it(tmp_path: Path) -> None:
    path = tmp_path / "transcript.jsonl"
    await record(path, [(SCRIPT, "count the files")], processes=LS)
    code, out = await replay(path)
    assert code == 0 and out.startswith("replay: 4 requests, no divergence"), out


async def test_a_replay_of_a_transcript_whose_signature_was_edited_diverges(
    tmp_path: Path,
) -> None:
    path = tmp_path / "transcript.jsonl"
    await record(path, [(SCRIPT, "count the files")], processes=LS)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(r for r in records if r["type"] == "response_received")
    first["reasoning"][0]["seal"] = "forged"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, out = await replay(path)
    assert code == 1
    assert "request 2 (the main agent)" in out
    assert "the reasoning of message 2 (assistant) is not the recorded one" in out


@pytest.mark.parametrize("protocol", ["anthropic", "chat", "responses"])
async def test_a_resumed_session_sends_its_reasoning_back_as_the_server_gave_it(
    tmp_path: Path, protocol: Protocol
) -> None:
    path = tmp_path / "transcript.jsonl"
    thinker = ThinkingServer(protocol)
    async with ScriptedServer.running(guard=thinker) as server:
        server.add(thinker.calling("I should list first.", LIST), thinker.answering("a.py."))
        first = await _turn(model_for(protocol, server.base_url), path, "List it.")
        # A new process: the conversation comes back from the transcript alone.
        server.add(thinker.answering("Still a.py."))
        second = await _turn(model_for(protocol, server.base_url), path, "And now?", resume=True)
    assert (first, second) == (OutcomeKind.FINISHED, OutcomeKind.FINISHED)
    assert thinker.refusals == []
    assert len(server.requests) == 3
    # The resumed request sent the first turn's tool call with its reasoning, as received.
    assert json.dumps(server.requests[2].json()).count("I should list first.") == 1


async def _turn(model: HttpModel, path: Path, task: str, *, resume: bool = False) -> OutcomeKind:
    clock = FakeClock()
    history = rebuild_history(read_transcript(path)) if resume else None
    transcript = JsonlTranscript(path, redact=Redactor([]))
    ports = TurnPorts(model, clock, FakeRunner(clock, COMMANDS), RecordingTerminal(), transcript)
    settings = TurnSettings(session_dir="", budget=TokenBudget(thinking=2048))
    outcome = await Agent(ports, settings, history=history).run_turn(task)
    transcript.close()
    return outcome.kind
