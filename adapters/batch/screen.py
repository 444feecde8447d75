"""A batch on stderr: a live progress line in a terminal, plain lines otherwise, and a
summary table at the end.

In a terminal the last line is redrawn in place (``7/20 done · 2 running · 1 failed ·
0:12 elapsed · about 0:20 left``) and each turn that ends gets a line above it; in a
pipe or a log every turn that ends is one plain line, with no escape code. Text from
turns (their last lines) is stripped of control characters either way.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from typing import TextIO

from treadle.adapters.terminal.plain_terminal import counted
from treadle.domain.values.batch import OUTCOMES, Progress, TaskResult
from treadle.domain.values.text import one_line

CLEAR_LINE = "\r\x1b[K"


def clock_text(seconds: float) -> str:
    """``0:07``, ``12:30``, ``1:02:03``."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def progress_line(figures: Progress) -> str:
    """The live line: done / running / failed counts, time spent and an estimate."""
    parts = [
        f"{figures.ended}/{figures.total} done",
        f"{figures.running} running",
        f"{figures.failed} failed",
        f"{clock_text(figures.elapsed)} elapsed",
    ]
    if figures.left is not None and figures.running + figures.queued:
        parts.append(f"about {clock_text(figures.left)} left")
    return "batch: " + " · ".join(parts)


def result_line(result: TaskResult, figures: Progress) -> str:
    """One ended turn: ``[3/20] fix-1 finished · exit 0 · 41.2 s · local:1``."""
    exit_code = "" if result.exit_code is None else f" · exit {result.exit_code}"
    where = f" · {result.worker}" if result.worker else ""
    detail = f" — {one_line(result.detail, 120)}" if result.detail and not result.finished else ""
    return (
        f"[{figures.ended}/{figures.total}] {one_line(result.id, 60)} {result.outcome.value}"
        f"{exit_code} · {result.seconds:.1f} s{where}{detail}"
    )


def tokens_in_all(result: TaskResult) -> int:
    """Input and output: the cache kinds are parts of the input, reasoning of the output."""
    return result.tokens.get("input", 0) + result.tokens.get("output", 0)


def summary_lines(
    results: Sequence[TaskResult], figures: Progress, results_path: str = ""
) -> list[str]:
    """The table of this run's tasks, then the counts by outcome."""
    header = ("ID", "OUTCOME", "EXIT", "REQUESTS", "TOKENS", "SECONDS", "WORKER", "DETAIL")
    rows = [header] + [
        (
            one_line(result.id, 40),
            result.outcome.value,
            "" if result.exit_code is None else str(result.exit_code),
            str(result.requests),
            f"{tokens_in_all(result):,}",
            f"{result.seconds:.1f}",
            result.worker,
            "" if result.finished else one_line(result.detail, 60),
        )
        for result in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    right = {2, 3, 4, 5}
    lines = [
        "  ".join(
            [
                *(
                    cell.rjust(w) if i in right else cell.ljust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=False))
                ),
                row[-1],
            ]
        ).rstrip()
        for row in rows
    ]
    counts = [
        f"{sum(1 for r in results if r.outcome is outcome)} {outcome.value}"
        for outcome in OUTCOMES
        if any(r.outcome is outcome for r in results)
    ]
    total = f"batch: {counted(len(results), 'turn')}" + (f": {', '.join(counts)}" if counts else "")
    if figures.skipped:
        total += f"; {figures.skipped} skipped, finished before"
    total += f" · {clock_text(figures.elapsed)}"
    if results_path:
        total += f" · results in {results_path}"
    return [*lines, total] if results else [total]


class StderrBatchScreen:
    """The BatchScreen port on a text stream (stderr). ``live`` (default: whether the
    stream is a terminal) keeps one progress line redrawn in place."""

    def __init__(
        self, out: TextIO | None = None, *, live: bool | None = None, results_path: str = ""
    ) -> None:
        self._out = out or sys.stderr
        self.live = self._out.isatty() if live is None else live
        self.results_path = results_path
        self._shown = ""

    def progress(self, figures: Progress) -> None:
        if self.live:
            self._draw(progress_line(figures))

    def ended(self, result: TaskResult, figures: Progress) -> None:
        self._lines([result_line(result, figures)])
        self.progress(figures)

    def note(self, text: str) -> None:
        self._lines([f"batch: {one_line(text, 200)}"])

    def summary(self, results: Sequence[TaskResult], figures: Progress) -> None:
        self._lines(summary_lines(results, figures, self.results_path))

    def _draw(self, line: str) -> None:
        width = shutil.get_terminal_size((100, 24)).columns
        self._shown = line[: max(10, width - 1)]
        self._write(CLEAR_LINE + self._shown)

    def _lines(self, lines: Sequence[str]) -> None:
        prefix = CLEAR_LINE if self.live and self._shown else ""
        self._shown = ""
        self._write(prefix + "".join(line + "\n" for line in lines))

    def _write(self, text: str) -> None:
        try:
            self._out.write(text)
            self._out.flush()
        except (BrokenPipeError, ValueError):  # nobody reads any more: the batch goes on
            pass
