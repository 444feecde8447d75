"""The batch as a state and a step, with plain values: what starts, what is recorded,
how it stops and how it exits."""

from __future__ import annotations

from treadle.domain.rules.batch import (
    NOT_STARTED_DETAIL,
    Batch,
    Begin,
    Finish,
    KillAsked,
    KillTurns,
    PauseTurns,
    Phase,
    RecordNotStarted,
    RecordResult,
    StartTurn,
    StopAsked,
    TurnEnded,
    exit_code,
    progress,
    start_batch,
    step,
)
from treadle.domain.values.batch import TaskOutcome, TaskResult, TurnOrder


def orders(*names: str) -> list[TurnOrder]:
    return [TurnOrder(name, f"task {name}", f"s-{name}", "/w") for name in names]


def started(actions) -> list[str]:
    return [a.order.id for a in actions if isinstance(a, StartTurn)]


def recorded(actions) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for action in actions:
        if isinstance(action, RecordResult):
            found.append((action.result.id, action.result.outcome.value))
        elif isinstance(action, RecordNotStarted):
            found += [(result.id, result.outcome.value) for result in action.results]
    return found


def ended(name: str, outcome: str = "finished") -> TurnEnded:
    return TurnEnded(TaskResult(name, TaskOutcome(outcome)))


def test_at_most_workers_turns_start_in_tasks_order_and_each_end_starts_the_next():
    batch, actions = step(start_batch(orders("a", "b", "c", "d"), workers=2), Begin(0.0))
    assert started(actions) == ["a", "b"]
    batch, actions = step(batch, ended("b"))
    assert recorded(actions) == [("b", "finished")]
    assert started(actions) == ["c"]
    assert batch.running == ("a", "c")


def test_the_batch_finishes_with_0_when_every_turn_finished():
    batch, _ = step(start_batch(orders("a"), workers=3), Begin(0.0))
    batch, actions = step(batch, ended("a"))
    assert actions[-1] == Finish(0)
    assert batch.phase is Phase.DONE


def test_one_turn_that_did_not_finish_makes_the_exit_code_1():
    batch, _ = step(start_batch(orders("a", "b"), workers=2), Begin(0.0))
    batch, _ = step(batch, ended("a", "blocked"))
    batch, actions = step(batch, ended("b"))
    assert actions[-1] == Finish(1)


def test_a_batch_with_everything_skipped_finishes_at_once():
    _, actions = step(start_batch([], workers=2, skipped=["a"]), Begin(0.0))
    assert actions == (Finish(0),)


def test_a_stop_records_the_queued_turns_not_started_and_pauses_the_running_ones():
    batch, _ = step(start_batch(orders("a", "b", "c", "d"), workers=2), Begin(0.0))
    batch, actions = step(batch, StopAsked())
    assert recorded(actions) == [("c", "not started"), ("d", "not started")]
    assert actions[0] == PauseTurns()
    assert all(
        r.detail == NOT_STARTED_DETAIL
        for a in actions
        if isinstance(a, RecordNotStarted)
        for r in a.results
    )
    batch, actions = step(batch, ended("a", "paused"))
    assert started(actions) == [] and recorded(actions) == [("a", "paused")]
    batch, actions = step(batch, ended("b", "finished"))
    assert actions[-1] == Finish(130)


def test_a_stop_pauses_the_running_turns_before_it_records_a_long_queue_in_one_action():
    batch, _ = step(start_batch(orders(*map(str, range(10_000))), workers=2), Begin(0.0))
    _, actions = step(batch, StopAsked())
    assert actions[0] == PauseTurns()
    (written,) = [a for a in actions if isinstance(a, RecordNotStarted)]
    assert len(written.results) == 9_998
    assert not any(isinstance(a, RecordResult) for a in actions)


def test_a_second_stop_changes_nothing_and_a_kill_kills_once():
    batch, _ = step(start_batch(orders("a", "b"), workers=1), Begin(0.0))
    batch, _ = step(batch, StopAsked())
    assert step(batch, StopAsked()) == (batch, ())
    batch, actions = step(batch, KillAsked())
    assert actions == (KillTurns(),)
    assert step(batch, KillAsked()) == (batch, ())


def test_a_stop_before_the_engine_is_ready_starts_nothing_and_exits_130():
    batch, actions = step(start_batch(orders("a", "b"), workers=2), StopAsked())
    assert recorded(actions) == [("a", "not started"), ("b", "not started")]
    assert actions[-1] == Finish(130)
    assert step(batch, Begin(1.0)) == (batch, ())


def test_a_kill_that_comes_first_stops_and_kills_at_once():
    batch, _ = step(start_batch(orders("a", "b"), workers=1), Begin(0.0))
    batch, actions = step(batch, KillAsked())
    assert recorded(actions) == [("b", "not started")]
    assert isinstance(actions[0], PauseTurns) and actions[-1] == KillTurns()


def test_a_queued_continuation_stopped_before_it_began_keeps_its_session():
    order = TurnOrder("a", "", "s-old", "/w", resuming=True, transcript="/t")
    _, actions = step(start_batch([order], workers=1), StopAsked())
    result = next(r for a in actions if isinstance(a, RecordNotStarted) for r in a.results)
    assert (result.session, result.transcript) == ("s-old", "/t")


def test_a_result_for_a_turn_that_is_not_running_is_ignored():
    batch, _ = step(start_batch(orders("a"), workers=1), Begin(0.0))
    assert step(batch, ended("zzz")) == (batch, ())


def test_progress_counts_and_estimates_what_is_left():
    batch, _ = step(start_batch(orders("a", "b", "c", "d", "e"), workers=2), Begin(100.0))
    assert progress(batch, 105.0).left is None  # nothing ended yet: no estimate
    batch, _ = step(batch, ended("a", "failed"))
    figures = progress(batch, 110.0)
    assert (figures.total, figures.ended, figures.running, figures.queued, figures.failed) == (
        5,
        1,
        2,
        2,
        1,
    )
    assert figures.elapsed == 10.0
    assert figures.left == (2 + 2 / 2) * 10.0 / 1


def test_a_waiting_batch_has_no_elapsed_time_and_a_done_one_nothing_left():
    waiting = start_batch(orders("a"), workers=1)
    assert progress(waiting, 50.0).elapsed == 0.0
    batch, _ = step(waiting, Begin(50.0))
    batch, _ = step(batch, ended("a"))
    assert progress(batch, 60.0).left == 0.0


def test_the_exit_code_of_a_stopped_batch_is_130_even_if_every_turn_finished():
    batch = Batch(1, (), results=(TaskResult("a", TaskOutcome.FINISHED),), stop_asked=True)
    assert exit_code(batch) == 130
