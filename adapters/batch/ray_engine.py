"""``--engine ray``: each turn is one Ray task, which runs one treadle process.

Turns are not idempotent, so a task is never retried (``max_retries=0``): when its
worker dies (killed, its node lost) the turn is reported ``lost`` with what its
transcript kept, and the other turns go on. The task body is :func:`run_on_worker`,
the same :func:`~treadle.adapters.batch.turn_process.run_turn` the local engine uses,
in the worker's own event loop.

Pausing is ``ray.cancel(force=False)``: Ray raises the worker's SIGINT handler, which
pauses the turn (SIGTERM, then SIGTERM to its group, then SIGKILL, as on this machine), and the task
still returns its result. A task that does not end within the pause's time is cancelled
with ``force=True``: Ray kills its worker, and the worker's watchdog kills what the
turn started, since Ray's own cancel misses what left the worker's process group.

As on this machine, each worker starts its next turn's process while a turn runs
(:class:`~treadle.adapters.batch.turn_process.WarmTurns`, one per worker), so a turn's
interpreter and imports are not paid between two turns; a worker given no turn within
:data:`SPARE_SECONDS` of its last one ends it (the batch's end, or a cluster's worker
that outlives its batch).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Any

from returns.result import Failure, Result, Success

from treadle.adapters.batch.ray_instance import LocalRayInstance, RayCluster
from treadle.adapters.batch.turn_process import StopTimes, TurnSignals, WarmTurns, run_turn
from treadle.adapters.system_clock import SystemClock
from treadle.domain.rules.batch import NOT_STARTED_DETAIL
from treadle.domain.rules.turn_report import TurnTally, tally_lines
from treadle.domain.values.batch import TaskOutcome, TaskResult, TurnOrder
from treadle.ports.clock import Clock

LOST = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "OwnerDiedError",
    "ObjectLostError",
    "ObjectFetchTimedOutError",
    "ObjectReconstructionFailedError",
    "OutOfMemoryError",
    "RaySystemError",
)
"""Ray's errors that mean the task's worker or node went away, not that the turn failed."""

SPARE_SECONDS = 2.0
"""How long a worker keeps the process it started for its next turn once its last turn
ended: a batch hands a free worker its next turn at once."""


class _Spare:
    """A worker's turn process started ahead, and the timer that ends it when no turn
    comes: taken at each task's start, left to the timer at its end."""

    def __init__(self) -> None:
        self.warm = WarmTurns(1)
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._generation = 0

    def take(self) -> WarmTurns:
        with self._lock:
            self._generation += 1  # a timer already firing ends nothing now
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        return self.warm

    def leave(self) -> None:
        with self._lock:
            self._timer = threading.Timer(SPARE_SECONDS, self._end, (self._generation,))
            self._timer.daemon = True
            self._timer.start()

    def _end(self, generation: int) -> None:
        with self._lock:
            if generation == self._generation:
                self.warm.close()


_spare: _Spare | None = None
"""This worker process's spare (made by its first task; one worker runs one task at a
time)."""


def run_on_worker(order: TurnOrder, times: StopTimes) -> TaskResult:
    """The body of a turn's Ray task, in the worker: run the turn to its end."""
    import ray

    worker = f"{ray.util.get_node_ip_address()}:{os.getpid()}"  # type: ignore[no-untyped-call]
    result: TaskResult | None = None
    try:
        result = asyncio.run(_turn_on_worker(order, worker, times))
    except KeyboardInterrupt:
        # A cancel that came after the turn ended still leaves its result; one that
        # came before it began is Ray's TaskCancelledError: not started.
        if result is None:
            raise
    return result


async def _turn_on_worker(order: TurnOrder, worker: str, times: StopTimes) -> TaskResult:
    global _spare
    loop = asyncio.get_running_loop()
    signals = TurnSignals.new()
    # ray.cancel(force=False) raises SIGINT's handler in the worker's main thread;
    # this one wakes the loop (its wakeup fd) and asks the turn to pause.
    loop.add_signal_handler(signal.SIGINT, signals.pause.set)
    spare = _spare = _spare or _Spare()
    try:
        return await run_turn(
            order,
            worker=worker,
            clock=SystemClock(),
            signals=signals,
            times=times,
            warm=spare.take(),
        )
    finally:
        spare.leave()
        loop.remove_signal_handler(signal.SIGINT)


class RayEngine:
    """The TurnEngine port on Ray: a private instance on 127.0.0.1, or the cluster at
    ``address``. Give ``instance`` to use one started already (it is then left
    running by ``close``)."""

    def __init__(
        self,
        clock: Clock,
        *,
        workers: int,
        address: str = "",
        instance: LocalRayInstance | RayCluster | None = None,
        times: StopTimes | None = None,
    ) -> None:
        self._clock = clock
        self._times = times or StopTimes()
        self._owned = instance is None
        self.instance = instance or (RayCluster(address) if address else LocalRayInstance(workers))
        # The turns of a private instance keep their sessions on this machine, where the
        # batch sees whether a lost turn ever began; a cluster's nodes may keep theirs
        # on their own disks.
        self._sees_sessions = isinstance(self.instance, LocalRayInstance)
        self._remote: Any = None
        self._running: dict[str, Any] = {}  # id -> ObjectRef
        self._forced: set[str] = set()
        self._pausing: asyncio.TimerHandle | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    async def start(self) -> Result[None, str]:
        if self._owned:
            started = await asyncio.to_thread(self.instance.start)
            if isinstance(started, Failure):
                return started
        import ray

        self._remote = ray.remote(num_cpus=1, max_retries=0)(run_on_worker)
        return Success(None)

    async def run(self, order: TurnOrder) -> TaskResult:
        began = self._clock.now()
        before = _session_trace(order.transcript)
        ref = self._remote.remote(order, self._times)
        self._running[order.id] = ref
        self._idle.clear()
        try:
            result: TaskResult = await asyncio.wrap_future(ref.future())
            return result
        except asyncio.CancelledError:
            raise
        except Exception as error:  # Ray's errors, whatever they are, become outcomes
            seconds = round(self._clock.now() - began, 3)
            return self._outcome_of(
                order, error, seconds, began_turn=before != _session_trace(order.transcript)
            )
        finally:
            self._running.pop(order.id, None)
            if not self._running:
                self._idle.set()

    def _outcome_of(
        self, order: TurnOrder, error: Exception, seconds: float, *, began_turn: bool = True
    ) -> TaskResult:
        """What a task that raised says of its turn: Ray's errors become outcomes.
        ``began_turn`` is False when the turn's session shows no sign of it (its folder
        never came to be, its transcript did not grow)."""
        import ray.exceptions as ray_errors

        kinds = {kind.__name__ for kind in type(error).__mro__}
        cause = getattr(error, "cause", None)
        if cause is not None:
            kinds |= {kind.__name__ for kind in type(cause).__mro__}
        lost = bool(kinds & set(LOST))
        cancelled = isinstance(error, ray_errors.TaskCancelledError) and not lost
        if cancelled and order.id not in self._forced:  # cancelled before its turn began
            return TaskResult(order.id, "not started", detail=NOT_STARTED_DETAIL)
        if lost and not began_turn and self._sees_sessions:
            # A dead cluster fails every task given to it at once: their turns never
            # began, and a rerun starts them (a new session has no folder to continue).
            return TaskResult(
                order.id,
                "not started",
                detail=f"its Ray worker was lost ({type(error).__name__}) before the turn began",
                session=order.session if order.resuming else "",
                transcript=order.transcript if order.resuming else "",
                seconds=seconds,
            )
        said = _transcript_tally(order.transcript)
        kept = f"its transcript kept {said.requests} request{'' if said.requests == 1 else 's'}"
        first = (str(error).strip().splitlines() or [""])[0][:300]
        outcome: TaskOutcome
        if order.id in self._forced:
            outcome, detail = "paused", f"its Ray worker was killed before the turn paused; {kept}"
        elif lost:
            outcome, detail = "lost", f"its Ray worker was lost ({type(error).__name__}); {kept}"
        else:
            outcome, detail = "failed", f"InternalError: {type(error).__name__}: {first}"
        return TaskResult(
            order.id,
            outcome,
            detail=detail,
            transcript=order.transcript,
            session=order.session,
            requests=said.requests,
            tokens=dict(said.tokens),
            cost=said.cost,
            seconds=seconds,  # where it ran is in Ray's own message (on stdout)
        )

    def pause(self) -> None:
        import ray

        for ref in list(self._running.values()):
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=False, recursive=True)
        if self._pausing is None:
            self._pausing = asyncio.get_running_loop().call_later(self._pause_time(), self.kill)

    def _pause_time(self) -> float:
        """How long a task may take to pause its turn: two SIGTERMs, the sweep, and
        some more for Ray itself."""
        return self._times.pause + self._times.term + self._times.sweep + 5.0

    def kill(self) -> None:
        import ray

        for order_id, ref in list(self._running.items()):
            self._forced.add(order_id)
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True, recursive=True)

    async def close(self) -> None:
        if self._running:
            self.pause()
            # A cluster that no longer answers is not waited for for ever.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), self._pause_time() + 30.0)
        if self._pausing is not None:
            self._pausing.cancel()
        if self._owned:
            await asyncio.to_thread(self.instance.stop)


def _session_trace(transcript: str) -> tuple[bool, int]:
    """Whether the turn's session folder exists and how long its transcript is: what a
    turn that begins changes (it makes a new session's folder, and writes its start)."""
    if not transcript:
        return (False, -1)
    try:
        size = os.stat(transcript).st_size
    except OSError:
        size = -1
    return (os.path.isdir(os.path.dirname(transcript)), size)


def _transcript_tally(path: str) -> TurnTally:
    """What a turn's transcript kept (read here: on a cluster it may be on another node)."""
    if not path:
        return TurnTally()
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return TurnTally()
    return tally_lines(lines)
