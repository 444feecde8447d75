"""How a command's process is started: by the native spawner, or by the Python helper.

The spawner (``treadle-spawn``, built by ``make`` from :file:`spawn.c`) confines itself
with the session's ruleset and starts the command with ``clone3(CLONE_INTO_CGROUP |
CLONE_PARENT)``: born in its cgroup (no migration, which waits in the kernel) as
treadle's own child, in a session of its own. It costs one exec of a small C program;
it is not done in a ``preexec_fn`` because that forks all of treadle (no vfork) and runs
Python in the child of a threaded process, nor with ``clone3`` from Python, which
cannot run safely in the child of a raw system call.

Without the built spawner (no C compiler at install, a copy without it, a source newer
than the binary), a command starts as before: the Python helper
(:mod:`.confine_exec`) confines it, and in a cgroup it waits behind a gate until the
runner has moved it in. Either way the command starts only once what started it has
said it is confined, on the status pipe.

Example::

    start = plan_start(launch.ruleset, cgroup_fd, network="off")
    process = Popen([*start.prefix, "/bin/bash", "-c", command], pass_fds=start.pass_fds)
    start.started()
    said = await start.said(timeout)   # Status(spawned=4242) / Status(failure="...")
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
from dataclasses import dataclass

from treadle.adapters.sandbox.landlock import Ruleset
from treadle.domain.rules.network import StartNetwork

HERE = os.path.dirname(os.path.abspath(__file__))
SPAWNER = os.path.join(HERE, "treadle-spawn")
SOURCE = os.path.join(HERE, "spawn.c")
PROTOCOL = "2"
"""The spawner's first argument; one built from another version of spawn.c refuses it."""
HELPER = os.path.join(HERE, "confine_exec.py")

STATUS_LIMIT = 4096
"""Bytes read of what the helper says (one line)."""


@functools.cache
def native_spawner() -> str | None:
    """The built spawner, or None: not built, older than its source, or not one that
    runs here and speaks this protocol (a folder mounted noexec, another machine's
    build). Asked once a process: one exec of it, told no command, must say its usage."""
    try:
        built, source = os.stat(SPAWNER), os.stat(SOURCE)
    except OSError:
        return None
    if built.st_mtime < source.st_mtime or not os.access(SPAWNER, os.X_OK):
        return None
    try:
        answer = subprocess.run(
            [SPAWNER], stdin=subprocess.DEVNULL, capture_output=True, check=False, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    usage = f"usage: treadle-spawn {PROTOCOL} ".encode()
    return SPAWNER if answer.returncode == 2 and answer.stderr.startswith(usage) else None


def confined_by() -> str:
    """What applies the ruleset to each command (for ``make bench``)."""
    return "the native spawner" if native_spawner() else "the Python exec helper"


@dataclass(frozen=True, slots=True)
class Status:
    """What the start said: ``failure`` (why it could not confine itself), ``spawned``
    (the command's pid, when it is not the started process itself), ``outside`` (no
    cgroup took it), or ``late`` (nothing by the deadline)."""

    failure: str = ""
    spawned: int = 0
    outside: bool = False
    late: bool = False


@dataclass
class Start:
    """The argv prefix and descriptors of one command's start. ``gated``: the runner
    moves the process into its cgroup and opens the gate (no native spawner).
    ``status`` is the pipe (read end, write end) on which the start speaks; ``gate``
    the write end of the gate, once the process exists."""

    prefix: tuple[str, ...] = ()
    pass_fds: tuple[int, ...] = ()
    status: tuple[int, int] = (-1, -1)
    gated: bool = False
    gate: int = -1

    def started(self) -> None:
        """Once the process exists: only it may hold the write end, or the pipe never ends."""
        reading, writing = self.status
        if writing >= 0:
            os.close(writing)
            self.status = (reading, -1)

    async def said(self, timeout: float) -> Status:
        """What the start said once it became the command (or ended)."""
        if self.status[0] < 0:
            return Status()
        try:
            raw = await asyncio.wait_for(
                _read_to_end(self.status[0], STATUS_LIMIT), max(0.0, timeout)
            )
        except TimeoutError:
            return Status(late=True)
        finally:
            self.close()
        return parse_status(raw.decode("utf-8", "replace"))

    def close(self) -> None:
        self.started()
        if self.gate >= 0:
            os.close(self.gate)
            self.gate = -1
        reading = self.status[0]
        if reading >= 0:
            os.close(reading)
            self.status = (-1, -1)


def parse_status(said: str) -> Status:
    """
    >>> parse_status("spawned 42\\n").spawned, parse_status("outside\\n").outside
    (42, True)
    >>> parse_status("") == Status()
    True
    >>> parse_status("treadle sandbox: landlock_restrict_self: Bad file descriptor\\n").failure
    'landlock_restrict_self: Bad file descriptor'
    """
    line = said.strip()
    if line.startswith("spawned ") and line[8:].isdigit():
        return Status(spawned=int(line[8:]))
    if line == "outside":
        return Status(outside=True)
    return Status(failure=line.removeprefix("treadle sandbox: "))


def plan_start(
    ruleset: Ruleset | None,
    cgroup: int,
    *,
    native: bool = True,
    network: StartNetwork = "on",
    channel: int = -1,
    port: int = 0,
) -> Start:
    """How to start a command confined by ``ruleset`` (None: not) in the cgroup open as
    ``cgroup`` (-1: none), under ``network`` (anything but on: the socket filter, which
    needs a ruleset). Under allowlist, ``channel`` (or -1) is the Unix socket on which
    the start hands treadle the proxy's ``port`` in the command's own network.
    ``native`` False keeps to the Python helper."""
    rules = ruleset.fd if ruleset is not None else -1
    spawner = native_spawner() if native else None
    proxy = (str(channel), str(port))
    extra = (channel,) if channel >= 0 else ()
    if spawner is not None and (rules >= 0 or cgroup >= 0):
        reading, writing = os.pipe()
        prefix: tuple[str, ...] = (
            *(spawner, PROTOCOL, str(writing), str(rules), str(cgroup), network, *proxy, "--"),
        )
        fds = tuple(fd for fd in (writing, rules, cgroup, *extra) if fd >= 0)
        return Start(prefix, fds, (reading, writing))
    if rules >= 0:
        reading, writing = os.pipe()
        prefix = (sys.executable, "-I", "-S", HELPER, str(rules), str(writing), network, *proxy)
        return Start(
            (*prefix, "--"), (rules, writing, *extra), (reading, writing), gated=cgroup >= 0
        )
    return Start(gated=cgroup >= 0)


async def _read_to_end(descriptor: int, limit: int) -> bytes:
    """What comes through a pipe until its last writer closes it, or up to a line that
    says what the spawner spawned (``limit`` bytes kept), read from the event loop:
    nothing waits in a thread."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    said = bytearray()

    def readable() -> None:
        try:
            data = os.read(descriptor, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        said.extend(data[: max(0, limit - len(said))])
        # The spawner's last word: its child need not have become the command yet.
        spawned = said.startswith(b"spawned ") and said.endswith(b"\n")
        if (not data or spawned) and not ended.done():
            ended.set_result(None)

    os.set_blocking(descriptor, False)
    loop.add_reader(descriptor, readable)
    try:
        await ended
    finally:
        loop.remove_reader(descriptor)
    return bytes(said)
