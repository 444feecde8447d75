"""RESULTS on disk and the batch on stderr: what a person and a script read."""

from __future__ import annotations

import io
import json
from contextlib import closing
from dataclasses import replace
from pathlib import Path

from treadle.adapters.batch.results_file import ResultsFile, read_lines
from treadle.adapters.batch.screen import (
    CLEAR_LINE,
    StderrBatchScreen,
    clock_text,
    progress_line,
    result_line,
    summary_lines,
)
from treadle.domain.values.batch import Progress, TaskOutcome, TaskResult

FINISHED = TaskResult(
    "fix-1",
    TaskOutcome.FINISHED,
    0,
    "Turn finished",
    "/s/t.jsonl",
    "s1",
    3,
    {"input": 1200, "output": 40},
    41.25,
    "local:1",
)
FAILED = TaskResult(
    "fix-2", TaskOutcome.FAILED, 1, "Turn failed: HttpError: \x1b[31m500\x1b[0m", seconds=2.0
)
FIGURES = Progress(
    total=20, ended=7, running=2, queued=11, failed=1, skipped=3, elapsed=12.4, left=20.0
)


def test_a_result_line_has_every_field_in_order_and_is_on_disk_at_once(tmp_path: Path):
    path = tmp_path / "results.jsonl"
    results = ResultsFile(path)
    results.write(FINISHED)
    line = json.loads(path.read_text())  # before close: written and flushed already
    results.close()
    assert list(line) == [
        "id",
        "outcome",
        "exit_code",
        "detail",
        "transcript",
        "session",
        "requests",
        "tokens",
        "seconds",
        "worker",
        "cost",
        "value",
    ]
    assert line["tokens"] == {
        "input": 1200,
        "output": 40,
        "cache_read": 0,
        "cache_write": 0,
        "reasoning": 0,
    }
    assert line["seconds"] == 41.25


def test_a_turn_that_reported_no_tokens_counts_every_kind_at_zero(tmp_path: Path):
    path = tmp_path / "results.jsonl"
    with closing(ResultsFile(path)) as results:
        results.write(replace(FINISHED, outcome=TaskOutcome.NOT_STARTED, tokens={}, requests=0))
    line = json.loads(path.read_text())
    assert line["tokens"] == dict.fromkeys(
        ["input", "output", "cache_read", "cache_write", "reasoning"], 0
    )


def test_results_are_appended_after_a_line_torn_by_a_kill(tmp_path: Path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "a", "outcome": "finished"}\n{"id": "b", "outc')
    results = ResultsFile(path)
    results.write(FAILED)
    results.close()
    lines = read_lines(path)
    assert lines[1] == '{"id": "b", "outc'
    assert json.loads(lines[2])["id"] == "fix-2"


def test_an_absent_results_file_has_no_lines(tmp_path: Path):
    assert read_lines(tmp_path / "none.jsonl") == []


def test_times_read_as_a_clock():
    assert [clock_text(s) for s in (0, 7.4, 61, 3723)] == ["0:00", "0:07", "1:01", "1:02:03"]


def test_the_progress_line_has_the_counts_the_time_and_what_is_left():
    assert progress_line(FIGURES) == (
        "batch: 7/20 done · 2 running · 1 failed · 0:12 elapsed · about 0:20 left"
    )


def test_an_ended_turn_is_one_line_with_no_escape_code_from_the_turn():
    assert result_line(FINISHED, FIGURES) == "[7/20] fix-1 finished · exit 0 · 41.2 s · local:1"
    assert result_line(FAILED, FIGURES) == (
        "[7/20] fix-2 failed · exit 1 · 2.0 s — Turn failed: HttpError: 500"
    )


def test_the_summary_is_a_table_then_the_counts():
    lines = summary_lines([FINISHED, FAILED], FIGURES, "out.jsonl")
    assert lines[0].split() == [
        "ID",
        "OUTCOME",
        "EXIT",
        "REQUESTS",
        "TOKENS",
        "SECONDS",
        "WORKER",
        "DETAIL",
    ]
    assert lines[1].split()[:6] == ["fix-1", "finished", "0", "3", "1,240", "41.2"]
    assert lines[2].endswith("Turn failed: HttpError: 500")
    assert lines[-1] == (
        "batch: 2 turns: 1 finished, 1 failed; 3 skipped, finished before · 0:12 "
        "· results in out.jsonl"
    )


def test_in_a_pipe_each_ended_turn_is_a_plain_line_and_progress_draws_nothing():
    out = io.StringIO()
    screen = StderrBatchScreen(out, live=False)
    screen.progress(FIGURES)
    screen.ended(FINISHED, FIGURES)
    screen.note("stopping")
    assert out.getvalue() == (
        "[7/20] fix-1 finished · exit 0 · 41.2 s · local:1\nbatch: stopping\n"
    )


def test_in_a_terminal_the_progress_line_is_redrawn_in_place_under_the_ended_turns():
    out = io.StringIO()
    screen = StderrBatchScreen(out, live=True)
    screen.progress(FIGURES)
    screen.ended(FINISHED, FIGURES)
    screen.summary([FINISHED], FIGURES)
    text = out.getvalue()
    assert text.startswith(CLEAR_LINE + "batch: 7/20 done")
    assert CLEAR_LINE + "[7/20] fix-1 finished" in text
    assert text.endswith("· 0:12\n")
    assert "\n" not in text.split(CLEAR_LINE)[1]  # the live line is never ended by a newline


def test_a_screen_nobody_reads_any_more_does_not_stop_the_batch():
    out = io.StringIO()
    out.close()
    StderrBatchScreen(out, live=False).ended(FINISHED, FIGURES)
