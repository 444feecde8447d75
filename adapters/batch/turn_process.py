"""One turn of a batch as a process on this machine: ``treadle --json`` in a session of
its own, tagged so that everything it starts can be found, paused when asked.

Both engines run a turn with :func:`run_turn`: the local one in the batch's own event
loop, the Ray one inside a Ray task. The turn's process tree:

    the batch (or a Ray worker), a child subreaper
      └─ python -m treadle --json …     own session and group; TREADLE_RUN_<id>=1 and
           └─ its commands …            the owner marker, which every descendant inherits

A pause is SIGTERM to the turn's process (treadle records the turn paused and exits
130, as a headless turn does), then SIGTERM to its group, then SIGKILL for everything
that carries the marker or descends from the turn, wherever it went (``setsid``,
double forks). The owner marker is the one the watchdog of
:mod:`treadle.adapters.process.watchdog` sweeps, should the process running the turn
die, even by SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from treadle.adapters.process.environment import run_marker
from treadle.adapters.process.tree import CommandTree, active_commands, become_subreaper
from treadle.adapters.process.watchdog import OWNER_MARKER, ensure_watchdog
from treadle.domain.rules.turn_report import ProcessEnd, TurnTally, judge_turn, tally_lines
from treadle.domain.values.batch import TURN_FLAG_OPTIONS, TaskOutcome, TaskResult, TurnOrder
from treadle.ports.clock import Clock


@dataclass(frozen=True, slots=True)
class StopTimes:
    """How a turn is stopped: SIGTERM to treadle and ``pause`` seconds to record its
    pause, then SIGTERM to its group and ``term`` seconds, then SIGKILL; leftovers of a
    turn that ended get SIGTERM and ``sweep`` seconds before SIGKILL."""

    pause: float = 10.0
    term: float = 2.0
    sweep: float = 2.0


LONGEST_LINE = 1 << 20
"""Longer --json lines (a long answer, a big tool call) are passed over unread: the
lines a batch needs (usage, the turn's end) are short, and memory stays flat."""
STDERR_KEPT = 4096


def turn_option(key: str) -> str:
    """The turn's option for the :data:`TURN_FLAGS` key ``key``.

    >>> turn_option("max_cost"), turn_option("sandbox_network")
    ('--max-cost', '--network')
    """
    return TURN_FLAG_OPTIONS.get(key, f"--{key.replace('_', '-')}")


def turn_command(order: TurnOrder, python: str = sys.executable) -> list[str]:
    """The command line of ``order``'s turn.

    >>> " ".join(turn_command(TurnOrder("a", "fix it", "s1", "/w", model="demo"), "python"))
    'python -m treadle --json --workspace /w --model demo --session-id s1 -- fix it'
    >>> " ".join(turn_command(TurnOrder("a", "", "s1", "/w", resuming=True), "python"))
    'python -m treadle --json --workspace /w --resume s1'
    """
    argv = [python, "-m", "treadle", "--json", "--workspace", order.workspace]
    for flag, value in (
        ("--model", order.model),
        ("--base-url", order.base_url),
        ("--approval", order.approval),
        ("--sandbox", order.sandbox),
        *((turn_option(key), text) for key, text in order.flags),
    ):
        if value:
            argv += [flag, value]
    if order.worktree:  # one word: the task after it is never taken for its name
        argv.append(f"--worktree={order.worktree}")
    argv += ["--resume" if order.resuming else "--session-id", order.session]
    return [*argv, "--", order.task] if order.task else argv


def turn_environment(
    inherited: Mapping[str, str], order: TurnOrder, markers: Iterable[str]
) -> dict[str, str]:
    """The turn's environment: what the process running it has, less Ray's own
    variables (a turn has no business with the cluster's token or address), plus the
    batch's ``TREADLE_*`` settings and the markers."""
    environment = {name: value for name, value in inherited.items() if not name.startswith("RAY_")}
    environment.update(order.environment)
    environment.update(dict.fromkeys(markers, "1"))
    return environment


class _Lines:
    """The lines of a pipe as they come, folded into a tally; memory stays bounded."""

    def __init__(self) -> None:
        self.tally = TurnTally()
        self._partial = b""
        self._skipping = False

    def feed(self, data: bytes) -> None:
        *complete, rest = (self._partial + data).split(b"\n")
        for index, line in enumerate(complete):
            if index == 0 and self._skipping:
                self._skipping = False
                continue
            self.tally = tally_lines([line.decode("utf-8", "replace")], self.tally)
        self._partial = rest
        if len(rest) > LONGEST_LINE:
            self._partial, self._skipping = b"", True

    def close(self) -> None:
        if self._partial and not self._skipping:
            self.tally = tally_lines([self._partial.decode("utf-8", "replace")], self.tally)
        self._partial = b""


class _Tail:
    """The last bytes of a pipe (stderr: why treadle refused to start)."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def feed(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        while self._size > STDERR_KEPT and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())

    def close(self) -> None:
        pass

    def last_line(self) -> str:
        text = b"".join(self._chunks)[-STDERR_KEPT:].decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else ""


async def _read(pipe: int, into: _Lines | _Tail) -> None:
    """Read ``pipe`` to its end into ``into``, from the event loop's selector."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    os.set_blocking(pipe, False)

    def readable() -> None:
        try:
            data = os.read(pipe, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if data:
            into.feed(data)
        elif not done.done():
            done.set_result(None)

    loop.add_reader(pipe, readable)
    try:
        await done
    finally:
        loop.remove_reader(pipe)
        os.close(pipe)
        into.close()


async def _exited(process: subprocess.Popen[bytes]) -> None:
    """Until the turn's own process ends (its pipes may live on in leftovers)."""
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        await asyncio.to_thread(process.wait)
        return
    ended: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        await ended
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)
    process.wait()


async def _within(future: asyncio.Future[None], seconds: float) -> bool:
    if not future.done():
        await asyncio.wait([future], timeout=seconds)
    return future.done()


@dataclass(slots=True)
class TurnSignals:
    """The batch's requests to a running turn: pause it (SIGTERM first), or kill it now."""

    pause: asyncio.Event
    kill: asyncio.Event

    @staticmethod
    def new() -> TurnSignals:
        return TurnSignals(asyncio.Event(), asyncio.Event())


async def run_turn(
    order: TurnOrder,
    *,
    worker: str,
    clock: Clock,
    signals: TurnSignals,
    times: StopTimes | None = None,
    python: str = sys.executable,
    warm: WarmTurns | None = None,
) -> TaskResult:
    """Run ``order``'s turn here to its end, and say how it ended; nothing it started
    is left running when this returns, or when it is cancelled. With ``warm``, the
    turn's process is one started ahead, where one is ready."""
    times = times or StopTimes()
    become_subreaper()
    ensure_watchdog()
    started = clock.now()
    try:
        begun = (warm.take(order) if warm is not None else None) or _start_cold(order, python)
    except OSError as error:
        return TaskResult(
            order.id,
            TaskOutcome.FAILED,
            detail=f"could not start treadle in {order.workspace}: {error.strerror or error}",
            session=order.session,
            seconds=round(clock.now() - started, 3),
            worker=worker,
        )
    if warm is not None:
        warm.prepare(order)  # the next turn's process starts while this one runs
    process, run_id = begun.process, begun.run_id
    tree = CommandTree(process.pid, run_id)
    lines, errors = _Lines(), _Tail()
    readers = [
        asyncio.ensure_future(_read(begun.stdout, lines)),
        asyncio.ensure_future(_read(begun.stderr, errors)),
    ]
    ended = asyncio.ensure_future(_exited(process))
    asked = False
    try:
        asked = await _follow(process, tree, ended, signals, times)
        # A full scan, not the cheap may_have_leftovers(): a command that left the
        # turn's group may still be its shell's child, neither ours nor in the group.
        await tree.stop(times.sweep)
        # What leftovers held open is closed now; what the turn wrote is in the pipes.
        await asyncio.wait(readers, timeout=1.0)
    except BaseException:
        tree.kill_now()
        raise
    finally:
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        if process.returncode is None:
            process.kill()
            process.wait()
        ended.cancel()
        active_commands.discard(process.pid)
        tree.reap()
    code = process.returncode
    end = ProcessEnd(code) if code >= 0 else ProcessEnd(None, _signal_name(-code))
    outcome, detail = judge_turn(end, lines.tally, pause_asked=asked, error_line=errors.last_line())
    return TaskResult(
        order.id,
        outcome,
        exit_code=end.exit_code,
        detail=detail,
        transcript=order.transcript,
        session=order.session,
        requests=lines.tally.requests,
        tokens=dict(lines.tally.tokens),
        seconds=round(clock.now() - started, 3),
        worker=worker,
        cost=lines.tally.cost,
        value=lines.tally.value,
    )


@dataclass(frozen=True, slots=True)
class TurnStart:
    """A turn's process, just started: its run marker and the read ends of its pipes."""

    process: subprocess.Popen[bytes]
    run_id: str
    stdout: int
    stderr: int


def _spawn(
    command: list[str], environment: dict[str, str], cwd: str | None, stdin: int
) -> tuple[subprocess.Popen[bytes], int, int]:
    """The process and the read ends of its stdout and stderr."""
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    # A Ray worker runs with SIGINT blocked, and a child inherits the mask of the
    # thread that forks it: the turn would never hear the signals that pause it.
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=environment,
            stdin=stdin,
            stdout=out_write,
            stderr=err_write,
            start_new_session=True,
        )
    except BaseException:
        os.close(out_read)
        os.close(err_read)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(out_write)
        os.close(err_write)
    active_commands.add(process.pid)  # its exit status is ours: no cleanup reaps it
    return process, out_read, err_read


def _start_cold(order: TurnOrder, python: str) -> TurnStart:
    run_id = os.urandom(16).hex()
    environment = turn_environment(os.environ, order, (run_marker(run_id), OWNER_MARKER))
    process, out, err = _spawn(
        turn_command(order, python), environment, order.workspace, subprocess.DEVNULL
    )
    return TurnStart(process, run_id, out, err)


@dataclass(slots=True)
class _Waiting:
    start: TurnStart
    environment: tuple[tuple[str, str], ...]
    stdin: int


class WarmTurns:
    """Turn processes started ahead (see :mod:`treadle.entrypoints.batch_turn`): up to
    ``size`` wait, each with the environment of the orders it may take. ``take`` gives
    one its order; ``prepare`` starts more for orders like this one; ``close`` ends
    those that wait."""

    def __init__(self, size: int, python: str = sys.executable) -> None:
        self.size = max(0, size)
        self.python = python
        self._waiting: list[_Waiting] = []

    def take(self, order: TurnOrder) -> TurnStart | None:
        if not os.path.isdir(order.workspace):
            return None  # a cold start says why, as for any turn
        while self._waiting:
            waiting = self._waiting.pop(0)
            if waiting.environment != order.environment or waiting.start.process.poll() is not None:
                self._end(waiting)
                continue
            argv = turn_command(order, self.python)[3:]  # after "python -m treadle"
            line = json.dumps({"argv": argv, "cwd": order.workspace}) + "\n"
            try:
                os.write(waiting.stdin, line.encode())
            except OSError:
                self._end(waiting)
                continue
            os.close(waiting.stdin)
            return waiting.start
        return None

    def prepare(self, order: TurnOrder) -> None:
        """Start processes for turns like ``order`` until ``size`` wait (best effort)."""
        while len(self._waiting) < self.size:
            run_id = os.urandom(16).hex()
            environment = turn_environment(os.environ, order, (run_marker(run_id), OWNER_MARKER))
            stdin_read, stdin_write = os.pipe()
            os.set_inheritable(stdin_write, False)
            try:
                process, out, err = _spawn(
                    [self.python, "-m", "treadle.entrypoints.batch_turn"],
                    environment,
                    None,
                    stdin_read,
                )
            except OSError:
                os.close(stdin_write)
                return
            finally:
                os.close(stdin_read)
            start = TurnStart(process, run_id, out, err)
            self._waiting.append(_Waiting(start, order.environment, stdin_write))

    def close(self) -> None:
        while self._waiting:
            self._end(self._waiting.pop())

    def _end(self, waiting: _Waiting) -> None:
        process = waiting.start.process
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        active_commands.discard(process.pid)
        for descriptor in (waiting.stdin, waiting.start.stdout, waiting.start.stderr):
            with contextlib.suppress(OSError):
                os.close(descriptor)


async def _follow(
    process: subprocess.Popen[bytes],
    tree: CommandTree,
    ended: asyncio.Future[None],
    signals: TurnSignals,
    times: StopTimes,
) -> bool:
    """Wait for the turn to end, pausing or killing it when asked; whether it was."""
    pause: asyncio.Future[Any] = asyncio.ensure_future(signals.pause.wait())
    kill: asyncio.Future[Any] = asyncio.ensure_future(signals.kill.wait())
    waiting: set[asyncio.Future[Any]] = {ended, pause, kill}
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if ended.done():
            return False
        # SIGTERM to treadle itself pauses its turn, as it does a headless turn: treadle
        # stops its own commands and records the pause. Then its whole group.
        for send, seconds in ((os.kill, times.pause), (os.killpg, times.term)):
            if kill.done():
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                send(process.pid, signal.SIGTERM)
            await asyncio.wait(
                waiting - {pause}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
            if ended.done():
                return True
        await tree.stop(0.0)
        await _within(ended, times.sweep)
        return True
    finally:
        pause.cancel()
        kill.cancel()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
