"""``treadle batch`` in this process: what is checked before anything runs, the plan it
makes, and the container's engine overridden by the fake one."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from tests.batch_support import quick_turn_script, rows, write_tasks
from treadle.adapters.fakes import FakeClock
from treadle.adapters.fakes.batch import FakeEngine, FakeTurn
from treadle.domain.values.batch import TaskOutcome
from treadle.entrypoints.batch import build_parser, default_results, drive, prepare, turn_settings
from treadle.entrypoints.batch_wiring import BatchOptions
from treadle.entrypoints.cli import main
from treadle.entrypoints.config import ConfigError
from treadle.entrypoints.container import Container
from treadle.entrypoints.injector import providers


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("TREADLE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "state"


def plan_for(*argv: str):
    return prepare(build_parser().parse_args(list(argv)))


def test_the_plan_gives_every_turn_the_batch_s_flags_and_its_state_folder(tmp_path, state):
    (tmp_path / "a").mkdir()
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "one", "task": "x", "workspace": "a"}, {"id": 2, "task": "y", "model": "demo"}],
    )
    options, plan = plan_for(
        str(tasks), "--model", "script:s.json", "--approval", "read-only", "--sandbox", "off"
    )
    assert options == BatchOptions("local", 2, "", str(tmp_path / "tasks.results.jsonl"))
    one, two = plan.orders
    assert (one.workspace, one.model, one.approval) == (
        str(tmp_path / "a"),
        "script:s.json",
        "read-only",
    )
    assert (two.id, two.workspace, two.model, two.sandbox) == ("2", str(tmp_path), "demo", "off")
    assert ("TREADLE_STATE_DIR", str(state)) in one.environment
    assert one.transcript == str(state / "sessions" / one.session / "transcript.jsonl")
    assert one.session != two.session


def test_an_address_means_ray_and_folders_are_not_checked_here(tmp_path):
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "a", "task": "x", "workspace": "/on/node"}])
    options, plan = plan_for(str(tasks), "--address", "10.0.0.5:6379", "--out", "r.jsonl")
    assert (options.engine, options.address, options.results_path) == (
        "ray",
        "10.0.0.5:6379",
        "r.jsonl",
    )
    assert plan.orders[0].workspace == "/on/node"


@pytest.mark.parametrize(
    ("rows_", "expected"),
    [
        ([{"id": "a", "task": "x", "model": "nope:x:y"}], "t.jsonl:1: model: unknown model"),
        ([{"id": "a", "resume": "no-such-session"}], "t.jsonl:1: resume: no session"),
        (
            [{"id": "a", "resume": "s"}, {"id": "b", "resume": "s"}],
            "t.jsonl:2: resume: session s is continued on line 1 too",
        ),
    ],
)
def test_what_a_line_names_is_checked_before_anything_runs(tmp_path, state, rows_, expected):
    (state / "sessions" / "s").mkdir(parents=True)
    (state / "sessions" / "s" / "transcript.jsonl").write_text("")
    tasks = write_tasks(tmp_path / "t.jsonl", rows_)
    with pytest.raises(ConfigError) as problem:
        plan_for(str(tasks))
    assert expected in str(problem.value)
    assert str(problem.value).endswith("nothing was run")


def test_every_bad_line_is_in_one_report_whatever_is_wrong_with_it(tmp_path):
    # A line that is not JSON does not hide the missing folder and the unknown model of
    # the lines after it: one report, in the order of the lines, names them all.
    (tmp_path / "t.jsonl").write_text(
        "not json\n"
        + json.dumps({"id": "a", "task": "x", "workspace": str(tmp_path / "gone")})
        + "\n"
        + json.dumps({"id": "b", "task": "x", "extra": 1})
        + "\n"
        + json.dumps({"id": "c", "task": "x", "model": "nope:x:y"})
        + "\n"
    )
    with pytest.raises(ConfigError) as problem:
        plan_for(str(tmp_path / "t.jsonl"))
    lines = str(problem.value).splitlines()
    assert [line.split(":")[1] for line in lines[:-1]] == ["1", "2", "3", "4"], lines
    assert "no such folder" in lines[1] and "unknown model" in lines[3]
    assert lines[-1] == "nothing was run"


def test_a_line_that_is_not_utf8_is_named_with_the_others_and_a_json_line_break_is_none(
    tmp_path,
):
    good = json.dumps({"id": "a", "task": "line\u2028separator"}, ensure_ascii=False)
    (tmp_path / "t.jsonl").write_bytes(
        good.encode() + b"\n" + b'{"id": "b", "task": "\xff"}\n' + b'{"id": "c"}\n'
    )
    with pytest.raises(ConfigError) as problem:
        plan_for(str(tmp_path / "t.jsonl"))
    lines = str(problem.value).splitlines()
    assert [line.split(":")[1] for line in lines[:-1]] == ["2", "3"], lines
    assert "not UTF-8 (byte 0xff at column 22)" in lines[0]


def test_a_missing_or_empty_tasks_file_is_one_clear_line(tmp_path, capsys):
    assert main(["batch", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: cannot be read: No such file or directory" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("\n")
    assert main(["batch", str(tmp_path / "empty.jsonl")]) == 2
    assert "empty.jsonl: no tasks in it" in capsys.readouterr().err


def test_many_bad_lines_are_cut_to_the_first_twenty(tmp_path):
    (tmp_path / "t.jsonl").write_text("{bad\n" * 25)
    with pytest.raises(ConfigError) as problem:
        plan_for(str(tmp_path / "t.jsonl"))
    lines = str(problem.value).splitlines()
    assert len(lines) == 22 and "… and 5 more problems" in lines[-2]


def test_the_results_file_sits_beside_the_tasks_file():
    assert default_results(Path("/x/evals.jsonl")) == Path("/x/evals.results.jsonl")


def test_turns_get_the_batch_s_treadle_settings_but_not_the_markers_of_its_own_runs(tmp_path):
    environ = {"TREADLE_LOG": "debug", "TREADLE_RUN_abc": "1", "HOME": "/h", "OPENAI_API_KEY": "k"}
    assert turn_settings(environ, tmp_path) == (
        ("TREADLE_LOG", "debug"),
        ("TREADLE_STATE_DIR", str(tmp_path)),
    )


async def test_the_container_s_engine_runs_the_plan_and_results_are_written(tmp_path):
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": f"t{n}", "task": "x"} for n in range(3)])
    options, plan = plan_for(str(tasks), "--workers", "3")
    container = Container()
    clock = FakeClock()
    engine = FakeEngine(clock, {"t1": FakeTurn(TaskOutcome.BLOCKED)})
    container.batch_options.override(providers.Object(options))
    container.clock.override(providers.Object(clock))
    container.turn_engine.override(providers.Object(engine))
    try:
        assert await drive(container, options, plan) == 1
    finally:
        container.shutdown_resources()
    assert {row["id"]: row["outcome"] for row in rows(Path(options.results_path))} == {
        "t0": "finished",
        "t1": "blocked",
        "t2": "finished",
    }
    assert engine.most_running == 3 and engine.closed


async def test_an_engine_that_cannot_start_exits_2_and_says_why(tmp_path, capsys):
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "a", "task": "x"}])
    options, plan = plan_for(str(tasks), "--engine", "ray")
    container = Container()
    container.batch_options.override(providers.Object(options))
    engine = FakeEngine(
        FakeClock(), start_error="--engine ray needs Ray: pip install 'treadle[ray]'"
    )
    container.turn_engine.override(providers.Object(engine))
    try:
        assert await drive(container, options, plan) == 2
    finally:
        container.shutdown_resources()
    assert "treadle: --engine ray needs Ray" in capsys.readouterr().err
    assert rows(Path(options.results_path)) == []


def test_a_second_batch_on_the_same_results_is_refused_in_one_line_and_runs_nothing(
    tmp_path, state, capsys
):
    script = quick_turn_script(tmp_path)
    tasks = write_tasks(tmp_path / "t.jsonl", [{"id": "a", "task": "x"}])
    results = tmp_path / "t.results.jsonl"
    # The first batch holds an flock beside RESULTS for as long as it runs.
    descriptor = os.open(tmp_path / "t.results.jsonl.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(["batch", str(tasks), "--model", f"script:{script}"]) == 2
        err = capsys.readouterr().err
        assert err == f"treadle: {results}: another treadle batch is running with these results\n"
        assert not results.exists() and not (state / "sessions").exists()
    finally:
        os.close(descriptor)
    assert main(["batch", str(tasks), "--model", f"script:{script}"]) == 0
    assert [row["outcome"] for row in rows(results)] == ["finished"]


def test_a_session_id_for_a_new_session_is_checked(tmp_path, state, capsys):
    assert main(["--session-id", "../escape", "--model", "demo", "--print", "x"]) == 2
    assert "is not a session id" in capsys.readouterr().err
    (state / "sessions" / "taken").mkdir(parents=True)
    assert main(["--session-id", "taken", "--model", "demo", "--print", "x"]) == 2
    assert "session taken exists already" in capsys.readouterr().err
    assert main(["--session-id", "s", "--resume", "taken", "--print", "x"]) == 2
    assert "give one" in capsys.readouterr().err


def test_a_turn_runs_in_the_session_its_id_names(tmp_path, state):
    script = quick_turn_script(tmp_path)
    assert main(["--session-id", "chosen-1", "--model", f"script:{script}", "--json", "go"]) == 0
    meta = json.loads((state / "sessions" / "chosen-1" / "meta.json").read_text())
    assert meta["id"] == "chosen-1"


README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(after: str, language: str = "json") -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(after)
    block = text[text.index(f"```{language}\n", start) + len(language) + 4 :]
    return block[: block.index("```")].splitlines()


def test_the_readme_s_tasks_example_is_valid_tasks():
    from treadle.domain.rules.batch_plan import parse_tasks

    lines = readme_block("**TASKS** is JSON Lines")
    assert len(parse_tasks(lines).unwrap()) == len(lines) == 3


def test_the_readme_s_results_example_has_the_fields_results_get():
    from treadle.adapters.batch.results_file import result_record
    from treadle.domain.values.batch import TaskResult

    (line,) = readme_block("**RESULTS** gets one JSON line")
    assert list(json.loads(line)) == list(result_record(TaskResult("a", TaskOutcome.FINISHED)))


def test_a_task_line_sets_its_own_limits_over_the_batch_s(tmp_path):
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "a", "task": "x", "max_requests": 3, "output_schema": "a.json"},
            {"id": "b", "task": "y"},
        ],
    )
    _, plan = plan_for(str(tasks), "--model", "demo", "--max-requests", "9", "--max-time", "10m")
    a, b = plan.orders
    assert a.flags == (("max_requests", "3"), ("max_time", "10m"), ("output_schema", "a.json"))
    assert b.flags == (("max_requests", "9"), ("max_time", "10m"))


def test_a_bad_limit_of_the_batch_is_refused_before_anything_runs(tmp_path):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "task": "x"}])
    with pytest.raises(ConfigError, match="flag --max-cost: max_cost: the prices of demo"):
        plan_for(str(tasks), "--model", "demo", "--max-cost", "1")


def test_batch_network_goes_to_every_turn_and_a_task_line_sets_its_own(tmp_path):
    from treadle.adapters.batch.turn_process import turn_command
    from treadle.entrypoints.cli import build_parser as turn_parser

    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "a", "task": "x", "sandbox_network": "allowlist"}, {"id": "b", "task": "y"}],
    )
    _, plan = plan_for(str(tasks), "--model", "demo", "--network", "off")
    a, b = plan.orders
    assert a.flags == (("sandbox_network", "allowlist"),)
    assert b.flags == (("sandbox_network", "off"),)
    argv = turn_command(b, "python")
    assert argv[argv.index("--network") + 1] == "off"
    # The turn's own command line takes what the batch wrote.
    assert turn_parser().parse_args(argv[3:]).sandbox_network == "off"


def test_a_task_line_s_unknown_network_is_refused_with_its_line(tmp_path):
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "a", "task": "x"}, {"id": "b", "task": "y", "sandbox_network": "closed"}],
    )
    with pytest.raises(ConfigError, match=r"tasks.jsonl:2: sandbox_network: .*closed"):
        plan_for(str(tasks), "--model", "demo")


def test_the_batch_s_network_flag_takes_only_the_modes(capsys):
    with pytest.raises(SystemExit) as leaving:
        build_parser().parse_args(["tasks.jsonl", "--network", "closed"])
    assert leaving.value.code == 2
