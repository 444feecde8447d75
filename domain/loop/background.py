"""The session's background processes: started, read and stopped through the runner.

A background process is an ordinary :meth:`ProcessRunner.run` (so every rule of a
command holds: its own group and cgroup, the watchdog after kill -9, the sandbox,
secrets out of its environment) that runs as a task of its own instead of inside the
call: the call returns at once with an id. What it prints is kept, bounded head and
tail, until ``process_output`` reads it; cancelling the task is what stops it (the
runner then stops its whole tree). The decisions are in
:mod:`treadle.domain.rules.background`.

Example::

    table = BackgroundProcesses()
    view = table.start(spec, runner, clock, limit=4, emit=print)   # returns at once
    print(table.read(view.id, clock.now()))
    await table.stop(view.id, clock.now)
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

from returns.result import Failure, Result, Success

from treadle.domain.rules.background import (
    over_limit,
    process_id,
    read_text,
    stopped_at_session_end,
)
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.events import BackgroundCount, TurnEvent
from treadle.domain.values.process import (
    BackgroundState,
    BackgroundView,
    ProcessError,
    ProcessResult,
    ProcessSpec,
)
from treadle.ports.process import ProcessRunner

NO_DEADLINE = 30 * 24 * 3600.0
"""A background process's deadline when the model gives none: the session's end comes
first (a month; a finite number, for every clock and selector)."""


@dataclass(eq=False)
class _Process:
    view: BackgroundView
    unread: OutputBound
    limit: int
    task: asyncio.Task[Result[ProcessResult, ProcessError]] | None = None
    stopping: bool = False

    def take(self, chunk: bytes) -> None:
        self.unread.feed(chunk)


class BackgroundProcesses:
    """Every background process of a session (its sub-agents' too), by id."""

    def __init__(self) -> None:
        self._processes: dict[str, _Process] = {}
        self._numbers = itertools.count(1)

    @property
    def running(self) -> int:
        return sum(p.view.state is BackgroundState.RUNNING for p in self._processes.values())

    def views(self) -> list[BackgroundView]:
        """Each process as it is now, in the order they started."""
        return [replace(p.view, unread=p.unread.total) for p in self._processes.values()]

    def start(
        self,
        spec: ProcessSpec,
        runner: ProcessRunner,
        now: Callable[[], float],
        *,
        limit: int,
        emit: Callable[[TurnEvent], None],
    ) -> BackgroundView | str:
        """Start ``spec`` as a background process, or say why not (over ``limit``).

        ``spec``'s ``on_output`` is replaced by the process's own; ``emit`` hears the
        count of running processes each time it changes."""
        refused = over_limit(running=self.running, limit=limit)
        if refused is not None:
            return refused
        number = next(self._numbers)
        view = BackgroundView(process_id(number), spec.command, BackgroundState.RUNNING, now())
        process = _Process(view, OutputBound(spec.output_limit), spec.output_limit)
        self._processes[view.id] = process
        ran = replace(spec, on_output=process.take)
        process.task = asyncio.ensure_future(runner.run(ran))
        process.task.add_done_callback(lambda task: self._ended(process, task, now(), emit))
        emit(BackgroundCount(self.running))
        return view

    def _ended(
        self,
        process: _Process,
        task: asyncio.Task[Result[ProcessResult, ProcessError]],
        when: float,
        emit: Callable[[TurnEvent], None],
    ) -> None:
        view = replace(process.view, ended=when)
        if task.cancelled() or process.stopping:
            view = replace(view, state=BackgroundState.STOPPED)
        elif task.exception() is not None:  # a bug in the runner: said, never raised here
            view = replace(view, state=BackgroundState.NOT_STARTED, detail=str(task.exception()))
        else:
            match task.result():
                case Success(result):
                    state = BackgroundState.STOPPED if result.timed_out else BackgroundState.EXITED
                    view = replace(view, state=state, exit_code=result.exit_code)
                    view = replace(view, signal=result.signal)
                case Failure(error):
                    view = replace(view, state=BackgroundState.NOT_STARTED, detail=error.detail)
        process.view = view
        emit(BackgroundCount(self.running))

    def read(self, process: str, now: float) -> str | None:
        """What ``process`` printed since the last read, with its state (None: no such
        process). What was read is gone from it."""
        found = self._processes.get(process)
        if found is None:
            return None
        unread = found.unread
        found.unread = OutputBound(found.limit)
        return read_text(found.view, unread.text(), unread.omitted, now)

    async def stop(self, process: str, now: Callable[[], float]) -> str | None:
        """Stop ``process`` and its whole tree, then what it printed since the last
        read (None: no such process). One that has ended already is only read."""
        found = self._processes.get(process)
        if found is None:
            return None
        await self._stop(found)
        return self.read(process, now())

    async def stop_all(self) -> list[BackgroundView]:
        """Stop every background process still running (the session ends); those it
        stopped."""
        ending = set(stopped_at_session_end(self.views()))
        stopping = [p for p in self._processes.values() if p.view.id in ending]
        await asyncio.gather(*(self._stop(process) for process in stopping))
        return [process.view for process in stopping]

    async def _stop(self, process: _Process) -> None:
        task = process.task
        if task is None or task.done():
            return
        process.stopping = True
        task.cancel()
        # The runner stops the tree (SIGTERM, then SIGKILL) before the task ends; a
        # stop of this call does not cut that short.
        await asyncio.wait([task])
