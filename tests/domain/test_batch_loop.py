"""The batch loop on the fake engine and the fake clock: turns take clock time, none
real."""

from __future__ import annotations

import asyncio

from returns.result import Failure, Success

from treadle.adapters.fakes import FakeClock
from treadle.adapters.fakes.batch import (
    FakeEngine,
    FakeTurn,
    RecordingBatchScreen,
    RecordingResults,
)
from treadle.domain.loop.batch import PROGRESS_INTERVAL, BatchPorts, BatchRun
from treadle.domain.rules.batch import start_batch
from treadle.domain.values.batch import TaskOutcome, TaskResult, TurnOrder


def orders(count: int) -> list[TurnOrder]:
    return [TurnOrder(f"t{n:02d}", "task", f"s{n}", "/w") for n in range(count)]


class Rig:
    def __init__(self, engine_turns=None, *, workers=2, count=6, default=None, start_error=""):
        self.clock = FakeClock()
        self.engine = FakeEngine(self.clock, engine_turns, default=default, start_error=start_error)
        self.results = RecordingResults()
        self.screen = RecordingBatchScreen()
        ports = BatchPorts(self.engine, self.results, self.screen, self.clock)
        self.run = BatchRun(start_batch(orders(count), workers=workers), ports)

    def outcomes(self) -> dict[str, str]:
        return {result.id: result.outcome.value for result in self.results.written}


async def test_twenty_turns_on_two_workers_take_ten_turn_lengths_and_never_more_than_two_run():
    rig = Rig(count=20, default=FakeTurn(seconds=0.5))
    assert await rig.run.run() == Success(0)
    assert rig.clock.now() == 5.0
    assert rig.engine.most_running == 2
    assert rig.engine.started == [f"t{n:02d}" for n in range(20)]
    assert set(rig.outcomes().values()) == {"finished"}
    assert rig.engine.closed


async def test_each_result_is_written_when_its_turn_ends_not_at_the_end():
    rig = Rig({"t00": FakeTurn(seconds=10)}, count=3, default=FakeTurn(seconds=1))
    job = asyncio.ensure_future(rig.run.run())
    await rig.clock.sleep(3.5)
    assert [r.id for r in rig.results.written] == ["t01", "t02"]
    assert await job == Success(0)
    assert rig.results.written[-1].id == "t00"


async def test_a_turn_that_fails_makes_the_batch_exit_1_and_the_others_go_on():
    rig = Rig({"t01": FakeTurn(TaskOutcome.FAILED)}, count=4)
    assert await rig.run.run() == Success(1)
    assert rig.outcomes() == {
        "t00": "finished",
        "t01": "failed",
        "t02": "finished",
        "t03": "finished",
    }


async def test_a_stop_pauses_the_running_turns_and_records_the_queued_ones_not_started():
    rig = Rig(count=6, default=FakeTurn(seconds=60))
    job = asyncio.ensure_future(rig.run.run())
    await rig.clock.sleep(5)
    rig.run.stop()
    assert await job == Success(130)
    assert rig.outcomes() == {
        "t00": "paused",
        "t01": "paused",
        **{f"t0{n}": "not started" for n in range(2, 6)},
    }
    assert rig.engine.paused_asked == 1 and rig.engine.started == ["t00", "t01"]
    assert rig.clock.now() < 6
    assert any("pausing" in note for note in rig.screen.notes)


async def test_a_stop_with_a_long_queue_pauses_first_and_writes_the_queue_in_one_go():
    rig = Rig(count=5_000, default=FakeTurn(seconds=60))
    asked_when_written: list[int] = []

    class Writes(RecordingResults):
        def write_all(self, results):
            asked_when_written.append(rig.engine.paused_asked)
            super().write_all(results)

    rig.results = Writes()
    rig.run.ports = BatchPorts(rig.engine, rig.results, rig.screen, rig.clock)
    job = asyncio.ensure_future(rig.run.run())
    await rig.clock.sleep(5)
    rig.run.stop()
    assert await job == Success(130)
    assert asked_when_written == [1]  # one write, after the running turns were asked
    assert len(rig.results.written) == 5_000
    assert len(rig.screen.ended_ids) == 2 + 20  # the rest is one note
    assert "… and 4,978 more not started" in rig.screen.notes


async def test_a_second_ctrl_c_kills_turns_that_do_not_pause():
    rig = Rig(count=3, default=FakeTurn(seconds=600, pauses=False))
    job = asyncio.ensure_future(rig.run.run())
    await rig.clock.sleep(1)
    rig.run.stop()
    await rig.clock.sleep(30)
    assert not job.done()  # they do not pause: the batch waits for them
    rig.run.kill()
    assert await job == Success(130)
    assert rig.engine.killed_asked == 1
    paused = [r.detail for r in rig.results.written if r.outcome is TaskOutcome.PAUSED]
    assert paused == ["killed"] * 2


async def test_an_engine_that_cannot_start_runs_nothing_and_says_why():
    rig = Rig(start_error="--engine ray needs Ray")
    assert await rig.run.run() == Failure("--engine ray needs Ray")
    assert rig.engine.started == [] and rig.results.written == []
    assert rig.engine.closed


async def test_a_bug_in_the_engine_fails_that_turn_only_and_its_traceback_is_logged(caplog):
    class Buggy(FakeEngine):
        async def run(self, order: TurnOrder) -> TaskResult:
            if order.id == "t01":
                raise RuntimeError("boom")
            return await super().run(order)

    rig = Rig(count=3)
    rig.run.ports = rig.run.ports.__class__(Buggy(rig.clock), rig.results, rig.screen, rig.clock)
    assert await rig.run.run() == Success(1)
    failed = next(r for r in rig.results.written if r.id == "t01")
    assert failed.detail == "InternalError: RuntimeError: boom"
    (record,) = [r for r in caplog.records if r.name.startswith("treadle")]
    assert record.exc_info is not None and "t01" in record.getMessage()


async def test_the_progress_line_is_redrawn_between_events():
    rig = Rig(count=2, workers=1, default=FakeTurn(seconds=3 * PROGRESS_INTERVAL))
    assert await rig.run.run() == Success(0)
    assert len(rig.screen.figures) >= 5
    assert rig.screen.summaries and [r.id for r in rig.screen.summaries[0]] == ["t00", "t01"]
