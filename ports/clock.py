"""The Clock port: every pause, deadline and interval in treadle goes through it."""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    """Monotonic time in seconds, and a way to wait for some of it to pass.

    Example: ``await clock.sleep(2.0)`` is two real seconds on the system clock and
    no time at all on the fake clock.
    """

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...
