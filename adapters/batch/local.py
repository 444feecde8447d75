"""``--engine local``: the turns as processes of this machine, no dependency.

The batch decides how many run at once; each takes the lowest free worker number
(``local:1``, ``local:2``…), which RESULTS names. Example::

    engine = LocalEngine(SystemClock(), workers=2)
    await engine.start()
    result = await engine.run(order)      # engine.pause() from elsewhere pauses it
    await engine.close()
"""

from __future__ import annotations

import asyncio
import sys

from returns.result import Result, Success

from treadle.adapters.batch.turn_process import StopTimes, TurnSignals, WarmTurns, run_turn
from treadle.domain.values.batch import TaskResult, TurnOrder
from treadle.ports.clock import Clock


class LocalEngine:
    """The TurnEngine port on this machine."""

    def __init__(
        self,
        clock: Clock,
        *,
        workers: int,
        times: StopTimes | None = None,
        python: str = sys.executable,
        ahead: int | None = None,
    ) -> None:
        self._clock = clock
        self._times = times or StopTimes()
        self._python = python
        self._free = list(range(max(1, workers), 0, -1))
        self._signals: TurnSignals | None = None
        self._running = 0
        self._idle: asyncio.Event | None = None
        # Turn processes started ahead, one per worker by default: the next turn's
        # start-up overlaps the turns that run. Only this interpreter runs the module
        # that waits (a stand-in ``python`` would not).
        if ahead is None:
            ahead = max(1, workers) if python == sys.executable else 0
        self._warm = WarmTurns(ahead, python)

    @property
    def signals(self) -> TurnSignals:
        if self._signals is None:  # made on the loop that runs the turns
            self._signals = TurnSignals.new()
            self._idle = asyncio.Event()
            self._idle.set()
        return self._signals

    async def start(self) -> Result[None, str]:
        _ = self.signals
        return Success(None)

    async def run(self, order: TurnOrder) -> TaskResult:
        slot = self._free.pop() if self._free else self._running + 1
        signals = self.signals
        assert self._idle is not None
        self._running += 1
        self._idle.clear()
        try:
            return await run_turn(
                order,
                worker=f"local:{slot}",
                clock=self._clock,
                signals=signals,
                times=self._times,
                python=self._python,
                warm=self._warm,
            )
        finally:
            self._free.append(slot)
            self._free.sort(reverse=True)
            self._running -= 1
            if not self._running:
                self._idle.set()

    def pause(self) -> None:
        self.signals.pause.set()

    def kill(self) -> None:
        self.signals.kill.set()

    async def close(self) -> None:
        """Pause what still runs and wait for it: each turn's own cleanup then leaves
        nothing of it running."""
        self._warm.close()
        if self._signals is None or self._idle is None:
            return
        if self._running:
            self.pause()
            await self._idle.wait()
        self._warm.close()  # any a turn started while it paused
