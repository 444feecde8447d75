"""Fakes for ``treadle batch``: an engine whose turns take clock time, and recorders for
RESULTS and the screen.

Example::

    clock = FakeClock()
    engine = FakeEngine(clock, {"slow": FakeTurn(seconds=30)})
    result = await engine.run(TurnOrder("slow", "task", "s1", "/w"))   # 30 s of clock time
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from treadle.domain.rules.turn_report import OUTCOME_BY_EXIT
from treadle.domain.values.batch import Progress, TaskOutcome, TaskResult, TurnOrder
from treadle.ports.clock import Clock

EXIT_BY_OUTCOME = {outcome: code for code, outcome in OUTCOME_BY_EXIT.items()}


@dataclass(frozen=True, slots=True)
class FakeTurn:
    """A scripted turn: how it ends after ``seconds`` of clock time, and whether it
    pauses when asked (one that does not runs on until it is killed)."""

    outcome: TaskOutcome = TaskOutcome.FINISHED
    seconds: float = 1.0
    pauses: bool = True
    requests: int = 1
    tokens: Mapping[str, int] = field(default_factory=lambda: {"input": 10, "output": 2})


class FakeEngine:
    """The TurnEngine port on a clock: no process, no waiting on the fake clock."""

    def __init__(
        self,
        clock: Clock,
        turns: Mapping[str, FakeTurn] | None = None,
        *,
        default: FakeTurn | None = None,
        start_error: str = "",
    ) -> None:
        self.clock = clock
        self.turns = dict(turns or {})
        self.default = default or FakeTurn()
        self.start_error = start_error
        self.started: list[str] = []
        self.running: set[str] = set()
        self.most_running = 0
        self.paused_asked = 0
        self.killed_asked = 0
        self.closed = False
        self._pause = asyncio.Event()
        self._kill = asyncio.Event()

    async def start(self) -> Result[None, str]:
        return Failure(self.start_error) if self.start_error else Success(None)

    async def run(self, order: TurnOrder) -> TaskResult:
        turn = self.turns.get(order.id, self.default)
        began = self.clock.now()
        self.started.append(order.id)
        self.running.add(order.id)
        self.most_running = max(self.most_running, len(self.running))
        work = asyncio.ensure_future(self.clock.sleep(turn.seconds))
        pause = asyncio.ensure_future(self._pause.wait())
        kill = asyncio.ensure_future(self._kill.wait())
        outcome, detail = turn.outcome, ""
        try:
            waiting = {work, kill} | ({pause} if turn.pauses else set())
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                outcome = TaskOutcome.PAUSED
                detail = "killed" if kill.done() else "Turn paused"
        finally:
            for task in (work, pause, kill):
                task.cancel()
            self.running.discard(order.id)
        return TaskResult(
            order.id,
            outcome,
            exit_code=EXIT_BY_OUTCOME.get(outcome) if detail != "killed" else None,
            detail=detail,
            transcript=order.transcript,
            session=order.session,
            requests=turn.requests,
            tokens=dict(turn.tokens),
            seconds=self.clock.now() - began,
            worker="fake:1",
        )

    def pause(self) -> None:
        self.paused_asked += 1
        self._pause.set()

    def kill(self) -> None:
        self.killed_asked += 1
        self._kill.set()

    async def close(self) -> None:
        self.closed = True
        self._kill.set()


class RecordingResults:
    """The ResultsLog port in memory: ``written`` in order."""

    def __init__(self) -> None:
        self.written: list[TaskResult] = []

    def write(self, result: TaskResult) -> None:
        self.written.append(result)

    def write_all(self, results: Sequence[TaskResult]) -> None:
        self.written.extend(results)


class RecordingBatchScreen:
    """The BatchScreen port in memory."""

    def __init__(self) -> None:
        self.figures: list[Progress] = []
        self.ended_ids: list[str] = []
        self.notes: list[str] = []
        self.summaries: list[Sequence[TaskResult]] = []

    def progress(self, figures: Progress) -> None:
        self.figures.append(figures)

    def ended(self, result: TaskResult, figures: Progress) -> None:
        self.ended_ids.append(result.id)
        self.figures.append(figures)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def summary(self, results: Sequence[TaskResult], figures: Progress) -> None:
        self.summaries.append(tuple(results))
