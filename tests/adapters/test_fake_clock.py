"""Virtual time: sleeps resolve at once and in the order of their wake times."""

from __future__ import annotations

import asyncio

from treadle.adapters.fakes import FakeClock


async def test_a_long_sleep_takes_no_real_time_and_moves_now():
    clock = FakeClock()
    loop_started = asyncio.get_running_loop().time()
    await clock.sleep(600.0)
    assert clock.now() == 600.0
    assert asyncio.get_running_loop().time() - loop_started < 5


async def test_concurrent_sleepers_wake_in_order_of_wake_time():
    clock = FakeClock()
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.now()))

    await asyncio.gather(sleeper("c", 3), sleeper("a", 1), sleeper("b", 2))
    assert woke == [("a", 1.0), ("b", 2.0), ("c", 3.0)]


async def test_a_cancelled_sleeper_does_not_move_time():
    clock = FakeClock()
    task = asyncio.ensure_future(clock.sleep(100))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await clock.sleep(1)
    assert clock.now() == 1.0
    assert clock.slept == [100, 1]


async def test_time_waits_for_work_that_is_ready_to_run():
    clock = FakeClock()
    steps: list[float] = []

    async def busy() -> None:
        for _ in range(50):
            await asyncio.sleep(0)
        steps.append(clock.now())

    await asyncio.gather(busy(), clock.sleep(5))
    assert steps == [0.0]
