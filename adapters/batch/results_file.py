"""RESULTS: one JSON line per task, appended as each turn ends, on disk at once.

Example::

    results = ResultsFile("results.jsonl")   # appends; a rerun reads what is there
    results.write(TaskResult("fix-1", TaskOutcome.FINISHED, 0, seconds=41.2))
    results.close()
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from treadle.domain.rules.turn_report import tokens_by_kind
from treadle.domain.values.batch import TaskResult
from treadle.domain.values.conversation import Usage

TOKEN_KINDS = tuple(tokens_by_kind(dataclasses.asdict(Usage())))
"""The kinds every line counts (Usage's, named as ``--json`` names them), 0 where the
turn reported none (lost, or never started): a reader may take ``tokens["input"]``."""


def result_record(result: TaskResult) -> dict[str, Any]:
    """The JSON object of one line, its fields in the README's order."""
    return {
        "id": result.id,
        "outcome": result.outcome.value,
        "exit_code": result.exit_code,
        "detail": result.detail,
        "transcript": result.transcript,
        "session": result.session,
        "requests": result.requests,
        "tokens": {**dict.fromkeys(TOKEN_KINDS, 0), **result.tokens},
        "seconds": result.seconds,
        "worker": result.worker,
        "cost": result.cost,
        "value": result.value,
    }


def read_lines(path: str | Path) -> list[str]:
    """The lines of an earlier RESULTS file; none when there is no such file."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []


class ResultsBusy(Exception):
    """Another ``treadle batch`` holds this RESULTS file."""


class ResultsLock:
    """The hold of one batch on its RESULTS file: an ``flock`` on ``RESULTS.lock``
    beside it, for as long as the batch runs. Two batches on one RESULTS would run every
    task twice; the lock goes with its process however it ends (kill -9 too), and no
    turn inherits it (close-on-exec)."""

    def __init__(self, results: str | Path) -> None:
        results = Path(results)
        self.path = results.with_name(results.name + ".lock")
        self._descriptor: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise ResultsBusy (OSError when it cannot be made)."""
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise ResultsBusy("another treadle batch is running with these results") from None
        self._descriptor = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


class ResultsFile:
    """The ResultsLog port on a file: each line flushed and fsynced before ``write``
    returns, so a kill loses no result that was written. A last line torn by an earlier
    kill stays where it is, on a line of its own (a rerun passes over it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] = self.path.open("a", encoding="utf-8")
        if self._file.tell() and not self.path.read_bytes().endswith(b"\n"):
            self._file.write("\n")

    def write(self, result: TaskResult) -> None:
        self.write_all((result,))

    def write_all(self, results: Sequence[TaskResult]) -> None:
        """Every line of ``results``, with one flush and one fsync."""
        self._file.write(
            "".join(json.dumps(result_record(r), ensure_ascii=False) + "\n" for r in results)
        )
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()
