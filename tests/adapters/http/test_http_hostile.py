"""A hostile server never exhausts memory nor holds a turn forever: a compression bomb,
a line that never ends, keep-alives with no event, an answer that never stops."""

from __future__ import annotations

import time

import pytest

from tests.adapters.http.hostile import (
    Behaviour,
    HostileServer,
    closes_early_then_answers,
    endless_comments,
    endless_empty_chunks,
    endless_line,
    endless_text,
    gzip_bomb,
    slow_arguments,
)
from tests.adapters.http.support import KEY, listen
from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal
from treadle.adapters.http_model import OpenAIChatModel
from treadle.adapters.http_model.transport import StreamLimits
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.model import MalformedStream, ModelRequest, TransportError
from treadle.domain.values.outcome import FailureKind, OutcomeKind

MIB = 1 << 20
SMALL = StreamLimits(answer_bytes=4 * MIB, event_bytes=1 * MIB)


def model(server: HostileServer, read_timeout: float = 120) -> OpenAIChatModel:
    return OpenAIChatModel(
        model="m", base_url=server.base_url, api_key=KEY, limits=SMALL, read_timeout=read_timeout
    )


async def first_failure(behaviour: Behaviour, read_timeout: float = 120) -> object:
    async with HostileServer.running(behaviour) as server:
        request = ModelRequest(system="", messages=(), tools=(), max_tokens=100_000)
        heard = await listen(model(server, read_timeout).stream(request))
    return heard.failure


@pytest.mark.slow
async def test_a_gzip_bomb_is_stopped_at_the_answers_limit_not_inflated_whole():
    failure = await first_failure(gzip_bomb(64 * MIB))
    assert isinstance(failure, MalformedStream)
    assert "more than 4 MiB for one answer" in failure.detail


async def test_a_line_that_never_ends_is_stopped_at_the_event_limit():
    failure = await first_failure(endless_line)
    assert isinstance(failure, MalformedStream)
    assert "an event longer than 1 MiB" in failure.detail


async def test_keep_alive_comments_with_no_event_count_as_silence():
    started = time.monotonic()
    failure = await first_failure(endless_comments, read_timeout=0.3)
    assert isinstance(failure, TransportError) and failure.kind == "timeout"
    assert "nothing of the answer from" in failure.detail
    assert time.monotonic() - started < 5  # the timeout, not the comments, decided


async def test_events_that_carry_nothing_of_the_answer_count_as_silence():
    failure = await first_failure(endless_empty_chunks, read_timeout=0.3)
    assert isinstance(failure, TransportError) and failure.kind == "timeout"


async def test_arguments_that_come_slowly_are_not_silence():
    async with HostileServer.running(slow_arguments) as server:
        request = ModelRequest(system="", messages=(), tools=(), max_tokens=1000)
        heard = await listen(model(server, read_timeout=0.3).stream(request))
    assert heard.failure is None
    assert [call.arguments for call in heard.calls] == ['{"command": "echo hi"}']


async def test_an_answer_that_never_stops_ends_the_turn_clearly():
    async with HostileServer.running(endless_text) as server:
        clock, terminal = FakeClock(), RecordingTerminal()
        settings = TurnSettings(session_dir="", budget=TokenBudget(initial=1000, cap=1000))
        agent = Agent(TurnPorts(model(server), clock, FakeRunner(clock), terminal), settings)
        outcome = await agent.run_turn("say something")
    assert (outcome.kind, outcome.reason) == (OutcomeKind.FAILED, FailureKind.MALFORMED)
    assert "far past its budget of 1,000 tokens" in outcome.detail
    assert len(terminal.answer_text()) < 100_000
    assert server.requests == 1  # text was shown: never retried


async def test_a_connection_closed_before_the_answer_ended_is_retried_like_a_reset():
    async with HostileServer.running(closes_early_then_answers()) as server:
        clock, terminal = FakeClock(), RecordingTerminal()
        agent = Agent(TurnPorts(model(server), clock, FakeRunner(clock), terminal), TurnSettings())
        outcome = await agent.run_turn("say something")
    assert outcome.kind is OutcomeKind.FINISHED
    assert (server.requests, clock.now(), terminal.answer_text()) == (2, 1.0, "done")
