"""Retries exactly as the seed says: which failures, how many attempts, which pauses."""

from __future__ import annotations

import pytest

from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.rules.retry import (
    RETRYABLE_STATUSES,
    GiveUp,
    Retry,
    RetrySchedule,
    decide_retry,
    is_transient,
)
from treadle.domain.values.events import AnswerDelta, RetryScheduled
from treadle.domain.values.model import (
    CredentialsRejected,
    HttpStatusError,
    MalformedStream,
    TransportError,
)
from treadle.domain.values.outcome import OutcomeKind

TRANSIENT = [
    TransportError("connection_closed"),
    TransportError("connection_reset"),
    TransportError("broken_pipe"),
    TransportError("timeout"),
    TransportError("network_unreachable"),
    *[HttpStatusError(status) for status in (408, 429, 500, 502, 503, 504)],
]
PERMANENT = [
    TransportError("connection_refused"),
    TransportError("other"),
    *[HttpStatusError(status) for status in (400, 401, 403, 404, 409, 422, 501, 505)],
    CredentialsRejected("set KEY"),
    MalformedStream("bad JSON"),
]


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: e.describe())
def test_the_seeds_transient_failures_are_retried(error):
    assert is_transient(error)
    assert decide_retry(RetrySchedule(), error, attempt=1, text_shown=False) == Retry(1.0, 2)


@pytest.mark.parametrize("error", PERMANENT, ids=lambda e: e.describe())
def test_everything_else_fails_at_once(error):
    assert not is_transient(error)
    assert isinstance(decide_retry(RetrySchedule(), error, attempt=1, text_shown=False), GiveUp)


def test_the_retryable_statuses_are_exactly_the_seeds():
    assert {408, 429, 500, 502, 503, 504} == RETRYABLE_STATUSES


def test_three_attempts_with_a_one_then_two_second_pause():
    schedule, error = RetrySchedule(), HttpStatusError(503)
    assert schedule.attempts == 3
    assert decide_retry(schedule, error, attempt=1, text_shown=False) == Retry(1.0, 2)
    assert decide_retry(schedule, error, attempt=2, text_shown=False) == Retry(2.0, 3)
    assert isinstance(decide_retry(schedule, error, attempt=3, text_shown=False), GiveUp)


def test_no_retry_once_answer_text_has_been_shown():
    decision = decide_retry(RetrySchedule(), HttpStatusError(503), attempt=1, text_shown=True)
    assert decision == GiveUp("answer text was already shown")


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: e.describe())
async def test_the_loop_pauses_1_then_2_seconds_on_its_clock_and_tries_three_times(rig, error):
    r = rig([R.failing(error), R.failing(error), R.failing(error)])
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FAILED
    assert r.clock.slept == [1.0, 2.0]
    assert [q.attempt for q in r.model.requests] == [1, 2, 3]
    shown = r.terminal.of_type(RetryScheduled)
    assert [(e.attempt, e.attempts, e.pause) for e in shown] == [(2, 3, 1.0), (3, 3, 2.0)]


async def test_a_retry_that_succeeds_goes_on_as_if_nothing_happened(rig):
    r = rig([R.failing(HttpStatusError(429)), R.saying("Hello there")])
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert r.terminal.answer_text() == "Hello there"
    assert r.clock.slept == [1.0]


async def test_a_failure_after_text_is_shown_ends_the_turn_and_prints_nothing_twice(rig):
    r = rig(
        [
            R.failing(TransportError("connection_reset", "reset"), after="Partial ans"),
            R.saying("never"),
        ]
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.screen_line == "Turn failed: TransportError: reset"
    assert len(r.model.requests) == 1
    assert r.terminal.answer_text() == "Partial ans"
    assert len(r.terminal.of_type(AnswerDelta)) == 1
    kept = r.agent.history.messages[-1]
    assert (kept.text, kept.interrupted) == ("Partial ans", True)


async def test_a_stream_that_ends_without_its_final_event_fails_as_malformed(rig):
    class Silent:
        async def stream(self, request):
            return
            yield

    r = rig([])
    r.agent.responder.model = Silent()
    outcome = await r.agent.run_turn("x")
    assert (
        outcome.screen_line
        == "Turn failed: MalformedStream: the stream ended without its final event"
    )


async def test_a_transient_failure_during_a_continuation_is_not_retried(rig):
    cut = R(("The first half ",), stop="max_tokens")
    r = rig([cut, R.failing(HttpStatusError(503)), R.saying("never")])
    outcome = await r.agent.run_turn("x")
    assert outcome.screen_line == "Turn failed: HttpError: HTTP 503"
    assert len(r.model.requests) == 2
    assert r.clock.slept == []
    assert r.terminal.answer_text() == "The first half "
