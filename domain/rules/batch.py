"""A batch as a state and a pure step: which turns run, which wait, what is recorded,
and how the batch ends.

At most ``workers`` turns run at once, in TASKS order. Each turn's result is recorded
as it ends. A stop (Ctrl-C, SIGTERM) asks the running turns to pause first, then records
every queued turn ``not started`` at once, in one write however long the queue; a
second Ctrl-C kills them. The loop
(:mod:`treadle.domain.loop.batch`) only carries out the actions. Example::

    >>> from treadle.domain.values.batch import TaskResult, TurnOrder
    >>> orders = [TurnOrder(name, "task", "s-" + name, "/w") for name in "abcd"]
    >>> batch, actions = step(start_batch(orders, workers=2), Begin(now=0.0))
    >>> [action.order.id for action in actions]
    ['a', 'b']
    >>> batch, actions = step(batch, TurnEnded(TaskResult("a", "finished")))
    >>> [type(action).__name__ for action in actions]
    ['RecordResult', 'StartTurn']
    >>> batch, actions = step(batch, StopAsked())
    >>> [type(action).__name__ for action in actions], actions[1].results[0].id
    (['PauseTurns', 'RecordNotStarted'], 'd')
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace

from treadle.domain.values.batch import Progress, TaskOutcome, TaskResult, TurnOrder
from treadle.domain.values.outcome import EXIT_CODES, OutcomeKind


class Phase(enum.Enum):
    WAITING = "waiting"  # not begun: the engine is starting
    RUNNING = "running"
    STOPPING = "stopping"  # stopped: the running turns are pausing
    DONE = "done"


@dataclass(frozen=True, slots=True)
class Batch:
    """Where a batch stands. ``running`` holds the ids of the turns started and not yet
    ended; ``results`` what was recorded, in order; ``skipped`` the ids that finished in
    an earlier run. Times are the clock's, in seconds."""

    workers: int
    queue: tuple[TurnOrder, ...]
    running: tuple[str, ...] = ()
    results: tuple[TaskResult, ...] = ()
    skipped: tuple[str, ...] = ()
    phase: Phase = Phase.WAITING
    started_at: float = 0.0
    stop_asked: bool = False
    """A stop came: the batch exits 130, whatever its turns did."""
    killing: bool = False


def start_batch(orders: Iterable[TurnOrder], *, workers: int, skipped: Iterable[str] = ()) -> Batch:
    """A batch of ``orders``, not begun. ``workers`` is at least one."""
    return Batch(max(1, workers), tuple(orders), skipped=tuple(skipped))


# Events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Begin:
    """The engine is ready: turns may start."""

    now: float


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """A turn ended (or was never started: its engine says how)."""

    result: TaskResult


@dataclass(frozen=True, slots=True)
class StopAsked:
    """Ctrl-C or SIGTERM: stop the batch, pausing the turns that run."""


@dataclass(frozen=True, slots=True)
class KillAsked:
    """A second Ctrl-C: end the running turns now, without waiting for their pause."""


BatchEvent = Begin | TurnEnded | StopAsked | KillAsked


# Actions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StartTurn:
    order: TurnOrder


@dataclass(frozen=True, slots=True)
class RecordResult:
    """Write this line of RESULTS now (and show it)."""

    result: TaskResult


@dataclass(frozen=True, slots=True)
class RecordNotStarted:
    """Write these lines of RESULTS now, together (the queue a stop leaves, however
    long: one write, not one per turn)."""

    results: tuple[TaskResult, ...]


@dataclass(frozen=True, slots=True)
class PauseTurns:
    """Ask every running turn to pause (each then ends paused, with its transcript)."""


@dataclass(frozen=True, slots=True)
class KillTurns:
    """Kill every running turn and all it started, now."""


@dataclass(frozen=True, slots=True)
class Finish:
    """Nothing runs and nothing waits: the batch exits with ``exit_code``."""

    exit_code: int


BatchAction = StartTurn | RecordResult | RecordNotStarted | PauseTurns | KillTurns | Finish

NOT_STARTED_DETAIL = "the batch was stopped before this turn began"


def step(batch: Batch, event: BatchEvent) -> tuple[Batch, tuple[BatchAction, ...]]:
    """The next state of ``batch`` after ``event``, and what to do about it."""
    match batch.phase, event:
        case Phase.WAITING, Begin(now=now):
            return _fill(replace(batch, phase=Phase.RUNNING, started_at=now), ())
        case Phase.RUNNING | Phase.STOPPING, TurnEnded(result=result) if result.id in batch.running:
            running = tuple(name for name in batch.running if name != result.id)
            ended = replace(batch, running=running, results=(*batch.results, result))
            recorded: tuple[BatchAction, ...] = (RecordResult(result),)
            if batch.phase is Phase.STOPPING:
                return _end_if_idle(ended, recorded)
            return _fill(ended, recorded)
        case Phase.WAITING | Phase.RUNNING, StopAsked():
            return _stop(batch)
        case Phase.STOPPING, KillAsked() if batch.running and not batch.killing:
            return replace(batch, killing=True), (KillTurns(),)
        case Phase.WAITING | Phase.RUNNING, KillAsked():
            # A second Ctrl-C that came before the first was taken.
            stopped, actions = _stop(batch)
            if stopped.running:
                return replace(stopped, killing=True), (*actions, KillTurns())
            return stopped, actions
    return batch, ()


def _fill(batch: Batch, actions: tuple[BatchAction, ...]) -> tuple[Batch, tuple[BatchAction, ...]]:
    free = batch.workers - len(batch.running)
    starting, waiting = batch.queue[: max(0, free)], batch.queue[max(0, free) :]
    batch = replace(
        batch, queue=waiting, running=(*batch.running, *(order.id for order in starting))
    )
    return _end_if_idle(batch, (*actions, *(StartTurn(order) for order in starting)))


def _stop(batch: Batch) -> tuple[Batch, tuple[BatchAction, ...]]:
    never = tuple(
        TaskResult(
            order.id,
            TaskOutcome.NOT_STARTED,
            detail=NOT_STARTED_DETAIL,
            # A continued session stays named, so that a rerun goes on with it.
            session=order.session if order.resuming else "",
            transcript=order.transcript if order.resuming else "",
        )
        for order in batch.queue
    )
    stopped = replace(
        batch, phase=Phase.STOPPING, queue=(), results=(*batch.results, *never), stop_asked=True
    )
    # The running turns hear of the stop before the queue is written: a long queue
    # must not hold their pause back.
    actions: tuple[BatchAction, ...] = (PauseTurns(),) if stopped.running else ()
    if never:
        actions = (*actions, RecordNotStarted(never))
    return _end_if_idle(stopped, actions)


def _end_if_idle(
    batch: Batch, actions: tuple[BatchAction, ...]
) -> tuple[Batch, tuple[BatchAction, ...]]:
    if batch.running or batch.queue:
        return batch, actions
    done = replace(batch, phase=Phase.DONE)
    return done, (*actions, Finish(exit_code(done)))


def exit_code(batch: Batch) -> int:
    """130 when the batch was stopped; else 0 when every turn finished (those skipped as
    finished before included), 1 otherwise."""
    if batch.stop_asked:
        return EXIT_CODES[OutcomeKind.PAUSED]
    return 0 if all(result.finished for result in batch.results) else 1


# Progress ----------------------------------------------------------------------------


def progress(batch: Batch, now: float) -> Progress:
    """The batch's figures at ``now``. The estimate assumes the turns still to come take
    as long as those that ended, and that a running turn is half done.

    >>> from treadle.domain.values.batch import TaskResult, TurnOrder
    >>> batch = Batch(2, (TurnOrder("c", "", "s", "/w"),), running=("b",),
    ...               results=(TaskResult("a", "failed"),), phase=Phase.RUNNING)
    >>> figures = progress(batch, now=10.0)
    >>> figures.ended, figures.failed, figures.left
    (1, 1, 15.0)
    """
    elapsed = max(0.0, now - batch.started_at) if batch.phase is not Phase.WAITING else 0.0
    ended = sum(1 for result in batch.results if result.outcome is not TaskOutcome.NOT_STARTED)
    left: float | None = None
    if ended and elapsed > 0 and batch.phase is Phase.RUNNING:
        left = (len(batch.queue) + len(batch.running) / 2) * elapsed / ended
    elif batch.phase is Phase.DONE:
        left = 0.0
    return Progress(
        total=len(batch.queue) + len(batch.running) + len(batch.results),
        ended=ended,
        running=len(batch.running),
        queued=len(batch.queue),
        failed=sum(1 for result in batch.results if not result.finished),
        skipped=len(batch.skipped),
        elapsed=elapsed,
        left=left,
    )
