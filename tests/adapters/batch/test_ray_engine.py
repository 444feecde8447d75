"""The Ray engine for real, on the session's private Ray instance on 127.0.0.1: a worker
killed mid-turn, a forced cancel, a cluster it cannot reach. What every engine does is
in test_engine_contract."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from returns.result import Failure, Success

from tests.batch_support import (
    by_id,
    carrying,
    long_turn_script,
    nothing_left,
    quick_turn_script,
    run_batch,
    setsid_pids,
    turn_process,
    wait_for,
)
from tests.processes import is_running
from treadle.adapters.batch import ray_engine
from treadle.adapters.batch.ray_engine import RayEngine
from treadle.adapters.batch.ray_instance import (
    GCS_WAIT,
    NEEDS_RAY,
    LocalRayInstance,
    RayCluster,
)
from treadle.adapters.system_clock import SystemClock

pytestmark = [
    pytest.mark.slow,
    # The Ray tests share the one private instance: on one pytest-xdist worker.
    pytest.mark.xdist_group("ray"),
    pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc"),
]


def engine_on(instance: object) -> RayEngine:
    assert isinstance(instance, LocalRayInstance)
    return RayEngine(SystemClock(), workers=2, instance=instance)


def parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


async def test_a_ray_worker_killed_mid_turn_is_reported_lost_and_the_others_go_on(
    ray_instance, place, tmp_path
):
    out = tmp_path / "results.jsonl"
    long = long_turn_script(place.root)
    quick = quick_turn_script(place.root, seconds=0.2)
    orders = [place.order("victim", model=f"script:{long}")]
    orders += [place.order(f"q{n}", model=f"script:{quick}") for n in range(3)]
    killed: list[int] = []

    async def kill_its_worker(run) -> None:
        await wait_for(lambda: len(setsid_pids(place.root)) == 1)
        turn = turn_process(place.state, "batch-victim")
        assert turn is not None
        killed.append(parent_of(turn))  # the Ray worker running the task
        os.kill(killed[0], signal.SIGKILL)

    assert await run_batch(engine_on(ray_instance), orders, out, during=kill_its_worker) == Success(
        1
    )
    got = by_id(out)
    assert got["victim"]["outcome"] == "lost"
    assert "WorkerCrashedError" in str(got["victim"]["detail"])
    assert got["victim"]["requests"] == 1  # what its transcript kept
    assert [got[f"q{n}"]["outcome"] for n in range(3)] == ["finished"] * 3
    # Its turn, and the grandchild that left the turn's group, went with the worker.
    assert nothing_left(place.state)
    assert not any(is_running(pid) for pid in setsid_pids(place.root))


async def test_a_force_cancelled_ray_task_leaves_nothing_of_its_turn_running(
    ray_instance, place, tmp_path
):
    """Ray's force cancel kills the worker only; the worker's watchdog takes the rest,
    the grandchild that left the group included."""
    script = long_turn_script(place.root)
    engine = engine_on(ray_instance)
    assert await engine.start() == Success(None)
    job = asyncio.ensure_future(engine.run(place.order("f", model=f"script:{script}")))
    await wait_for(lambda: len(setsid_pids(place.root)) == 1)
    engine.kill()
    result = await job
    assert result.outcome == "paused"
    assert result.detail.startswith("its Ray worker was killed before the turn paused")
    assert nothing_left(place.state)
    await engine.close()


def started_ahead(state: Path) -> set[int]:
    """The turn processes of this test's batch that were started ahead of their turn."""
    found = set()
    for pid in carrying("TREADLE_STATE_DIR", str(state)):
        try:
            if b"treadle.entrypoints.batch_turn" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.add(pid)
        except OSError:
            continue
    return found


async def test_a_ray_worker_starts_its_next_turn_ahead_and_ends_it_when_no_turn_comes(
    ray_instance, place, tmp_path
):
    """Each worker's next turn process starts while its turn runs, as on this machine;
    after the batch, the one that got no turn ends within SPARE_SECONDS."""
    quick = quick_turn_script(place.root, seconds=0.3)
    orders = [place.order(f"q{n}", model=f"script:{quick}") for n in range(6)]
    seen: set[int] = set()

    async def note_the_spares(run) -> None:
        for _ in range(300):
            seen.update(started_ahead(place.state))
            if seen:
                return
            await asyncio.sleep(0.02)

    out = tmp_path / "results.jsonl"
    assert await run_batch(engine_on(ray_instance), orders, out, during=note_the_spares) == (
        Success(0)
    )
    assert [row["outcome"] for row in by_id(out).values()] == ["finished"] * 6
    assert seen, "no turn process was started ahead"
    assert nothing_left(place.state, seconds=ray_engine.SPARE_SECONDS + 3)


def test_without_ray_installed_the_engine_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    started = RayCluster("127.0.0.1:1").start()
    assert isinstance(started, Failure) and started.failure().startswith(NEEDS_RAY)


async def test_an_engine_that_cannot_reach_its_cluster_fails_to_start(monkeypatch):
    class Unreachable(RayCluster):
        def start(self):
            return Failure("cannot use the Ray cluster at 127.0.0.1:1: refused")

    engine = RayEngine(SystemClock(), workers=1, address="127.0.0.1:1")
    engine.instance = Unreachable("127.0.0.1:1")
    assert await engine.start() == Failure("cannot use the Ray cluster at 127.0.0.1:1: refused")


def test_an_address_nothing_listens_on_fails_at_once_and_ray_is_never_asked(monkeypatch):
    """Ray retries an absent cluster 20 times for about 40 s each, deaf to Ctrl-C and
    SIGTERM: the batch refuses first, in one line."""
    import ray

    def retried_for_minutes(**options):
        raise AssertionError("ray.init was asked to reach an address nothing listens on")

    monkeypatch.setattr(ray, "init", retried_for_minutes)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    said = "nothing answers there (Connection refused)"
    started = RayCluster(f"127.0.0.1:{port}").start()
    assert started == Failure(f"cannot use the Ray cluster at 127.0.0.1:{port}: {said}")


def test_an_address_that_accepts_but_never_answers_gets_one_attempt_from_ray(monkeypatch):
    import ray

    asked: list[str | None] = []

    def silent(**options):
        asked.append(os.environ.get(GCS_WAIT))
        raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1")

    monkeypatch.setattr(ray, "init", silent)
    monkeypatch.delenv(GCS_WAIT, raising=False)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()  # the kernel accepts; nothing ever answers
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        started = RayCluster(address).start()
    assert isinstance(started, Failure)
    assert started.failure().startswith(f"cannot use the Ray cluster at {address}: Failed to")
    assert asked == ["1"]  # Ray's own default is 20 attempts of about 40 s
    assert GCS_WAIT not in os.environ
