"""Spending limits the person sets end a turn blocked at the request that crosses one,
its sub-agents' spending included; a warning comes first, at 80 %."""

from __future__ import annotations

import json

from treadle.adapters.fakes import FakeProcess
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.history import is_sendable
from treadle.domain.rules.limits import (
    LimitNear,
    LimitReached,
    SpendingLimits,
    Spent,
    check_spending,
    duration_text,
    parse_duration,
)
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import Notice, TurnEnded
from treadle.domain.values.outcome import FailureKind, OutcomeKind
from treadle.domain.values.prices import Prices

# The rule, with plain values ------------------------------------------------------------


def test_no_limit_set_decides_nothing_however_much_is_spent() -> None:
    assert check_spending(SpendingLimits(), Spent(1e9, 10**12, 10**6, 1e9)) is None


def test_a_limit_is_reached_when_what_is_spent_comes_to_it() -> None:
    limits = SpendingLimits(requests=3)
    assert check_spending(limits, Spent(requests=2), frozenset({"requests"})) is None
    assert check_spending(limits, Spent(requests=3)) == LimitReached("requests", 3, 3)


def test_the_line_says_what_was_reached_and_of_how_much() -> None:
    assert LimitReached("cost", 0.5, 0.5).line() == "spending limit reached: $0.50 of $0.50"
    assert LimitReached("tokens", 1234, 1000).line() == (
        "spending limit reached: 1,234 of 1,000 tokens"
    )
    assert LimitReached("time", 95, 90).line() == "spending limit reached: 1m35s of 1m30s"


def test_past_eighty_percent_a_limit_is_near_until_it_has_been_warned_of() -> None:
    limits = SpendingLimits(tokens=1000, cost=1.0)
    assert check_spending(limits, Spent(tokens=799)) is None
    assert check_spending(limits, Spent(tokens=800)) == LimitNear("tokens", 800, 1000)
    assert check_spending(limits, Spent(tokens=900), frozenset({"tokens"})) is None
    assert check_spending(limits, Spent(tokens=900, cost=2.0)) == LimitReached("cost", 2.0, 1.0)


def test_durations_read_as_people_write_them() -> None:
    assert parse_duration("90") == 90.0
    assert parse_duration("10m") == 600.0
    assert parse_duration("1h30m") == 5400.0
    assert parse_duration("2.5s") == 2.5
    for bad in ("", "soon", "0", "-5", "5 minutes"):
        assert parse_duration(bad) is None, bad
    assert duration_text(5400) == "1h30m"
    assert duration_text(42) == "42s"


# The loop ----------------------------------------------------------------------------------


def limited(**limits: float) -> TurnSettings:
    return TurnSettings(
        spending=SpendingLimits(**limits),  # type: ignore[arg-type]
        prices=Prices(input=10_000.0, output=10_000.0),  # a cent a token
    )


def calls(n: int) -> list[R]:
    return [R.calling("bash", command=f"step {i}") for i in range(n)]


def processes(n: int) -> dict[str, FakeProcess]:
    return {f"step {i}": FakeProcess("ok", duration=10) for i in range(n)}


async def test_max_requests_ends_the_turn_blocked_at_the_request_that_reaches_it(rig) -> None:
    r = rig([*calls(5), R.saying("done")], processes(5), settings=limited(requests=2))
    outcome = await r.agent.run_turn("x")
    assert (outcome.kind, outcome.exit_code) == (OutcomeKind.BLOCKED, 3)
    assert outcome.reason is FailureKind.SPENDING_LIMIT
    assert outcome.screen_line == "Turn blocked: spending limit reached: 2 of 2 requests"
    assert len(r.model.requests) == 2
    assert [spec.command for spec in r.runner.specs] == ["step 0"]  # the second's call never ran
    assert is_sendable(r.agent.history.messages)


async def test_a_final_answer_within_the_limit_finishes_the_turn(rig) -> None:
    r = rig([*calls(1), R.saying("done")], processes(1), settings=limited(requests=2))
    assert (await r.agent.run_turn("x")).kind is OutcomeKind.FINISHED


async def test_max_tokens_and_max_cost_count_every_request(rig) -> None:
    # Each call costs 15 tokens (10 in, 5 out): 15 cents at these prices.
    r = rig([*calls(5), R.saying("done")], processes(5), settings=limited(tokens=40))
    outcome = await r.agent.run_turn("x")
    assert outcome.detail == "spending limit reached: 45 of 40 tokens"
    assert len(r.model.requests) == 3
    r = rig([*calls(5), R.saying("done")], processes(5), settings=limited(cost=0.3))
    outcome = await r.agent.run_turn("x")
    assert outcome.detail == "spending limit reached: $0.30 of $0.30"
    assert len(r.model.requests) == 2
    (ended,) = r.terminal.of_type(TurnEnded)
    assert ended.cost == 0.3


async def test_max_time_counts_the_turn_on_its_clock(rig) -> None:
    r = rig([*calls(5), R.saying("done")], processes(5), settings=limited(time=25))
    outcome = await r.agent.run_turn("x")
    assert outcome.detail == "spending limit reached: 30s of 25s"
    assert len(r.runner.specs) == 3


async def test_a_warning_comes_once_past_eighty_percent(rig) -> None:
    r = rig([*calls(5), R.saying("done")], processes(5), settings=limited(requests=5))
    await r.agent.run_turn("x")
    near = [n for n in r.terminal.of_type(Notice) if n.kind == "spending_limit_near"]
    assert [n.text for n in near] == ["spending near its limit: 4 of 5 requests (80 %)"]


async def test_a_sub_agents_spending_counts_in_its_callers_limit(rig) -> None:
    spawn = ToolCall("a1", "agent", json.dumps({"task": "sub"}))
    script = {
        "*": [R((), (spawn,)), R.saying("thanks")],
        "sub": [*calls(5), R.saying("sub done")],
    }
    r = rig(script, processes(5), settings=limited(requests=3))
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.BLOCKED
    assert outcome.detail == "spending limit reached: 3 of 3 requests (in agent-1)"
    assert len(r.model.requests) == 3  # the caller's one, the sub-agent's two
    assert is_sendable(r.agent.history.messages)


async def test_each_turn_spends_its_own_limit(rig) -> None:
    r = rig([*calls(2), R.saying("one"), *calls(1), R.saying("two")], processes(2))
    r.agent.meter.limits = SpendingLimits(requests=2)
    assert (await r.agent.run_turn("x")).kind is OutcomeKind.BLOCKED
    r.agent.meter.limits = SpendingLimits(requests=5)  # resumed with a higher limit
    assert (await r.agent.run_turn("Continue.")).kind is OutcomeKind.FINISHED


def test_a_limit_under_a_cent_is_shown_as_it_is_not_as_nothing() -> None:
    from treadle.domain.rules.limits import LimitReached

    assert LimitReached("cost", 0.0013, 0.001).line() == (
        "spending limit reached: $0.0013 of $0.001"
    )
    assert LimitReached("cost", 0.0013, 1e-300).line().endswith("of $1e-300")
    assert LimitReached("cost", 0.5, 0.5).line() == "spending limit reached: $0.50 of $0.50"
