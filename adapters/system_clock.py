"""The real clock: monotonic time and asyncio sleeps."""

from __future__ import annotations

import asyncio
import time


class SystemClock:
    """The Clock port on the machine's monotonic clock."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))
