"""An error the server sends as an event inside a stream that began with 200 OK is said
as what it was, never as an HTTP status the server did not send; whether it is retried
still follows its kind (overloaded, rate limits and server errors are, the rest not)."""

from __future__ import annotations

import json

import pytest

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import stream_file
from tests.adapters.http.test_retry_end_to_end import STREAMS
from tests.adapters.http.test_retry_end_to_end import _turn as turn
from treadle.adapters.transcript.recording import recorded_failure
from treadle.domain.rules.retry import is_transient
from treadle.domain.values.events import RetryScheduled
from treadle.domain.values.model import HttpStatusError, MalformedStream
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome

SAYS = "the server sent an error event mid-stream"


def anthropic_error(kind: str, message: str) -> bytes:
    data = {"type": "error", "error": {"type": kind, "message": message}}
    return f"event: error\ndata: {json.dumps(data)}\n\n".encode()


async def test_the_sdks_overloaded_error_event_is_retried_and_named_as_an_event(
    server: ScriptedServer,
) -> None:
    server.add(
        Reply.sse(stream_file("anthropic/more/error-overloaded.sse")),
        Reply.sse(STREAMS["anthropic"]),
    )
    run = await turn("anthropic", server.base_url)
    assert run.outcome.kind is OutcomeKind.FINISHED
    assert run.clock.slept == [1.0]
    [retry] = run.terminal.of_type(RetryScheduled)
    assert retry.error == f"{SAYS}: overloaded_error: Overloaded"


@pytest.mark.parametrize(
    ("kind", "retried"),
    [
        ("overloaded_error", True),
        ("rate_limit_error", True),
        ("api_error", True),
        ("invalid_request_error", False),
        ("permission_error", False),
    ],
)
async def test_an_error_event_that_ends_the_turn_says_what_it_was(
    server: ScriptedServer, kind: str, retried: bool
) -> None:
    server.add(*[Reply.sse(anthropic_error(kind, "It went wrong."))] * 3)
    run = await turn("anthropic", server.base_url)
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.outcome.detail == f"{SAYS}: {kind}: It went wrong."
    assert "HTTP" not in run.outcome.detail
    assert len(server.requests) == (3 if retried else 1)


@pytest.mark.parametrize("provider", ["openai", "responses"])
async def test_an_error_event_of_the_openai_protocols_says_what_it_was(
    server: ScriptedServer, provider: str
) -> None:
    name = {"openai": "handmade/openai-chat/error_mid_stream.sse"}.get(
        provider, "responses/error_mid_stream.sse"
    )
    server.add(Reply.sse(stream_file(name)))
    run = await turn(provider, server.base_url)
    assert run.outcome.kind is OutcomeKind.FAILED
    assert run.outcome.detail.startswith(f"{SAYS}: server_error: ")


@pytest.mark.parametrize("retried", [True, False])
def test_a_recorded_error_event_reads_back_as_retried_or_not_as_it_was(retried: bool) -> None:
    said = f"{SAYS}: overloaded_error: Overloaded"
    outcome = TurnOutcome(OutcomeKind.FAILED, said, FailureKind.HTTP)
    error = recorded_failure(said, retried=retried, outcome=outcome)
    assert isinstance(error, HttpStatusError)
    assert error.describe() == said
    assert is_transient(error) is retried


def test_a_recorded_error_event_of_an_unknown_kind_reads_back_as_it_failed() -> None:
    said = f"{SAYS}: invalid_request_error: Bad"
    outcome = TurnOutcome(OutcomeKind.FAILED, said, FailureKind.MALFORMED)
    assert recorded_failure(said, retried=False, outcome=outcome) == MalformedStream(said)
