"""What the container builds for ``treadle batch``: the engine, RESULTS and the screen.

Ray is imported only when ``--engine ray`` asks for it (it is the optional extra
``treadle[ray]``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treadle.ports.clock import Clock

if TYPE_CHECKING:
    from treadle.ports.batch import BatchScreen, ResultsLog, TurnEngine

ENGINES = ("local", "ray")


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How a batch runs: its engine, how many turns at once, the Ray cluster to use
    ("" for a private instance on this machine), and its RESULTS file."""

    engine: str = "local"
    workers: int = 1
    address: str = ""
    results_path: str = ""


def build_turn_engine(options: BatchOptions, clock: Clock) -> TurnEngine:
    if options.engine == "ray":
        from treadle.adapters.batch.ray_engine import RayEngine

        return RayEngine(clock, workers=options.workers, address=options.address)
    from treadle.adapters.batch.local import LocalEngine

    return LocalEngine(clock, workers=options.workers)


def open_results_log(options: BatchOptions) -> Iterator[ResultsLog]:
    from treadle.adapters.batch.results_file import ResultsFile  # only in a batch

    results = ResultsFile(options.results_path)
    try:
        yield results
    finally:
        results.close()


def build_batch_screen(options: BatchOptions) -> BatchScreen:
    from treadle.adapters.batch.screen import StderrBatchScreen

    return StderrBatchScreen(results_path=options.results_path)
