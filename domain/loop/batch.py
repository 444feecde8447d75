"""Running a batch: the engine's turns driven by the batch's state and step.

What happens when is decided by :mod:`treadle.domain.rules.batch`; this module starts
the engine, feeds the step its events (a turn ended, a stop, a second Ctrl-C), and
carries out what it says: start a turn, write its result, pause or kill the running
ones. Example::

    run = BatchRun(start_batch(plan.orders, workers=2), BatchPorts(engine, log, screen, clock))
    match await run.run():   # run.stop() from a signal handler pauses it
        case Success(exit_code): ...
        case Failure(why): ...  # the engine could not start; nothing ran
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from returns.result import Failure, Result, Success

from treadle.domain.rules.batch import (
    Batch,
    BatchAction,
    BatchEvent,
    Begin,
    Finish,
    KillAsked,
    KillTurns,
    PauseTurns,
    RecordNotStarted,
    RecordResult,
    StartTurn,
    StopAsked,
    TurnEnded,
    progress,
    step,
)
from treadle.domain.values.batch import Progress, TaskOutcome, TaskResult, TurnOrder
from treadle.ports.batch import BatchScreen, ResultsLog, TurnEngine
from treadle.ports.clock import Clock

log = logging.getLogger(__name__)

PROGRESS_INTERVAL = 1.0
"""How often the progress line is redrawn between events (seconds)."""
NOT_STARTED_SHOWN = 20
"""The turns a stop left queued that get a line of their own on the screen; RESULTS
has every one."""


@dataclass(frozen=True, slots=True)
class BatchPorts:
    engine: TurnEngine
    results: ResultsLog
    screen: BatchScreen
    clock: Clock


class BatchRun:
    """One run of a batch. ``stop()`` and ``kill()`` may be called at any time (from a
    signal handler on the loop): the first pauses the batch, the second ends its turns."""

    def __init__(self, batch: Batch, ports: BatchPorts) -> None:
        self.batch = batch
        self.ports = ports
        self._events: asyncio.Queue[BatchEvent] = asyncio.Queue()
        self._turns: set[asyncio.Task[None]] = set()

    def stop(self) -> None:
        self._events.put_nowait(StopAsked())

    def kill(self) -> None:
        self._events.put_nowait(KillAsked())

    @property
    def figures(self) -> Progress:
        return progress(self.batch, self.ports.clock.now())

    async def run(self) -> Result[int, str]:
        """Run the batch to its end: its exit code, or why the engine could not start.
        The engine is closed before this returns, whatever happened."""
        ticker: asyncio.Task[None] | None = None
        try:
            match await self.ports.engine.start():
                case Failure(why):
                    return Failure(why)
            # Stopped while the engine started: the stop comes first, and nothing begins.
            if self._events.empty():
                code = self._apply(Begin(self.ports.clock.now()))
                if code is not None:
                    return Success(code)
            ticker = asyncio.ensure_future(self._tick())
            while True:
                if (code := self._apply(await self._events.get())) is not None:
                    return Success(code)
        finally:
            if ticker is not None:
                ticker.cancel()
            await self._close()

    async def _close(self) -> None:
        try:
            await self.ports.engine.close()
        finally:
            for turn in self._turns:
                turn.cancel()
            await asyncio.gather(*self._turns, return_exceptions=True)

    def _apply(self, event: BatchEvent) -> int | None:
        """Step the batch and carry out its actions; the exit code once it finishes."""
        self.batch, actions = step(self.batch, event)
        for action in actions:
            if (code := self._do(action)) is not None:
                return code
        return None

    def _do(self, action: BatchAction) -> int | None:
        match action:
            case StartTurn(order=order):
                turn = asyncio.ensure_future(self._turn(order))
                self._turns.add(turn)
                turn.add_done_callback(self._turns.discard)
            case RecordResult(result=result):
                self.ports.results.write(result)
                self.ports.screen.ended(result, self.figures)
            case RecordNotStarted(results=results):
                self.ports.results.write_all(results)
                figures = self.figures
                for result in results[:NOT_STARTED_SHOWN]:
                    self.ports.screen.ended(result, figures)
                if len(results) > NOT_STARTED_SHOWN:
                    more = len(results) - NOT_STARTED_SHOWN
                    self.ports.screen.note(f"… and {more:,} more not started")
            case PauseTurns():
                self.ports.screen.note("stopping: the running turns are pausing")
                self.ports.engine.pause()
            case KillTurns():
                self.ports.screen.note("stopping now: the running turns are being killed")
                self.ports.engine.kill()
            case Finish(exit_code=code):
                self.ports.screen.summary(self.batch.results, self.figures)
                return code
        return None

    async def _turn(self, order: TurnOrder) -> None:
        try:
            result = await self.ports.engine.run(order)
        except Exception as error:  # a bug in an engine: the batch goes on without it
            log.exception("the engine failed on turn %s", order.id)
            result = TaskResult(
                order.id,
                TaskOutcome.FAILED,
                detail=f"InternalError: {type(error).__name__}: {error}",
                session=order.session,
                transcript=order.transcript,
            )
        self._events.put_nowait(TurnEnded(result))

    async def _tick(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await self.ports.clock.sleep(PROGRESS_INTERVAL)
                self.ports.screen.progress(self.figures)
