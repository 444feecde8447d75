"""The ports of ``treadle batch``: an engine that runs headless turns, the RESULTS file,
and the progress on stderr."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from returns.result import Result

from treadle.domain.values.batch import Progress, TaskResult, TurnOrder


class TurnEngine(Protocol):
    """Runs turns, each one headless ``treadle --json`` process in its own process
    group, on this machine or on a cluster; the batch decides how many at once.

    ``start`` says why it cannot run anything (Ray not installed, a cluster out of
    reach) as a Failure. ``run`` never raises: every ending, the engine's own troubles
    included, is a :class:`TaskResult` (``lost`` when the turn's worker died). After
    ``pause`` every running turn is asked to pause and its ``run`` returns once it has;
    after ``kill`` they are ended now. ``close`` leaves nothing the engine started
    running, whatever happened before.
    """

    async def start(self) -> Result[None, str]: ...

    async def run(self, order: TurnOrder) -> TaskResult: ...

    def pause(self) -> None: ...

    def kill(self) -> None: ...

    async def close(self) -> None: ...


class ResultsLog(Protocol):
    """RESULTS: one JSON line per task, on disk (flushed) before ``write`` returns;
    ``write_all`` puts many on disk at once."""

    def write(self, result: TaskResult) -> None: ...

    def write_all(self, results: Sequence[TaskResult]) -> None: ...


class BatchScreen(Protocol):
    """What a person sees of a batch: its progress, each turn as it ends, a summary."""

    def progress(self, figures: Progress) -> None: ...

    def ended(self, result: TaskResult, figures: Progress) -> None: ...

    def note(self, text: str) -> None: ...

    def summary(self, results: Sequence[TaskResult], figures: Progress) -> None: ...
