"""Watching a sub-agent as plain values: every transition of its state, with no loop."""

from __future__ import annotations

import math

import pytest

from treadle.domain.rules.watching import (
    AskForReport,
    CallerStopped,
    Finish,
    PersonAnswered,
    PersonAsked,
    Phase,
    ReportEnded,
    ReportProgress,
    StopReport,
    StopWork,
    Tick,
    Watch,
    WorkEnded,
    start_watch,
    step,
)
from treadle.domain.values.events import SubAgentEnding
from treadle.domain.values.outcome import (
    Answered,
    NeedsApproval,
    OutcomeKind,
    Stopped,
    Truncated,
    end_turn,
)

FINISHED = end_turn(Answered())
PAUSED = end_turn(Stopped())


def watching(**clocks: float) -> Watch:
    settings = {"check_interval": 2.0, "deadline": 10.0, "grace": 5.0} | clocks
    return start_watch(now=0.0, **settings)


def test_progress_is_due_every_check_interval():
    watch = watching()
    watch, actions = step(watch, Tick(1.0))
    assert actions == ()
    watch, actions = step(watch, Tick(2.0))
    assert actions == (ReportProgress(),)
    assert watch.wakes_at == 4.0


def test_progress_checks_missed_while_the_loop_was_busy_are_skipped():
    watch, actions = step(watching(), Tick(7.5))
    assert actions == (ReportProgress(),)
    assert watch.next_check == 8.0


def test_the_check_interval_has_a_floor():
    assert watching(check_interval=0.0).check_interval == 0.1


def test_at_the_deadline_the_work_is_stopped_and_no_progress_is_reported():
    watch, actions = step(watching(check_interval=5.0), Tick(10.0))
    assert actions == (StopWork(),)
    assert (watch.phase, watch.deadline_hit) == (Phase.STOPPING, True)
    assert watch.wakes_at == math.inf  # nothing to time while the work stops


def test_work_stopped_at_the_deadline_is_asked_for_its_report_within_the_grace():
    watch, _ = step(watching(), Tick(10.0))
    watch, actions = step(watch, WorkEnded(PAUSED, now=10.5))
    assert actions == (AskForReport(),)
    assert (watch.phase, watch.report_until) == (Phase.REPORTING, 15.5)


def test_the_report_grace_is_never_longer_than_the_deadline():
    assert watching(deadline=3.0, grace=60.0).grace == 3.0
    assert watching(deadline=0.2, grace=60.0).grace == 1.0


def test_a_report_received_finishes_at_the_deadline_with_the_report():
    watch, _ = step(watching(), Tick(10.0))
    watch, _ = step(watch, WorkEnded(PAUSED, now=10.0))
    watch, actions = step(watch, ReportEnded("I did half."))
    assert actions == (Finish(SubAgentEnding.DEADLINE, "report", PAUSED),)
    assert watch.phase is Phase.DONE


def test_an_empty_report_is_replaced_by_one_from_the_record():
    watch, _ = step(watching(), Tick(10.0))
    watch, _ = step(watch, WorkEnded(PAUSED, now=10.0))
    _, actions = step(watch, ReportEnded("  "))
    assert actions == (Finish(SubAgentEnding.DEADLINE, "record", PAUSED),)


def test_when_the_report_grace_is_over_the_report_request_is_stopped():
    watch, _ = step(watching(), Tick(10.0))
    watch, _ = step(watch, WorkEnded(PAUSED, now=10.0))
    watch, actions = step(watch, Tick(14.9))
    assert actions == ()
    watch, actions = step(watch, Tick(15.0))
    assert actions == (StopReport(),)
    _, actions = step(watch, ReportEnded(""))
    assert actions == (Finish(SubAgentEnding.DEADLINE, "record", PAUSED),)


def test_a_sub_agent_that_answers_finishes_with_its_answer():
    watch, actions = step(watching(), WorkEnded(FINISHED, now=3.0))
    assert actions == (Finish(SubAgentEnding.FINISHED, "answer", FINISHED),)
    assert watch.phase is Phase.DONE


def test_an_answer_that_lands_as_the_deadline_stops_it_still_counts_as_finished():
    watch, _ = step(watching(), Tick(10.0))
    _, actions = step(watch, WorkEnded(FINISHED, now=10.0))
    assert actions == (Finish(SubAgentEnding.FINISHED, "answer", FINISHED),)


def test_the_callers_stop_stops_the_work_and_reports_from_the_record():
    watch, actions = step(watching(), CallerStopped())
    assert actions == (StopWork(),)
    _, actions = step(watch, WorkEnded(PAUSED, now=1.0))
    assert actions == (Finish(SubAgentEnding.STOPPED, "record", PAUSED),)


def test_the_callers_stop_after_the_deadline_asks_for_no_report():
    watch, _ = step(watching(), Tick(10.0))
    watch, actions = step(watch, CallerStopped())
    assert actions == ()
    _, actions = step(watch, WorkEnded(PAUSED, now=10.0))
    assert actions == (Finish(SubAgentEnding.DEADLINE, "record", PAUSED),)


def test_the_callers_stop_during_the_report_stops_the_report():
    watch, _ = step(watching(), Tick(10.0))
    watch, _ = step(watch, WorkEnded(PAUSED, now=10.0))
    watch, actions = step(watch, CallerStopped())
    assert actions == (StopReport(),)
    _, actions = step(watch, ReportEnded(""))
    assert actions == (Finish(SubAgentEnding.DEADLINE, "record", PAUSED),)


@pytest.mark.parametrize(
    ("ending", "expected"),
    [
        (end_turn(NeedsApproval("a yes")), "ends the caller"),
        (end_turn(Truncated(3)), "failed"),
    ],
)
def test_a_sub_agent_that_cannot_finish_says_so(ending, expected):
    _, actions = step(watching(), WorkEnded(ending, now=1.0))
    assert actions == (Finish(expected, "record", ending),)


def test_nothing_moves_a_watch_that_is_done():
    watch, _ = step(watching(), WorkEnded(FINISHED, now=1.0))
    for event in (Tick(100.0), CallerStopped(), ReportEnded("x"), WorkEnded(PAUSED, now=2.0)):
        assert step(watch, event) == (watch, ())
    assert watch.wakes_at == math.inf


def test_a_stopped_sub_agent_is_not_asked_for_a_report_twice():
    watch, _ = step(watching(), CallerStopped())
    assert watch.phase is Phase.STOPPING
    assert step(watch, Tick(20.0)) == (watch, ())
    assert OutcomeKind.PAUSED is PAUSED.kind


def test_while_the_person_is_asked_neither_clock_runs() -> None:
    watch, _ = step(watching(), PersonAsked(1.0))
    assert watch.wakes_at == math.inf
    watch, actions = step(watch, Tick(30.0))
    assert actions == () and watch.phase is Phase.WORKING
    assert watch.worked(30.0, started=0.0) == 1.0


def test_the_answer_moves_both_clocks_on_by_the_time_waited() -> None:
    watch, _ = step(watching(), PersonAsked(1.0))
    watch, _ = step(watch, PersonAnswered(31.0))
    assert (watch.next_check, watch.deadline_at, watch.wakes_at) == (32.0, 40.0, 32.0)
    assert watch.worked(35.0, started=0.0) == 5.0
    watch, actions = step(watch, Tick(40.0))
    assert actions == (StopWork(),)


def test_overlapping_waits_count_once_from_the_first_ask_to_the_last_answer() -> None:
    watch, _ = step(watching(), PersonAsked(1.0))
    watch, _ = step(watch, PersonAsked(2.0))
    watch, _ = step(watch, PersonAnswered(5.0))
    assert watch.wakes_at == math.inf
    watch, _ = step(watch, PersonAnswered(11.0))
    assert watch.deadline_at == 20.0 and watch.waited == 10.0


def test_an_answer_with_no_question_open_changes_nothing() -> None:
    watch = watching()
    assert step(watch, PersonAnswered(3.0)) == (watch, ())
