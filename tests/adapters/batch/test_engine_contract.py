"""What every turn engine does, for real: one contract, run against the local engine
(treadle processes on this machine) and the Ray engine (Ray tasks on the session's
private instance on 127.0.0.1). What only one engine does is in its own file."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from returns.result import Success

from tests.batch_support import (
    ANSWER_TOKENS,
    by_id,
    last_event,
    long_turn_script,
    model_server,
    rows,
    run_batch,
    setsid_pids,
    transcript_kept,
    turn_process,
    wait_for,
)
from tests.processes import is_running
from treadle.adapters.batch.local import LocalEngine
from treadle.adapters.batch.ray_engine import RayEngine
from treadle.adapters.batch.ray_instance import LocalRayInstance
from treadle.adapters.system_clock import SystemClock
from treadle.domain.loop.batch import BatchRun
from treadle.ports.batch import TurnEngine

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc"),
]

TURNS = 6
"""More turns than the two workers: each worker runs several, queued ones included."""


@dataclass(frozen=True)
class EngineUnderTest:
    """An engine of two workers, and how its RESULTS name a worker."""

    make: Callable[[], TurnEngine]
    worker: Callable[[str], bool]


@pytest.fixture(
    params=[
        "local",
        # The Ray tests share the one private instance: on one pytest-xdist worker.
        pytest.param("ray", marks=pytest.mark.xdist_group("ray")),
    ]
)
def engine(request: pytest.FixtureRequest) -> EngineUnderTest:
    if request.param == "local":
        return EngineUnderTest(
            lambda: LocalEngine(SystemClock(), workers=2),
            lambda worker: worker in ("local:1", "local:2"),
        )
    instance = request.getfixturevalue("ray_instance")
    assert isinstance(instance, LocalRayInstance)
    return EngineUnderTest(
        lambda: RayEngine(SystemClock(), workers=2, instance=instance),
        lambda worker: worker.startswith("127.0.0.1:"),
    )


async def test_turns_against_the_model_server_finish_on_both_workers(engine, place, tmp_path):
    out = tmp_path / "results.jsonl"
    with model_server(replies=TURNS) as url:
        orders = [
            place.order(f"t{n:02d}", model="openai:test-model", base_url=url) for n in range(TURNS)
        ]
        assert await run_batch(engine.make(), orders, out) == Success(0)
    got = rows(out)
    assert [row["outcome"] for row in got] == ["finished"] * TURNS
    assert all(engine.worker(str(row["worker"])) for row in got), got
    assert len({row["worker"] for row in got}) >= 2
    assert all(row["requests"] == 1 and row["exit_code"] == 0 for row in got)
    assert all(row["tokens"] == ANSWER_TOKENS for row in got), got[0]
    assert all(transcript_kept(row) for row in got)


def sigint_blocked(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:"))
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


async def test_a_stop_pauses_the_running_turns_and_the_queued_ones_are_not_started(
    engine, place, tmp_path
):
    out = tmp_path / "results.jsonl"
    script = long_turn_script(place.root)
    orders = [place.order(f"L{n}", model=f"script:{script}") for n in range(4)]
    blocked: list[bool] = []

    async def stop_once_both_run(run: BatchRun) -> None:
        await wait_for(lambda: len(setsid_pids(place.root)) == 2)
        turn = turn_process(place.state, "batch-L0")
        assert turn is not None
        blocked.append(sigint_blocked(turn))
        run.stop()

    assert await run_batch(engine.make(), orders, out, during=stop_once_both_run) == Success(130)
    # Ray's workers run with SIGINT blocked, and a child inherits the mask: an engine
    # unblocks it for the turn, which must hear the SIGINT that pauses it.
    assert blocked == [False]
    got = by_id(out)
    assert {name: row["outcome"] for name, row in got.items()} == {
        "L0": "paused",
        "L1": "paused",
        "L2": "not started",
        "L3": "not started",
    }
    for name in ("L0", "L1"):
        assert got[name]["exit_code"] == 130 and got[name]["detail"] == "Turn paused"
        assert last_event(got[name]) == ("turn_ended", "paused")
    assert not any(is_running(pid) for pid in setsid_pids(place.root))
