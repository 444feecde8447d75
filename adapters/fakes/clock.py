"""A clock with virtual time: every sleep resolves at once, in the order of its wake time."""

from __future__ import annotations

import asyncio
import heapq
import itertools


class FakeClock:
    """Virtual time for the Clock port.

    Time moves only when every task is waiting: then the earliest sleeper wakes and
    ``now()`` jumps to its wake time. A ten-minute deadline takes no real time.
    ``slept`` lists every pause asked for, in order.

    "Waiting" means waiting on the event loop: work running in a thread or a real
    process is not seen, so pair the fake clock with the other fakes (a real tool that
    reads a file in a thread may find that virtual time moved meanwhile).

    Example::

        clock = FakeClock()
        await clock.sleep(2.0)
        assert clock.now() == 2.0 and clock.slept == [2.0]
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._driver: asyncio.Task[None] | None = None
        self.slept: list[float] = []

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        loop = asyncio.get_running_loop()
        wake: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._sleepers, (self._now + max(0.0, seconds), next(self._order), wake))
        if self._driver is None or self._driver.done():
            self._driver = loop.create_task(self._drive())
        await wake

    async def _drive(self) -> None:
        while self._sleepers:
            await _until_idle()
            when, _, wake = heapq.heappop(self._sleepers)
            if wake.done():  # the sleeper was cancelled
                continue
            self._now = max(self._now, when)
            wake.set_result(None)


async def _until_idle(max_rounds: int = 10_000) -> None:
    """Yield until no other callback is ready to run (every task is waiting).

    The loop's queue of ready callbacks is private to asyncio's own event loops; on
    another loop, or after a long spell of work that never waits (a busy stream),
    time moves after a fixed number of rounds instead.
    """
    loop = asyncio.get_running_loop()
    for _ in range(max_rounds if hasattr(loop, "_ready") else 100):
        await asyncio.sleep(0)
        if not getattr(loop, "_ready", True):
            # Give tasks woken by I/O readiness one more round before moving time.
            await asyncio.sleep(0)
            if not getattr(loop, "_ready", True):
                return
