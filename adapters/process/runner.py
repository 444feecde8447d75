"""The real ProcessRunner: a shell command in its own session, bounded and cleaned up.

Example::

    runner = SubprocessRunner(passthrough_env=["GITHUB_TOKEN"])
    match await runner.run(ProcessSpec("pytest -q", cwd=".", timeout=120)):
        case Success(result): print(result.output, result.exit_code)
        case Failure(error): print("could not start:", error.detail)
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import time
from collections.abc import Callable, Collection
from typing import Protocol

from returns.result import Failure, Result, Success

from treadle.adapters.process.cgroup import CgroupHome, CommandGroup, cgroup_home
from treadle.adapters.process.environment import child_environment
from treadle.adapters.process.spill import SPILL_CAP, OutputSpill
from treadle.adapters.process.tree import (
    CommandTree,
    active_commands,
    become_subreaper,
    running_trees,
    start_time,
)
from treadle.adapters.process.watchdog import OWNER_MARKER, ensure_watchdog, watch_cgroup
from treadle.adapters.sandbox import UNCONFINED, Launch, Sandbox
from treadle.adapters.sandbox.spawner import Start, Status, plan_start
from treadle.adapters.secrets.redact import Redactor
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.process import HostGrant, ProcessError, ProcessResult, ProcessSpec

DRAIN_AFTER_EXIT = 0.2
"""After the command's own process ended, how long what is still in the pipe may take
to arrive; a background child holding the pipe open does not make the call wait."""

DRAIN_AFTER_STOP = 1.0
"""After the stop, how long to read what the killed processes had already written."""

GATE = 'read _ || exit 125; exec "$0" -c "$1" </dev/null'
"""Without the native spawner, in a cgroup, the shell first waits on stdin until it has
been moved in, so that nothing it starts is born outside; then it becomes the command's
shell (same pid). If treadle dies before it opens the gate, the command never starts.
(The spawner starts the command in its cgroup from birth: no gate, no migration.)"""


_GATE_SHELL = "/bin/sh" if os.access("/bin/sh", os.X_OK) else "/bin/bash"


class _OutputReader:
    """Feeds the merged stdout and stderr into the bound (and the spill) as it arrives.

    The pipe is read straight from the event loop's selector: no transport, so nothing
    is buffered beyond one read, and closing it is ours to decide.
    """

    CHUNK = 256 * 1024

    def __init__(
        self,
        pipe: int,
        bound: OutputBound,
        spill: OutputSpill | None,
        on_output: Callable[[bytes], None] | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._pipe: int | None = pipe
        self._bound = bound
        self._spill = spill
        self._on_output = on_output
        self.finished: asyncio.Future[None] = self._loop.create_future()
        os.set_blocking(pipe, False)
        self._loop.add_reader(pipe, self._read)

    def _read(self) -> None:
        if self._pipe is None:
            return
        try:
            data = os.read(self._pipe, self.CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        if self._spill is not None:
            self._spill.take(data, self._bound)
        self._bound.feed(data)
        if self._on_output is not None:
            self._on_output(data)

    def close(self) -> None:
        if self._pipe is not None:
            self._loop.remove_reader(self._pipe)
            os.close(self._pipe)
            self._pipe = None
        if not self.finished.done():
            self.finished.set_result(None)


class _Process(Protocol):
    """What the runner needs of the command's process: a Popen, or the spawner's child."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...


class _Spawned:
    """The command the native spawner started: treadle's own child (CLONE_PARENT), but
    not a Popen's, so waited for here."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._collect(os.WNOHANG)

    def wait(self) -> int:
        code = self._collect(0)
        return code if code is not None else 0

    def _collect(self, flags: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:  # collected elsewhere: its status is lost
                return None
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class _ExitWatch:
    """A future for the end of the command's own process.

    A pidfd in the event loop costs no thread; without one, a thread waits.
    """

    def __init__(self, process: _Process) -> None:
        self._loop = asyncio.get_running_loop()
        self._process = process
        self.ended: asyncio.Future[None] = self._loop.create_future()
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
            waiting = self._loop.run_in_executor(None, process.wait)
            waiting.add_done_callback(lambda _: self._settle())
        else:
            self._loop.add_reader(self._pidfd, self._reap)

    def _reap(self) -> None:
        self.close()
        self._process.wait()  # it has ended: this only collects the status
        self._settle()

    def _settle(self) -> None:
        if not self.ended.done():
            self.ended.set_result(None)

    def close(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


class SubprocessRunner:
    """Runs commands with ``bash -c`` (``sh -c`` without bash), following the port.

    ``passthrough_env`` names variables that look like secrets but may reach the
    command; ``grace`` is the time between SIGTERM and SIGKILL; ``spill_cap`` is the
    largest full-output file kept when the bound cuts; ``redactor`` takes secrets out
    of that file. ``cgroups`` runs each command in a cgroup of its own where the
    kernel allows it (False: only the other ways of finding a command's processes).
    ``spawner`` False starts commands as without the built native spawner: the Python
    helper confines them, and a migration and a gate put them in their cgroups.
    """

    def __init__(
        self,
        *,
        passthrough_env: Collection[str] = (),
        grace: float = 2.0,
        shell: str | None = None,
        spill_cap: int = SPILL_CAP,
        redactor: Redactor | None = None,
        cgroups: bool = True,
        sandbox: Sandbox | None = None,
        spawner: bool = True,
    ) -> None:
        self._cgroups = cgroups
        self._spawner = spawner
        self._sandbox = sandbox
        self._passthrough = frozenset(passthrough_env)
        self._redactor = redactor
        self._grace = grace
        self._spill_cap = spill_cap
        self._shell = shell or ("/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh")

    def allow_host(self, host: str, grant: HostGrant) -> None:
        """A yes to a host the allowlist refused: the session's proxy lets it through
        (once, or for the session)."""
        if self._sandbox is not None:
            self._sandbox.allow_host(host, grant)

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]:
        bound = OutputBound(spec.output_limit)
        spill = (
            OutputSpill(spec.spill_dir, self._spill_cap, self._redactor) if spec.spill_dir else None
        )
        run_id = os.urandom(16).hex()
        become_subreaper()
        match self._sandbox.launch() if self._sandbox is not None else Success(UNCONFINED):
            case Failure(reason):
                return Failure(ProcessError(reason, blocked=True))
            case Success(launch):
                pass
        home = cgroup_home() if self._cgroups else None
        cgroup = home.command_group(run_id) if home is not None else None
        started = time.monotonic()
        match self._start(spec, run_id, cgroup, launch):
            case Failure() as failure:
                launch.finished()
                if cgroup is not None:
                    cgroup.remove()
                return failure
            case Success((helper, pipe, cgroup, start)):
                if cgroup is not None and home is not None:
                    watch_cgroup(home.path)
        process: _Process = helper
        active_commands.add(helper.pid)
        tree = running_trees[helper.pid] = CommandTree(
            helper.pid, run_id, cgroup, start_time(helper.pid)
        )
        reader = _OutputReader(pipe, bound, spill, spec.on_output)
        try:
            status = await self._let_start(tree, start, spec.timeout)
            if status.spawned:
                process = self._spawned(tree, helper, status.spawned)
            elif status.outside and tree.cgroup is not None:
                _refused(tree.cgroup, home)
                tree.cgroup = None
            # Followed to its end either way: a helper that could not confine itself
            # has ended (or is ending), and is reaped like any command.
            left = spec.timeout - (time.monotonic() - started)
            timed_out = await self._follow(tree, process, reader, left)
            hosts = launch.refused_hosts()
        finally:
            reader.close()
            start.close()
            if process is not helper:  # the spawner ended long ago: collect it
                helper.wait()
                active_commands.discard(helper.pid)
            active_commands.discard(process.pid)
            running_trees.pop(process.pid, None)
            if not running_trees and tree.may_have_leftovers():
                # An orphan that two runs could have started was left to the last of
                # them; this was it.
                tree.kill_now()
            if tree.cgroup is not None:
                tree.cgroup.remove()
            launch.finished()
            if spill is not None:
                spill.close()
        if status.failure:  # the command never ran
            why = f"the sandbox could not be set up: {status.failure}"
            return Failure(ProcessError(why, blocked=True))
        result = _result(process, bound, spill, time.monotonic() - started, timed_out)
        if hosts:  # the proxy's refusals, after the output: the model's and the screen's
            from treadle.domain.rules.network import refusal_lines  # not at start-up

            refused = refusal_lines(hosts)
            apart = "\n" if result.output and not result.output.endswith("\n") else ""
            if spec.on_output is not None:
                spec.on_output((apart + "".join(f"{line}\n" for line in refused)).encode())
            output = "\n".join((result.output.rstrip("\n"), *refused)).lstrip("\n")
            offer = self._sandbox.offerable(hosts) if self._sandbox is not None else ()
            result = dataclasses.replace(result, output=output, refused_hosts=offer)
        return Success(result)

    @staticmethod
    def _spawned(tree: CommandTree, helper: subprocess.Popen[bytes], pid: int) -> _Process:
        """The spawner started the command as ``pid`` and is ending: follow that instead.
        (The spawner stays among the active commands until it is collected, so that no
        cleanup collects it first.)"""
        command = _Spawned(pid)
        active_commands.add(pid)
        running_trees[pid] = tree
        running_trees.pop(helper.pid, None)
        tree.leader, tree.started = pid, start_time(pid)
        return command

    def _start(
        self, spec: ProcessSpec, run_id: str, cgroup: CommandGroup | None, launch: Launch
    ) -> Result[tuple[subprocess.Popen[bytes], int, CommandGroup | None, Start], ProcessError]:
        """Fork and exec what starts the command, confined as ``launch`` says, in
        ``cgroup`` if there is one (the result says whether it still is: without the
        native spawner the process is moved in, which the kernel may refuse); quick
        enough not to need a thread. Without the spawner, in a cgroup, the command waits
        behind a gate: its write end comes back in the start, for :meth:`_let_start`."""
        if not os.path.isdir(spec.cwd):
            what = "not a folder" if os.path.exists(spec.cwd) else "no such folder"
            return Failure(ProcessError(f"cannot run in {spec.cwd}: {what}"))
        ensure_watchdog()
        environment = child_environment(
            os.environ,
            passthrough=self._passthrough,
            extra={**launch.env, **spec.env},
            run_id=run_id,
            owner=OWNER_MARKER,
        )
        # Ours is the parent's folder; programs that trust $PWD would be misled.
        environment.setdefault("PWD", os.path.abspath(spec.cwd))
        folder = cgroup.open() if cgroup is not None else -1
        start = plan_start(
            launch.ruleset,
            folder,
            native=self._spawner,
            network=launch.network,
            channel=launch.channel[1],
            port=launch.proxy.port if launch.proxy is not None else 0,
        )
        read_end, write_end = os.pipe()
        gate_read, gate_write = os.pipe() if start.gated else (None, None)
        command = [self._shell, "-c", spec.command]
        if gate_read is not None:
            command = [_GATE_SHELL, "-c", GATE, self._shell, spec.command]
        try:
            process = subprocess.Popen(
                [*start.prefix, *command],
                cwd=spec.cwd,
                env=environment,
                stdin=subprocess.DEVNULL if gate_read is None else gate_read,
                stdout=write_end,
                stderr=write_end,
                start_new_session=True,
                pass_fds=start.pass_fds,  # the status pipe, the ruleset, the cgroup
            )
        except (OSError, ValueError) as error:
            os.close(read_end)
            if gate_write is not None:
                os.close(gate_write)
            start.close()
            return Failure(ProcessError(str(error)))
        finally:
            # Only the command may hold the write end, or the pipe would never end.
            os.close(write_end)
            if gate_read is not None:
                os.close(gate_read)
            if folder >= 0:
                os.close(folder)
            start.started()
            launch.started()
        start.gate = gate_write if gate_write is not None else -1
        if start.gated and cgroup is not None and not cgroup.adopt(process.pid):
            cgroup = None
        return Success((process, read_end, cgroup, start))

    async def _let_start(self, tree: CommandTree, start: Start, timeout: float) -> Status:
        """Wait until what started the command says it is confined and placed; with a
        gate, open it then (and never when it could not be: the command never starts).
        A start that has not got there by the deadline is left to the deadline."""
        gate = start.gate
        start.gate = -1
        try:
            said = await start.said(timeout)
        except BaseException:  # stopped while the helper starts: nothing of it survives
            if gate >= 0:
                os.close(gate)
            await tree.stop(self._grace)
            raise
        if gate < 0:
            return said
        try:
            if not (said.failure or said.late):
                os.write(gate, b"\n")  # open the gate: the command starts now
        except BrokenPipeError:
            pass  # its shell ended before the gate opened: how it ended is the result
        finally:
            os.close(gate)  # shut for good: a shell still waiting leaves, running nothing
        return said

    async def _follow(
        self,
        tree: CommandTree,
        process: _Process,
        reader: _OutputReader,
        timeout: float,
    ) -> bool:
        """Read until the command ends or its deadline; stop what it left; say if timed out."""
        exit_watch = _ExitWatch(process)
        try:
            timed_out = not await _settled(exit_watch.ended, max(0.0, timeout))
            # Its own process ended: whatever still holds the pipe, or still runs, is
            # a leftover to stop, not a reason to wait.
            if (
                timed_out
                or not await _settled(reader.finished, DRAIN_AFTER_EXIT)
                or tree.may_have_leftovers()
            ):
                await tree.stop(self._grace)
            await _settled(reader.finished, DRAIN_AFTER_STOP)
            await _settled(exit_watch.ended, DRAIN_AFTER_STOP)
        except BaseException:
            # Cancelled (Esc, a caller's stop) or a bug: nothing of the command survives
            # us; tree.stop re-raises if it is cancelled in turn, after a SIGKILL.
            await tree.stop(self._grace)
            raise
        finally:
            reader.close()
            exit_watch.close()
            if process.returncode is None:
                process.poll()
        return timed_out


async def _settled(future: asyncio.Future[None], timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``future``; whether it is done."""
    if not future.done():
        await asyncio.wait([future], timeout=timeout)
    return future.done()


def _refused(cgroup: CommandGroup, home: CgroupHome | None) -> None:
    """The kernel put the command in no cgroup: none for it, nor for those after it."""
    if home is not None:
        home.usable = False
    cgroup.remove()


def _result(
    process: _Process,
    bound: OutputBound,
    spill: OutputSpill | None,
    duration: float,
    timed_out: bool,
) -> ProcessResult:
    code = process.returncode
    saved = spill.path if spill is not None and spill.problem is None else None
    return ProcessResult(
        output=bound.text(spill.note() if spill is not None else ""),
        exit_code=code if code is not None and code >= 0 else None,
        signal=-code if code is not None and code < 0 else None,
        duration=duration,
        timed_out=timed_out,
        truncated=bound.truncated,
        omitted_bytes=bound.omitted,
        full_output_path=saved if bound.truncated else None,
    )
