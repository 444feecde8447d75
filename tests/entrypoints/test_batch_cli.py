"""``treadle batch`` as a real process: bad TASKS, Ctrl-C with running and queued turns
on both engines, and a rerun that skips what finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.batch_support import (
    long_turn_script,
    nothing_left,
    quick_turn_script,
    rows,
    setsid_pids,
    write_tasks,
)
from tests.processes import is_running, run_treadle, treadle_env, until

pytestmark = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")


@pytest.fixture
def home(tmp_path: Path):
    env = treadle_env(tmp_path)
    yield env
    assert nothing_left(tmp_path / "state"), "a process of the batch outlived it"


def test_bad_tasks_lines_are_reported_with_their_numbers_and_nothing_runs(tmp_path, home):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"id": "a", "task": "fine"}\n'
        '{"id": "b", "task": "fine", "workspace": "/no/such/folder"}\n'
        "{not json\n"
        '{"id": "a", "task": "again"}\n'
    )
    done = run_treadle("batch", str(tasks), "--model", "demo", cwd=tmp_path, env=home)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    not_json = "not JSON (Expecting property name enclosed in double quotes, column 2)"
    assert f"treadle: {tasks}:3: {not_json}" in lines
    assert f'treadle: {tasks}:4: id "a" is already on line 1' in lines
    assert lines[-1] == "treadle: nothing was run"
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "tasks.results.jsonl").exists()
    assert not (tmp_path / "state" / "sessions").exists()


def test_a_line_s_missing_folder_is_found_before_anything_runs(tmp_path, home):
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": "b", "task": "x", "workspace": "/no/such/folder"}]
    )
    done = run_treadle("batch", str(tasks), "--model", "demo", cwd=tmp_path, env=home)
    assert done.returncode == 2
    assert f"treadle: {tasks}:1: workspace /no/such/folder: no such folder" in done.stderr


def test_an_address_needs_the_ray_engine(tmp_path, home):
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "a", "task": "x"}])
    done = run_treadle(
        "batch", str(tasks), "--engine", "local", "--address", "127.0.0.1:1", cwd=tmp_path, env=home
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip() == "treadle: flag --address: a Ray cluster's address needs --engine ray"
    )


def start_batch(tasks: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "treadle", "batch", str(tasks), "--workers", "2", *extra],
        cwd=tasks.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )


def interrupt_once_running(batch: subprocess.Popen[str], folder: Path, running: int) -> str:
    """Ctrl-C (SIGINT to the batch's process group) once ``running`` long turns run."""
    try:
        if not until(lambda: len(setsid_pids(folder)) == running or batch.poll() is not None, 60):
            batch.kill()
        if batch.poll() is not None:
            raise AssertionError(f"the turns never ran: {batch.communicate()[1][-3000:]}")
        os.killpg(batch.pid, signal.SIGINT)
        _, err = batch.communicate(timeout=60)
    finally:
        batch.kill()
    return err


def ctrl_c_then_rerun(tmp_path: Path, env: dict[str, str], *extra: str) -> None:
    long = long_turn_script(tmp_path)
    quick = quick_turn_script(tmp_path)
    first = [{"id": "q0", "task": "x"}, {"id": "q1", "task": "x"}]
    first += [{"id": f"L{n}", "task": "x", "model": f"script:{long}"} for n in range(4)]
    tasks = write_tasks(tmp_path / "tasks.jsonl", first)
    batch = start_batch(tasks, env, "--model", f"script:{quick}", *extra)
    err = interrupt_once_running(batch, tmp_path, running=2)
    assert batch.returncode == 130, err
    results = tmp_path / "tasks.results.jsonl"
    got = {row["id"]: row for row in rows(results)}
    assert {name: row["outcome"] for name, row in got.items()} == {
        "q0": "finished",
        "q1": "finished",
        "L0": "paused",
        "L1": "paused",
        "L2": "not started",
        "L3": "not started",
    }, err
    for name in ("L0", "L1"):
        last = json.loads(Path(str(got[name]["transcript"])).read_text().splitlines()[-1])
        assert last["outcome"]["kind"] == "paused"
    assert "2 paused, 2 not started" in err.splitlines()[-1]
    assert nothing_left(tmp_path / "state")
    assert not any(is_running(pid) for pid in setsid_pids(tmp_path))

    # The rerun: the same ids, all quick now. Finished ones are skipped, paused ones
    # go on in their sessions, the others start.
    write_tasks(tasks, [{"id": row["id"], "task": "x"} for row in first])
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "treadle",
            "batch",
            str(tasks),
            "--model",
            f"script:{quick}",
            *extra,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "4 finished; 2 skipped, finished before" in again.stderr.splitlines()[-1]
    latest = {row["id"]: row for row in rows(results)}
    assert all(row["outcome"] == "finished" for row in latest.values())
    assert latest["L0"]["session"] == got["L0"]["session"]  # continued, not begun again
    assert latest["L2"]["session"] != ""


@pytest.mark.slow
def test_ctrl_c_pauses_the_running_local_turns_and_a_rerun_skips_the_finished_ones(tmp_path, home):
    ctrl_c_then_rerun(tmp_path, home)


@pytest.mark.slow
def test_on_an_existing_ray_cluster_ctrl_c_pauses_and_a_rerun_skips_the_finished(
    tmp_path, home, ray_head
):
    env = {k: v for k, v in home.items() if not k.startswith("RAY_")}
    env.update(ray_head.env)
    env.update({k: v for k, v in home.items() if k.startswith("TREADLE_")})
    ctrl_c_then_rerun(tmp_path, env, "--address", ray_head.address)


def test_sigterm_stops_a_batch_as_ctrl_c_does(tmp_path, home):
    long = long_turn_script(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": f"L{n}", "task": "x"} for n in range(3)])
    batch = start_batch(tasks, home, "--model", f"script:{long}")
    try:
        assert until(lambda: len(setsid_pids(tmp_path)) == 2, 60)
        batch.send_signal(signal.SIGTERM)
        _, err = batch.communicate(timeout=60)
    finally:
        batch.kill()
    assert batch.returncode == 130, err
    outcomes = sorted(str(row["outcome"]) for row in rows(tmp_path / "tasks.results.jsonl"))
    assert outcomes == ["not started", "paused", "paused"]


RAY_NOTICES_A_DEAD_NODE_SOON = {
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "2",
}
"""Ray's own health checks, every half second: by default Ray takes some 12 s to call
its raylet dead, time the test only waits."""


@pytest.mark.slow
def test_turns_given_to_a_dead_ray_instance_are_not_started_and_a_rerun_runs_them(tmp_path, home):
    quick = quick_turn_script(tmp_path, seconds=3.0)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": f"t{n}", "task": "x"} for n in range(3)])
    command = [sys.executable, "-m", "treadle", "batch", str(tasks), "--engine", "ray"]
    command += ["--workers", "1", "--model", f"script:{quick}"]
    home = {**home, **RAY_NOTICES_A_DEAD_NODE_SOON}
    batch = subprocess.Popen(
        command, cwd=tmp_path, env=home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sessions = tmp_path / "state" / "sessions"
    try:
        assert until(lambda: sessions.is_dir() and any(sessions.iterdir()), 90)
        (raylet,) = raylets_of(batch.pid)
        os.kill(raylet, signal.SIGKILL)  # the cluster dies with t0 running
        _, err = batch.communicate(timeout=120)
    finally:
        batch.kill()
    got = {row["id"]: row for row in rows(tmp_path / "tasks.results.jsonl")}
    for name in ("t1", "t2"):
        assert got[name]["outcome"] == "not started", err
        assert got[name]["session"] == "" and "before the turn began" in str(got[name]["detail"])
    assert len(list(sessions.iterdir())) == 1  # only t0's session ever was
    quick_turn_script(tmp_path)  # the same script, answering at once now
    again = subprocess.run(command, cwd=tmp_path, env=home, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    latest = {row["id"]: row for row in rows(tmp_path / "tasks.results.jsonl")}
    assert [latest[f"t{n}"]["outcome"] for n in range(3)] == ["finished"] * 3, again.stderr


def raylets_of(batch: int) -> list[int]:
    """The raylet of the private Ray instance the batch ``batch`` started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        parent = int(stat[stat.rfind(b")") + 2 :].split()[1])
        if comm == "raylet" and parent == batch:
            found.append(int(entry))
    return found


def descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rfind(b")") + 2 :].split()[1])
    found, stack = set(), [pid]
    while stack:
        parent = stack.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found.add(child)
                stack.append(child)
    return found


@pytest.mark.slow
def test_kill_9_of_a_ray_batch_leaves_nothing_of_its_private_instance(tmp_path, home):
    long = long_turn_script(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": f"L{n}", "task": "x"} for n in range(3)])
    batch = start_batch(tasks, home, "--engine", "ray", "--model", f"script:{long}")
    try:
        assert until(lambda: len(setsid_pids(tmp_path)) == 2, 90), batch.poll()
        instance = descendants(batch.pid)
        names = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in instance}
        assert {"raylet", "ray::DashboardA", "ray::RuntimeEnv"} <= names, names
        batch.kill()
        batch.wait(10)
    finally:
        batch.kill()
    # Ray kills its raylet with its parent: the agents are init's before the watchdog
    # looks, and their retitled command lines no longer show treadle's marker.
    assert until(lambda: not any(is_running(pid) for pid in instance), 10), [
        Path(f"/proc/{pid}/comm").read_text().strip() for pid in instance if is_running(pid)
    ]


def test_kill_9_of_a_local_batch_leaves_neither_its_turns_nor_those_started_ahead(tmp_path, home):
    long = long_turn_script(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": f"L{n}", "task": "x"} for n in range(5)])
    batch = start_batch(tasks, home, "--model", f"script:{long}")
    try:
        assert until(lambda: len(setsid_pids(tmp_path)) == 2, 60), batch.poll()
        waiting = [
            pid
            for pid in descendants(batch.pid)
            if b"batch_turn" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]
        assert waiting  # the next turns' processes, started ahead
        batch.kill()
        batch.wait(10)
    finally:
        batch.kill()
    assert nothing_left(tmp_path / "state")
    left = [*waiting, *setsid_pids(tmp_path)]
    # The watchdog looks four times a second: give it a few looks, not a fixed sleep.
    assert until(lambda: not any(is_running(pid) for pid in left), 5), left
