"""Reading TASKS and RESULTS, and planning a batch: pure functions of lines and values."""

from __future__ import annotations

import doctest
import json

import pytest
from returns.result import Failure, Success

from treadle.domain.rules import batch, batch_plan, turn_report
from treadle.domain.rules.batch_plan import (
    TurnDefaults,
    by_line,
    latest_results,
    parse_tasks,
    plan_batch,
    read_task_lines,
    shared_workspaces,
)
from treadle.domain.values.batch import BatchTask, TurnOrder


def line(**fields: object) -> str:
    return json.dumps(fields)


def problems(*lines: str) -> tuple[str, ...]:
    result = parse_tasks(lines)
    assert isinstance(result, Failure), result
    found: tuple[str, ...] = result.failure()
    return found


@pytest.mark.parametrize("module", [batch, batch_plan, turn_report])
def test_the_examples_in_the_batch_rules_hold(module):
    assert doctest.testmod(module).failed == 0


def test_the_good_lines_are_kept_beside_the_problems_of_the_bad_ones():
    tasks, found = read_task_lines(["{bad", line(id="a", task="x", workspace="/w")])
    assert tasks == (BatchTask("a", "x", line=2, workspace="/w"),)
    assert found == (
        "line 1: not JSON (Expecting property name enclosed in double quotes, column 2)",
    )


def test_problems_are_put_in_the_order_of_their_lines():
    found = ["line 10: b", "line 2: a", "line 10: c", "line 1: z"]
    assert by_line(found) == ("line 1: z", "line 2: a", "line 10: b", "line 10: c")


def test_every_field_of_a_task_line_is_read():
    parsed = parse_tasks(
        [line(id="a", task="fix it", workspace="/src/a", model="demo", resume="s-1"), ""]
    )
    assert parsed == Success(
        (BatchTask("a", "fix it", line=1, workspace="/src/a", model="demo", resume="s-1"),)
    )


def test_blank_lines_are_skipped_and_numbers_count_every_line():
    parsed = parse_tasks(["", line(id="a", task="x"), "   ", line(id=7, task="y")])
    assert isinstance(parsed, Success)
    assert [(t.id, t.line) for t in parsed.unwrap()] == [("a", 2), ("7", 4)]


def test_a_line_that_is_not_json_is_reported_with_its_number():
    assert problems(line(id="a", task="x"), "{oops") == (
        "line 2: not JSON (Expecting property name enclosed in double quotes, column 2)",
    )


def test_every_bad_line_is_reported_not_only_the_first():
    found = problems(
        "[1, 2]",
        line(task="no id"),
        line(id="", task="x"),
        line(id="b"),
        line(id="c", task=3),
        line(id="d", task="x", worksapce="/w"),
        line(id="e", task="x", model=""),
    )
    assert found == (
        'line 1: a task is a JSON object, e.g. {"id": "fix-1", "task": "fix the test"}',
        'line 2: "id" is missing',
        'line 3: "id" must be a non-empty string, not ""',
        'line 4: "task" is missing (only a line with "resume" may leave it out)',
        'line 5: "task" must be a string, not 3',
        'line 6: unknown field "worksapce" (the fields: id, task, workspace, model, resume, '
        "max_cost, max_tokens_total, max_requests, max_time, output_schema, "
        "sandbox_network)",
        'line 7: "model" must be a non-empty string, not ""',
    )


def test_a_repeated_id_names_the_line_that_had_it_first():
    assert problems(line(id="a", task="x"), line(id="b", task="y"), line(id="a", task="z")) == (
        'line 3: id "a" is already on line 1',
    )


def test_a_line_that_continues_a_session_may_leave_out_its_task():
    parsed = parse_tasks([line(id="a", resume="s-1")])
    assert parsed == Success((BatchTask("a", "", line=1, resume="s-1"),))


def test_the_last_result_of_an_id_wins_and_a_torn_line_is_passed_over():
    rows = latest_results(
        [
            line(id="a", outcome="paused", session="s-a"),
            line(id="b", outcome="finished"),
            line(id="a", outcome="finished"),
            "not json",
            '["a list"]',
            '{"id": "c", "outco',
        ]
    )
    assert {key: row["outcome"] for key, row in rows.items()} == {"a": "finished", "b": "finished"}


DEFAULTS = TurnDefaults(
    workspace="/here", model="demo", base_url="http://127.0.0.1:1/v1", approval="auto"
)


def plan(tasks, previous=None, **options):
    names = iter(f"new-{n}" for n in range(100))
    return plan_batch(
        tasks,
        previous or {},
        DEFAULTS,
        new_session=lambda task: next(names),
        transcript_of=lambda session: f"/state/{session}/transcript.jsonl",
        **options,
    )


def test_a_new_task_gets_a_new_session_and_the_batch_defaults():
    order = plan([BatchTask("a", "fix it")]).orders[0]
    assert order == TurnOrder(
        "a",
        "fix it",
        "new-0",
        "/here",
        resuming=False,
        model="demo",
        base_url="http://127.0.0.1:1/v1",
        approval="auto",
        transcript="/state/new-0/transcript.jsonl",
    )


def test_a_line_s_own_workspace_and_model_win_over_the_defaults():
    order = plan([BatchTask("a", "x", workspace="/src/a", model="openai:gpt-4.1")]).orders[0]
    assert (order.workspace, order.model) == ("/src/a", "openai:gpt-4.1")


def test_a_line_with_resume_continues_that_session_with_its_task_as_the_next_message():
    order = plan([BatchTask("a", "now the docs", resume="s-old")]).orders[0]
    assert (order.session, order.resuming, order.task) == ("s-old", True, "now the docs")


def test_a_rerun_skips_finished_ids_and_continues_paused_and_lost_ones():
    previous = {
        "done": {"outcome": "finished", "session": "s-done"},
        "cut": {"outcome": "paused", "session": "s-cut"},
        "gone": {"outcome": "lost", "session": "s-gone"},
        "bad": {"outcome": "failed", "session": "s-bad"},
        "never": {"outcome": "not started", "session": ""},
    }
    tasks = [BatchTask(name, f"task {name}") for name in previous]
    planned = plan(tasks, previous)
    assert planned.skipped == ("done",)
    assert [(o.id, o.session, o.resuming, o.task) for o in planned.orders] == [
        ("cut", "s-cut", True, ""),
        ("gone", "s-gone", True, ""),
        ("bad", "new-0", False, "task bad"),
        ("never", "new-1", False, "task never"),
    ]


def test_a_continuation_that_was_not_started_is_continued_by_the_next_run():
    # Run 1 paused it; run 2 was stopped before it began; run 3 goes on from run 1.
    previous = {"a": {"outcome": "not started", "session": "s-run1"}}
    order = plan([BatchTask("a", "fix it")], previous).orders[0]
    assert (order.session, order.resuming, order.task) == ("s-run1", True, "")


def test_a_resume_line_that_was_not_started_runs_as_its_line_says():
    previous = {"a": {"outcome": "not started", "session": "s-old"}}
    order = plan([BatchTask("a", "next", resume="s-old")], previous).orders[0]
    assert (order.session, order.resuming, order.task) == ("s-old", True, "next")


def test_redo_runs_every_task_as_its_line_says_whatever_came_before():
    previous = {"a": {"outcome": "finished"}, "b": {"outcome": "paused", "session": "s-b"}}
    planned = plan([BatchTask("a", "x"), BatchTask("b", "y")], previous, redo=True)
    assert planned.skipped == ()
    assert [(o.session, o.resuming) for o in planned.orders] == [("new-0", False), ("new-1", False)]


def test_folders_that_more_than_one_turn_works_in_are_found():
    orders = [TurnOrder(name, "", "s", folder) for name, folder in [("a", "/w"), ("b", "/x")]]
    assert shared_workspaces(orders) == {}
    assert shared_workspaces([*orders, TurnOrder("c", "", "s", "/x")]) == {"/x": 2}


def test_a_line_s_own_limits_are_numbers_or_strings() -> None:
    from treadle.domain.rules.batch_plan import parse_tasks

    good = parse_tasks(['{"id": "a", "task": "x", "max_cost": 0.5, "max_time": "10m"}']).unwrap()
    assert good[0].flags == (("max_cost", "0.5"), ("max_time", "10m"))
    bad = parse_tasks(['{"id": "a", "task": "x", "max_requests": true}']).failure()
    assert bad == ('line 1: "max_requests" must be a number or a string, not true',)
