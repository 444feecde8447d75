"""What a turn of a batch said (its --json lines, its transcript) and how it ended."""

from __future__ import annotations

import json

import pytest

from treadle.domain.rules.turn_report import (
    ProcessEnd,
    TurnTally,
    judge_turn,
    tally,
    tally_lines,
    tokens_by_kind,
)
from treadle.domain.values.batch import TaskOutcome


def event(kind: str, agent: str = "", **fields: object) -> dict[str, object]:
    return {"type": kind, "agent": agent, **fields}


ENDED = event(
    "turn_ended",
    outcome={"kind": "failed", "detail": "HttpError: 500", "reason": "HttpError"},
    usage={"input_tokens": 120, "output_tokens": 7},
    requests=3,
    exit_code=1,
    line="Turn failed: HttpError: 500 Internal Server Error",
)


def test_the_turn_ended_line_gives_requests_tokens_and_the_line_shown():
    said = tally(TurnTally(), ENDED)
    assert said == TurnTally(
        requests=3,
        tokens={"input": 120, "output": 7},
        ended=True,
        kind="failed",
        line="Turn failed: HttpError: 500 Internal Server Error",
        detail="HttpError: 500",
    )


def test_requests_are_counted_as_they_are_sent_until_the_turn_says_how_many():
    said = TurnTally()
    for record in (event("turn_started", task="x"), event("request_sent"), event("request_sent")):
        said = tally(said, record)
    assert said.requests == 2
    said = tally(said, event("usage_updated", turn={"input_tokens": 5}, requests=1))
    assert (said.requests, dict(said.tokens)) == (1, {"input": 5})


def test_a_sub_agent_s_events_are_left_to_its_caller_s_counts():
    said = tally(TurnTally(requests=1), event("request_sent", agent="agent-1"))
    assert said == TurnTally(requests=1)


def test_a_transcript_s_earlier_turns_do_not_count_for_the_last_one():
    lines = [
        json.dumps(event("turn_started", task="first")),
        json.dumps(event("usage_updated", turn={"input_tokens": 900}, requests=4)),
        json.dumps(ENDED),
        json.dumps(event("turn_started", task="go on")),
        json.dumps(event("request_sent")),
        '{"type": "usage_upd',  # torn by a kill
    ]
    assert tally_lines(lines) == TurnTally(requests=1)


def test_every_kind_of_tokens_is_kept_and_nothing_else():
    usage = {"input_tokens": 9, "cache_read_tokens": 4, "model": "x", "output_tokens": True}
    assert tokens_by_kind(usage) == {"input": 9, "cache_read": 4}
    assert tokens_by_kind(None) == {}


@pytest.mark.parametrize(
    ("code", "outcome"),
    [(0, "finished"), (1, "failed"), (3, "blocked"), (4, "waiting for input"), (130, "paused")],
)
def test_the_exit_code_decides_the_outcome_and_the_line_is_the_detail(code, outcome):
    said = TurnTally(line="the line")
    assert judge_turn(ProcessEnd(code), said) == (TaskOutcome(outcome), "the line")


def test_a_turn_that_refused_to_start_is_failed_with_its_error_line():
    assert judge_turn(ProcessEnd(2), TurnTally(), error_line="treadle: session busy") == (
        TaskOutcome.FAILED,
        "treadle exited with 2: treadle: session busy",
    )
    assert judge_turn(ProcessEnd(1), TurnTally(), error_line="Traceback…") == (
        TaskOutcome.FAILED,
        "Traceback…",
    )


def test_a_turn_killed_from_outside_is_lost_with_what_it_had_done():
    assert judge_turn(ProcessEnd(None, "SIGKILL"), TurnTally(requests=1)) == (
        TaskOutcome.LOST,
        "killed by SIGKILL; its transcript kept 1 request",
    )


def test_a_turn_killed_after_the_batch_asked_it_to_pause_is_paused_all_the_same():
    outcome, detail = judge_turn(ProcessEnd(None, "SIGKILL"), TurnTally(), pause_asked=True)
    assert outcome is TaskOutcome.PAUSED
    assert detail == "killed by SIGKILL before it paused; its transcript kept 0 requests"
