"""Watching a sub-agent: its two clocks and its final report, as a state and a step.

A sub-agent works until it answers; every ``check_interval`` seconds its progress is
reported, and at its ``deadline`` its work is stopped and it is asked for a final
report, which it gets ``grace`` seconds to write. Its caller's stop ends it at once,
with a report made from the record, since nobody waits for the model any more.

While it waits for the person (a question, an approval) both clocks stand still: the
deadline does not pass, no progress is reported, and the time waited is not charged
to it — its deadline and its next check move on by that time once the answer comes.

:func:`step` takes the state and one event and gives the next state and what to do;
the loop only drives it. Example::

    >>> watch = start_watch(now=0.0, check_interval=2.0, deadline=5.0, grace=5.0)
    >>> watch, actions = step(watch, Tick(2.0))
    >>> actions
    (ReportProgress(),)
    >>> watch, actions = step(watch, Tick(5.0))
    >>> actions
    (StopWork(),)
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace
from typing import Literal

from treadle.domain.values.events import SubAgentEnding
from treadle.domain.values.outcome import OutcomeKind, Stopped, TurnOutcome, end_turn
from treadle.domain.values.tools import MIN_CHECK_INTERVAL


class Phase(enum.Enum):
    WORKING = "working"
    STOPPING = "stopping"  # its work is being stopped: the deadline, or the caller
    REPORTING = "reporting"  # asked for its final report, within the grace
    DONE = "done"


@dataclass(frozen=True, slots=True)
class Watch:
    """Where a sub-agent stands. Times are the clock's, in seconds."""

    phase: Phase
    check_interval: float
    next_check: float
    deadline_at: float
    grace: float
    report_until: float = math.inf
    deadline_hit: bool = False
    caller_stopped: bool = False
    asking: int = 0
    """Questions and approvals of the sub-agent now waiting for the person."""
    asked_at: float = 0.0
    waited: float = 0.0
    """Seconds spent waiting for the person before the wait now open, if any."""

    def worked(self, now: float, started: float) -> float:
        """The sub-agent's own time since ``started``: the person's answers left out."""
        waiting = now - self.asked_at if self.asking else 0.0
        return now - started - self.waited - waiting

    @property
    def wakes_at(self) -> float:
        """The next time a :class:`Tick` would change something."""
        match self.phase:
            case Phase.WORKING if self.asking:
                return math.inf
            case Phase.WORKING:
                return min(self.next_check, self.deadline_at)
            case Phase.REPORTING:
                return self.report_until
            case Phase.STOPPING | Phase.DONE:
                return math.inf


def start_watch(*, now: float, check_interval: float, deadline: float, grace: float) -> Watch:
    """A sub-agent starting now. Its report grace is never longer than its deadline:
    a three-second sub-agent does not get a minute to write its report."""
    interval = max(check_interval, MIN_CHECK_INTERVAL)
    return Watch(
        Phase.WORKING,
        check_interval=interval,
        next_check=now + interval,
        deadline_at=now + deadline,
        grace=min(grace, max(deadline, 1.0)),
    )


# Events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tick:
    """The clock reached ``now``."""

    now: float


@dataclass(frozen=True, slots=True)
class WorkEnded:
    """The sub-agent's turn ended with ``outcome``."""

    outcome: TurnOutcome
    now: float


@dataclass(frozen=True, slots=True)
class ReportEnded:
    """The report request ended; ``text`` is empty when no report came."""

    text: str


@dataclass(frozen=True, slots=True)
class CallerStopped:
    """The caller was stopped: Esc, or its own deadline."""


@dataclass(frozen=True, slots=True)
class PersonAsked:
    """The sub-agent (or one of its own) asked the person something, at ``now``."""

    now: float


@dataclass(frozen=True, slots=True)
class PersonAnswered:
    """The person answered (or the question was withdrawn), at ``now``."""

    now: float


WatchEvent = Tick | WorkEnded | ReportEnded | CallerStopped | PersonAsked | PersonAnswered


# Actions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReportProgress:
    """Show what the sub-agent is doing, its requests, tokens and time."""


@dataclass(frozen=True, slots=True)
class StopWork:
    """Stop the sub-agent's request and tools."""


@dataclass(frozen=True, slots=True)
class AskForReport:
    """Ask the stopped sub-agent for its final report, with no tool allowed."""


@dataclass(frozen=True, slots=True)
class StopReport:
    """The report request took all its grace: stop it."""


ReportSource = Literal["answer", "report", "record"]


@dataclass(frozen=True, slots=True)
class Finish:
    """The sub-agent is done. ``report`` says what the caller reads: the sub-agent's
    answer, its final report, or a report made from the record."""

    ending: SubAgentEnding
    report: ReportSource
    outcome: TurnOutcome


WatchAction = ReportProgress | StopWork | AskForReport | StopReport | Finish


def step(watch: Watch, event: WatchEvent) -> tuple[Watch, tuple[WatchAction, ...]]:
    """The next state of ``watch`` after ``event``, and what to do about it."""
    match watch.phase, event:
        case _, PersonAsked(now=now):
            opened = watch.asked_at if watch.asking else now
            return replace(watch, asking=watch.asking + 1, asked_at=opened), ()
        case _, PersonAnswered(now=now) if watch.asking:
            return _answered(watch, now), ()
        case Phase.WORKING, Tick() if watch.asking:
            return watch, ()
        case Phase.WORKING, Tick(now=now):
            if now >= watch.deadline_at:
                return replace(watch, phase=Phase.STOPPING, deadline_hit=True), (StopWork(),)
            if now >= watch.next_check:
                return replace(watch, next_check=_next_check(watch, now)), (ReportProgress(),)
            return watch, ()
        case Phase.REPORTING, Tick(now=now) if now >= watch.report_until:
            return watch, (StopReport(),)
        case Phase.WORKING | Phase.STOPPING, WorkEnded(outcome=outcome, now=now):
            return _work_ended(watch, outcome, now)
        case Phase.WORKING, CallerStopped():
            return replace(watch, phase=Phase.STOPPING, caller_stopped=True), (StopWork(),)
        case Phase.STOPPING, CallerStopped():
            return replace(watch, caller_stopped=True), ()
        case Phase.REPORTING, CallerStopped():
            return replace(watch, caller_stopped=True), (StopReport(),)
        case Phase.REPORTING, ReportEnded(text=text):
            report: ReportSource = "report" if text.strip() else "record"
            return _done(watch, Finish(SubAgentEnding.DEADLINE, report, end_turn(Stopped())))
    return watch, ()


def _work_ended(
    watch: Watch, outcome: TurnOutcome, now: float
) -> tuple[Watch, tuple[WatchAction, ...]]:
    match outcome.kind:
        case OutcomeKind.FINISHED:
            return _done(watch, Finish(SubAgentEnding.FINISHED, "answer", outcome))
        case OutcomeKind.BLOCKED | OutcomeKind.WAITING:
            # Nobody could answer it, so nobody can answer its caller either.
            return _done(watch, Finish(SubAgentEnding.ENDS_CALLER, "record", outcome))
        case OutcomeKind.FAILED:
            return _done(watch, Finish(SubAgentEnding.FAILED, "record", outcome))
        case OutcomeKind.PAUSED if watch.deadline_hit and not watch.caller_stopped:
            reporting = replace(watch, phase=Phase.REPORTING, report_until=now + watch.grace)
            return reporting, (AskForReport(),)
        case OutcomeKind.PAUSED:
            ending = SubAgentEnding.DEADLINE if watch.deadline_hit else SubAgentEnding.STOPPED
            return _done(watch, Finish(ending, "record", outcome))


def _answered(watch: Watch, now: float) -> Watch:
    """One wait less; once none is open, the clocks move on by the time waited."""
    if watch.asking > 1:
        return replace(watch, asking=watch.asking - 1)
    waited = max(0.0, now - watch.asked_at)
    return replace(
        watch,
        asking=0,
        waited=watch.waited + waited,
        deadline_at=watch.deadline_at + waited,
        next_check=watch.next_check + waited,
        report_until=watch.report_until + waited,
    )


def _done(watch: Watch, finish: Finish) -> tuple[Watch, tuple[WatchAction, ...]]:
    return replace(watch, phase=Phase.DONE), (finish,)


def _next_check(watch: Watch, now: float) -> float:
    """The first check after ``now``: checks missed while the loop was busy are skipped."""
    missed = math.floor((now - watch.next_check) / watch.check_interval) + 1
    return watch.next_check + missed * watch.check_interval
