"""The local engine for real: treadle processes on this machine, killed, stubborn, started
ahead, and leaving nothing running. What every engine does is in test_engine_contract."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest
from returns.result import Success

from tests.batch_support import (
    by_id,
    carrying,
    long_turn_script,
    quick_turn_script,
    rows,
    run_batch,
    setsid_pids,
    transcript_kept,
    wait_for,
)
from tests.processes import is_running
from treadle.adapters.batch.local import LocalEngine
from treadle.adapters.batch.turn_process import StopTimes, TurnSignals, WarmTurns, run_turn
from treadle.adapters.system_clock import SystemClock
from treadle.domain.loop.batch import BatchRun
from treadle.domain.values.batch import TaskOutcome, TaskResult, TurnOrder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc"),
]


async def test_a_turn_killed_mid_turn_is_lost_and_the_others_go_on(place, tmp_path):
    out = tmp_path / "results.jsonl"
    long = long_turn_script(place.root)
    quick = quick_turn_script(place.root, seconds=0.2)
    orders = [place.order("victim", model=f"script:{long}")]
    orders += [place.order(f"q{n}", model=f"script:{quick}") for n in range(3)]

    def victim() -> int | None:
        for pid in carrying("TREADLE_STATE_DIR", str(place.state)):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"batch-victim" in command and b"treadle" in command:
                return pid
        return None

    async def kill_the_victim(run: BatchRun) -> None:
        await wait_for(lambda: len(setsid_pids(place.root)) == 1)
        pid = victim()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

    engine = LocalEngine(SystemClock(), workers=2)
    assert await run_batch(engine, orders, out, during=kill_the_victim) == Success(1)
    got = by_id(out)
    assert got["victim"]["outcome"] == "lost"
    assert got["victim"]["detail"] == "killed by SIGKILL; its transcript kept 1 request"
    assert [got[f"q{n}"]["outcome"] for n in range(3)] == ["finished"] * 3
    assert not any(is_running(pid) for pid in setsid_pids(place.root))


@pytest.fixture
def stubborn(tmp_path: Path) -> Path:
    """A stand-in for python that ignores SIGINT and SIGTERM: a turn that never pauses."""
    path = tmp_path / "stubborn"
    path.write_text(
        f"#!/bin/sh\ntrap '' INT TERM\necho started > {tmp_path}/stubborn.up\nsleep 60\n"
    )
    path.chmod(0o755)
    return path


async def test_a_turn_that_does_not_pause_is_killed_after_its_grace_and_reported_paused(
    place, tmp_path, stubborn
):
    engine = LocalEngine(
        SystemClock(),
        workers=1,
        times=StopTimes(pause=0.3, term=0.3, sweep=0.3),
        python=str(stubborn),
    )

    async def stop_when_up(run: BatchRun) -> None:
        await wait_for((tmp_path / "stubborn.up").exists)
        run.stop()

    out = tmp_path / "results.jsonl"
    assert await run_batch(
        engine, [place.order("s", model="demo")], out, during=stop_when_up
    ) == Success(130)
    row = rows(out)[0]
    assert row["outcome"] == "paused" and row["exit_code"] is None
    assert row["detail"] == "killed by SIGKILL before it paused; its transcript kept 0 requests"


async def test_a_second_ctrl_c_kills_the_running_turns_at_once(place, tmp_path, stubborn):
    engine = LocalEngine(SystemClock(), workers=1, python=str(stubborn))  # a 10 s pause grace

    async def stop_then_kill(run: BatchRun) -> None:
        await wait_for((tmp_path / "stubborn.up").exists)
        run.stop()
        await asyncio.sleep(0.2)
        run.kill()

    out = tmp_path / "results.jsonl"
    started = asyncio.get_running_loop().time()
    assert await run_batch(
        engine, [place.order("s", model="demo")], out, during=stop_then_kill
    ) == Success(130)
    assert asyncio.get_running_loop().time() - started < 8
    assert rows(out)[0]["outcome"] == "paused"


async def test_a_turn_that_cannot_start_is_failed_and_says_why(place):
    engine = LocalEngine(SystemClock(), workers=1)
    order = place.order("x", model="demo")
    missing = TurnOrder(order.id, order.task, order.session, str(place.root / "gone"))
    result = await engine.run(missing)
    await engine.close()
    assert isinstance(result, TaskResult)
    assert result.outcome is TaskOutcome.FAILED and "could not start treadle in" in result.detail


async def test_a_turn_that_treadle_refuses_is_failed_with_treadle_s_own_line(place, tmp_path):
    engine = LocalEngine(SystemClock(), workers=1)
    result = await engine.run(place.order("x", model="nonsense:model:x"))
    await engine.close()
    assert (result.outcome, result.exit_code) == (TaskOutcome.FAILED, 2)
    assert result.detail.startswith("treadle exited with 2: treadle: flag --model")


async def test_what_a_turn_left_outside_its_group_is_killed_when_the_turn_ends(place, tmp_path):
    """A stand-in for treadle that starts a grandchild in a session of its own and exits
    at once, with no cleanup of its own: the engine's sweep finds it by its marker."""
    leaver = tmp_path / "leaver"
    leaver.write_text(f"#!/bin/sh\nsetsid sleep 300 & echo $! > {tmp_path}/left.pid\nexit 0\n")
    leaver.chmod(0o755)
    engine = LocalEngine(SystemClock(), workers=1, python=str(leaver))
    result = await engine.run(place.order("x", model="demo"))
    assert (result.outcome, result.exit_code) == (TaskOutcome.FINISHED, 0)
    left = int((tmp_path / "left.pid").read_text())
    assert not is_running(left)


async def test_a_turn_that_needs_a_yes_nobody_can_give_is_reported_blocked(place, tmp_path):
    script = tmp_path / "asks.json"
    call = {"name": "bash", "arguments": {"command": "touch made-it"}}
    script.write_text(json.dumps({"responses": [{"tool_calls": [call]}, {"text": "done"}]}))
    order = place.order("b", model=f"script:{script}")
    engine = LocalEngine(SystemClock(), workers=1)
    result = await engine.run(replace(order, approval="ask"))
    await engine.close()
    assert (result.outcome, result.exit_code) == (TaskOutcome.BLOCKED, 3)
    assert result.detail.startswith("Turn blocked:")
    assert not (place.work / "made-it").exists()


def waiting_pids(warm: WarmTurns) -> list[int]:
    return [waiting.start.process.pid for waiting in warm._waiting]


async def test_a_turn_process_started_ahead_runs_the_turn_it_is_given_later(place, tmp_path):
    quick = quick_turn_script(place.root)
    warm = WarmTurns(1)
    first = place.order("a", model=f"script:{quick}")
    warm.prepare(first)
    (ahead,) = waiting_pids(warm)
    await wait_for(lambda: b"batch_turn" in Path(f"/proc/{ahead}/cmdline").read_bytes())
    signals = TurnSignals.new()
    clock = SystemClock()
    result = await run_turn(first, worker="local:1", clock=clock, signals=signals, warm=warm)
    assert (result.outcome, result.exit_code, result.requests) == (TaskOutcome.FINISHED, 0, 1)
    assert transcript_kept(rows_of(result))
    assert not is_running(ahead)  # it ran that turn and ended with it
    assert len(waiting_pids(warm)) == 1  # and the next one waits already
    warm.close()


async def test_a_process_started_ahead_is_not_given_a_turn_of_another_environment(place):
    warm = WarmTurns(1)
    order = place.order("a", model="demo")
    warm.prepare(order)
    (ahead,) = waiting_pids(warm)
    other = replace(order, environment=(*order.environment, ("TREADLE_LOG", "debug")))
    assert warm.take(other) is None
    assert not is_running(ahead)
    warm.close()


async def test_a_stop_signal_that_came_while_it_waited_makes_its_turn_pause(place):
    long = long_turn_script(place.root)
    warm = WarmTurns(1)
    order = place.order("a", model=f"script:{long}")
    warm.prepare(order)
    (ahead,) = waiting_pids(warm)
    await wait_for(lambda: catches(ahead, signal.SIGTERM))
    os.kill(ahead, signal.SIGTERM)
    signals = TurnSignals.new()
    clock = SystemClock()
    result = await run_turn(order, worker="local:1", clock=clock, signals=signals, warm=warm)
    assert (result.outcome, result.exit_code) == (TaskOutcome.PAUSED, 130)
    warm.close()


def catches(pid: int, signum: int) -> bool:
    """Whether ``pid`` has a handler for ``signum`` (it holds stop signals from then on)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) & (1 << (signum - 1)))


def rows_of(result: TaskResult) -> dict[str, object]:
    return {"transcript": result.transcript}
