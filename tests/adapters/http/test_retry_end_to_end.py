"""The seed's retry rules, end to end: the real turn loop on the fake clock, the real
adapters, and a real server that fails on cue. Pauses are counted on the clock,
attempts and their connections on the server."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.adapters.http.server import Fault, FaultKind, Reply, ScriptedServer
from tests.adapters.http.support import (
    KEY,
    anthropic_text_stream,
    openai_text_stream,
    responses_text_stream,
    stream_file,
)
from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from treadle.adapters.http_model.endpoint import HttpModel
from treadle.adapters.http_model.openai_chat import CONTINUE_PROMPT
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome

ANSWER = ["The tests ", "pass."]
STREAMS = {
    "anthropic": anthropic_text_stream(ANSWER),
    "openai": openai_text_stream(ANSWER),
    "responses": responses_text_stream(ANSWER),
}
FIRST_TEXT_AFTER = {"anthropic": 3, "openai": 2, "responses": 3}  # events up to "The tests "


@dataclass
class Run:
    outcome: TurnOutcome
    clock: FakeClock
    terminal: RecordingTerminal

    @property
    def shown(self) -> str:
        return self.terminal.answer_text()


@pytest.fixture(params=["anthropic", "openai", "responses"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _turn(provider: str, base_url: str) -> Run:
    model: HttpModel
    if provider == "anthropic":
        model = AnthropicModel(model="claude-test", base_url=base_url, api_key=KEY)
    elif provider == "responses":
        model = OpenAIResponsesModel(model="gpt-test", base_url=base_url, api_key=KEY)
    else:
        model = OpenAIChatModel(model="gpt-test", base_url=base_url, api_key=KEY)
    clock, terminal = FakeClock(), RecordingTerminal()
    agent = Agent(
        TurnPorts(model, clock, FakeRunner(clock), terminal), TurnSettings(session_dir="")
    )
    outcome = await agent.run_turn("Run the tests.")
    return Run(outcome, clock, terminal)


def _ports(server: ScriptedServer) -> set[int]:
    return {seen.client_port for seen in server.requests}


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_a_retryable_status_is_retried_twice_after_one_then_two_seconds(
    server: ScriptedServer, provider: str, status: int
) -> None:
    server.add(Reply.error(status), Reply.error(status), Reply.sse(STREAMS[provider]))
    run = await _turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.clock.slept == [1.0, 2.0]
    assert len(server.requests) == 3
    assert len(_ports(server)) == 3  # each attempt on a connection of its own
    assert run.shown == "The tests pass."


async def test_three_failed_attempts_end_the_turn(server: ScriptedServer, provider: str) -> None:
    server.add(*[Reply.error(503, {"error": {"message": "busy"}})] * 3)
    run = await _turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.outcome.reason is FailureKind.HTTP
    assert "busy" in run.outcome.detail
    assert run.clock.slept == [1.0, 2.0]
    assert len(server.requests) == 3
    assert server.unscripted == 0


@pytest.mark.parametrize("fault", ["reset", "close"])
async def test_a_connection_lost_before_any_text_is_retried(
    server: ScriptedServer, provider: str, fault: FaultKind
) -> None:
    server.add(Reply.sse(b"", fault=Fault(fault)), Reply.sse(STREAMS[provider]))
    run = await _turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.clock.slept == [1.0]
    assert len(_ports(server)) == 2


@pytest.mark.parametrize("status", [400, 404])
async def test_a_status_that_will_not_change_is_not_retried(
    server: ScriptedServer, provider: str, status: int
) -> None:
    server.add(Reply.error(status, {"error": {"message": "model not found"}}))
    run = await _turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.clock.slept == []
    assert len(server.requests) == 1


async def test_rejected_credentials_block_the_turn_at_once(
    server: ScriptedServer, provider: str
) -> None:
    server.add(Reply.error(401))
    run = await _turn(provider, server.base_url)
    variable = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    assert run.outcome.kind is OutcomeKind.BLOCKED
    assert run.outcome.detail == f"credentials rejected (HTTP 401): set a valid {variable}"
    assert len(server.requests) == 1


@pytest.mark.parametrize("fault", ["reset", "close"])
async def test_a_failure_after_text_was_shown_is_not_retried_nor_shown_twice(
    server: ScriptedServer, provider: str, fault: FaultKind
) -> None:
    cut = Fault(fault, after_chunks=FIRST_TEXT_AFTER[provider])
    server.add(Reply.sse(STREAMS[provider], fault=cut), Reply.sse(STREAMS[provider]))
    run = await _turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.outcome.reason is FailureKind.TRANSPORT
    assert run.clock.slept == []
    assert len(server.requests) == 1
    assert run.shown == "The tests "


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_a_refused_connection_is_not_retried(provider: str, closed_port: int) -> None:
    run = await _turn(provider, f"http://127.0.0.1:{closed_port}")
    assert run.outcome.kind is OutcomeKind.FAILED
    assert "connection refused" in run.outcome.detail
    assert run.clock.slept == []


async def test_a_continued_anthropic_answer_reads_as_one(server: ScriptedServer) -> None:
    server.add(
        Reply.sse(anthropic_text_stream(["The files are ", "a.py and "], stop="max_tokens")),
        Reply.sse(anthropic_text_stream([" b.py."])),
    )
    run = await _turn("anthropic", server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.shown == "The files are a.py and b.py."
    prefill = server.requests[1].json()["messages"][-1]
    assert prefill == {
        "role": "assistant",
        "content": [{"type": "text", "text": "The files are a.py and"}],
    }
    assert server.requests[1].json()["max_tokens"] > server.requests[0].json()["max_tokens"]


async def test_a_continued_responses_answer_reads_as_one(server: ScriptedServer) -> None:
    server.add(
        Reply.sse(responses_text_stream(["The files are ", "a.py and "], incomplete=True)),
        Reply.sse(responses_text_stream(["b.py."])),
    )
    run = await _turn("responses", server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.shown == "The files are a.py and b.py."
    first, second = (seen.json() for seen in server.requests)
    assert second["max_output_tokens"] == 2 * first["max_output_tokens"]
    assert second["input"][-2:] == [
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "The files are a.py and ", "annotations": []}
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": CONTINUE_PROMPT}],
        },
    ]


async def test_a_failed_response_before_any_text_is_retried_on_a_fresh_connection(
    server: ScriptedServer,
) -> None:
    server.add(Reply.sse(stream_file("responses/failed.sse")), Reply.sse(STREAMS["responses"]))
    run = await _turn("responses", server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.clock.slept == [1.0]
    assert len(_ports(server)) == 2
    assert run.shown == "The tests pass."


async def test_a_responses_error_event_after_text_ends_the_turn_without_showing_it_twice(
    server: ScriptedServer,
) -> None:
    server.add(
        Reply.sse(stream_file("responses/error_mid_stream.sse")), Reply.sse(STREAMS["responses"])
    )
    run = await _turn("responses", server.base_url)
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.outcome.reason is FailureKind.HTTP
    assert run.clock.slept == []
    assert len(server.requests) == 1
    assert run.shown == "Let me look at the failing"
