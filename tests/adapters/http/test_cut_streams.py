"""A stream whose body ends cleanly before the protocol's own end (no
``response.completed``, no ``message_stop``, no ``[DONE]`` nor finish) is a cut stream,
exactly as a connection lost mid-answer is: retried while no answer text was shown,
and once text was shown the turn fails with what was cut, showing nothing twice."""

from __future__ import annotations

import pytest

from tests.adapters.http.server import Fault, Reply, ScriptedServer, split_events
from tests.adapters.http.test_retry_end_to_end import FIRST_TEXT_AFTER, STREAMS
from tests.adapters.http.test_retry_end_to_end import _turn as turn
from treadle.domain.values.outcome import FailureKind, OutcomeKind

LAST_EVENT = {
    "anthropic": "message_stop",
    "openai": "data: [DONE]",
    "responses": "response.completed",
}


def first_events(provider: str, count: int) -> bytes:
    """The provider's stream up to ``count`` events, ended cleanly there."""
    return b"".join(split_events(STREAMS[provider])[:count])


@pytest.fixture(params=["anthropic", "openai", "responses"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_stream_that_ends_cleanly_before_any_text_is_retried(
    server: ScriptedServer, provider: str
) -> None:
    server.add(Reply.sse(first_events(provider, 1)), Reply.sse(STREAMS[provider]))
    run = await turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.clock.slept == [1.0]
    assert len(server.requests) == 2
    assert run.shown == "The tests pass."


async def test_a_clean_end_and_a_cut_connection_before_any_text_are_one_case(
    server: ScriptedServer, provider: str
) -> None:
    cut = Fault("close", after_chunks=1)
    server.add(
        Reply.sse(first_events(provider, 1)),
        Reply.sse(STREAMS[provider], fault=cut),
        Reply.sse(STREAMS[provider]),
    )
    run = await turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.clock.slept == [1.0, 2.0]


async def test_a_stream_that_ends_cleanly_after_text_ends_the_turn_without_showing_it_twice(
    server: ScriptedServer, provider: str
) -> None:
    shown_then_ended = first_events(provider, FIRST_TEXT_AFTER[provider])
    server.add(Reply.sse(shown_then_ended), Reply.sse(STREAMS[provider]))
    run = await turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.outcome.reason is FailureKind.TRANSPORT
    assert f"the stream ended before {LAST_EVENT[provider]}" in run.outcome.detail
    assert run.clock.slept == []
    assert len(server.requests) == 1
    assert run.shown == "The tests "
