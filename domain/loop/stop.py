"""A stop that can be asked for once and reaches everything started under it.

Esc, Ctrl-C, a caller's stop and a sub-agent's deadline are all a :class:`StopSignal`
being set. Work raced against it is cancelled, and its cleanup awaited, at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

T = TypeVar("T")


class StoppedFirst:
    """The marker :meth:`StopSignal.race` returns when the stop won."""

    def __repr__(self) -> str:
        return "STOPPED"


STOPPED: Final = StoppedFirst()


class StopSignal:
    """Set once, with a reason; a child signal is set whenever its parent is.

    Example::

        stop = StopSignal()
        result = await stop.race(model_answer())   # STOPPED if stop.set() came first
    """

    def __init__(self, parent: StopSignal | None = None) -> None:
        self._event = asyncio.Event()
        self._children: list[StopSignal] = []
        self.reason = ""
        if parent is not None:
            parent._children.append(self)
            if parent.is_set:
                self.set(parent.reason)

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    def set(self, reason: str = "stopped") -> None:
        if self.is_set:
            return
        self.reason = reason
        self._event.set()
        for child in self._children:
            child.set(reason)

    async def wait(self) -> None:
        await self._event.wait()

    async def race(self, work: Coroutine[Any, Any, T]) -> T | StoppedFirst:
        """Run ``work`` until it ends or the stop comes; then cancel it and await its cleanup."""
        if self.is_set:
            work.close()
            return STOPPED
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await _cancel_and_wait(task, waiter)
            raise
        if task.done():
            waiter.cancel()
            return task.result()
        await _cancel_and_wait(task, waiter)
        return STOPPED


async def _cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
