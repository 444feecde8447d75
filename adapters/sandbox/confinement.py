"""Confining the commands a session runs: the setting, the kernel, and how each starts.

Example::

    sandbox = Sandbox("workspace-write", "/src/app")
    match sandbox.launch():
        case Success(launch):   # argv = [*launch.prefix, "/bin/bash", "-c", command]
            ...
        case Failure(reason):   # confinement asked for and impossible: do not run
            ...
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from treadle.adapters.sandbox.landlock import (
    DEVICES,
    SHARED_MEMORY,
    LandlockError,
    Ruleset,
    prepare,
    probe,
)
from treadle.domain.rules.sandbox import (
    Blocked,
    Confine,
    SandboxDecision,
    SandboxMode,
    SandboxSupport,
    Unconfined,
    cache_environment,
    decide_sandbox,
    writable_folders,
)

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "confine_exec.py")


@dataclass
class Launch:
    """How one command starts: what goes before its argv, the descriptors it keeps, the
    variables it gets. :meth:`started` once the process exists, :meth:`confinement`
    before the command may run, :meth:`finished` once it has ended (a read-only
    command's scratch folder goes then).

    ``status`` is the pipe (read end, write end) on which the exec helper says why it
    could not confine itself; it closes it unwritten by becoming the command."""

    prefix: tuple[str, ...] = ()
    pass_fds: tuple[int, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    ruleset: Ruleset | None = None
    scratch: str = ""
    status: tuple[int, int] = (-1, -1)

    def started(self) -> None:
        if self.ruleset is not None:
            self.ruleset.close()
        reading, writing = self.status
        if writing >= 0:  # only the helper may hold it, or the pipe would never end
            os.close(writing)
            self.status = (reading, -1)

    async def confinement(self, timeout: float) -> str | None:
        """Once the helper has become the command (or ended): "" when it is confined
        (or needs no helper), else why it could not confine itself; None when it has
        not got that far in ``timeout`` seconds."""
        reading = self.status[0]
        if reading < 0:
            return ""
        try:
            said = await asyncio.wait_for(_read_to_end(reading, STATUS_LIMIT), max(0.0, timeout))
        except TimeoutError:
            return None
        finally:
            self._close_status()
        return said.decode("utf-8", "replace").strip().removeprefix("treadle sandbox: ")

    def finished(self) -> None:
        self.started()
        self._close_status()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = ""

    def _close_status(self) -> None:
        reading, writing = self.status
        if reading >= 0:
            os.close(reading)
            self.status = (-1, writing)


def helper_launch(ruleset: Ruleset, env: Mapping[str, str], scratch: str = "") -> Launch:
    """A command the exec helper starts, confined by ``ruleset`` (the launch owns it),
    with ``env`` added to its variables."""
    reading, writing = os.pipe()
    prefix = (sys.executable, "-I", "-S", HELPER, str(ruleset.fd), str(writing), "--")
    return Launch(prefix, (ruleset.fd, writing), env, ruleset, scratch, (reading, writing))


STATUS_LIMIT = 4096
"""Bytes read of what the helper says (one line)."""


async def _read_to_end(descriptor: int, limit: int) -> bytes:
    """What comes through a pipe until its last writer closes it (``limit`` bytes kept),
    read from the event loop: nothing waits in a thread."""
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
        if not data and not ended.done():
            ended.set_result(None)

    os.set_blocking(descriptor, False)
    loop.add_reader(descriptor, readable)
    try:
        await ended
    finally:
        loop.remove_reader(descriptor)
    return bytes(said)


UNCONFINED = Launch()


class Sandbox:
    """The sandbox of one session: ``mode`` over ``workspace``, plus ``writable`` folders
    (``sandbox_writable``) and ``cache``, the folder package managers' caches go to.

    ``explicit`` says the person chose the mode (not the default): without Landlock,
    commands are then refused rather than run unconfined. The kernel is asked once,
    when the first command starts (``support`` is how).
    """

    def __init__(
        self,
        mode: SandboxMode,
        workspace: str,
        *,
        explicit: bool = False,
        writable: Sequence[str] = (),
        cache: str = "",
        support: Callable[[], SandboxSupport] = probe,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.mode = mode
        self.workspace = os.path.realpath(workspace)
        self.explicit = explicit
        self.writable = tuple(os.path.realpath(os.path.expanduser(p)) for p in writable)
        self.cache = cache
        self._support = support
        self._environ = environ

    @functools.cached_property
    def support(self) -> SandboxSupport:
        return self._support() if self.mode != "off" else SandboxSupport(0, "off")

    @functools.cached_property
    def decision(self) -> SandboxDecision:
        return decide_sandbox(self.mode, self.explicit, self.support)

    @property
    def warning(self) -> str:
        """What the person should be told once: commands will run unconfined, and why."""
        decision = self.decision
        return decision.warning if isinstance(decision, Unconfined) else ""

    def launch(self) -> Result[Launch, str]:
        """How the next command starts; Failure(why) when it must not start at all."""
        match self.decision:
            case Unconfined():
                return Success(UNCONFINED)
            case Blocked(reason=reason):
                return Failure(reason)
            case Confine(mode=mode):
                return self._confined(mode)
        raise AssertionError("unreachable")

    def _confined(self, mode: SandboxMode) -> Result[Launch, str]:
        if not sys.executable:
            return Failure(
                "the sandbox needs a Python interpreter to start commands, and none is known"
            )
        scratch = tempfile.mkdtemp(prefix="treadle-scratch-") if mode == "read-only" else ""
        env: dict[str, str] = {}
        if scratch:
            env.update(TMPDIR=scratch, TMP=scratch, TEMP=scratch)
        cache = self._cache_folder() if mode == "workspace-write" else ""
        if cache:
            env.update(cache_environment(cache, list(self._environ)))
        temporary = (os.path.realpath(tempfile.gettempdir()), "/tmp", SHARED_MEMORY)
        folders = writable_folders(
            mode,
            self.workspace,
            temporary=temporary,
            extra=self.writable,
            cache=cache,
            scratch=scratch,
        )
        try:
            ruleset = prepare(folders, self.support, devices=DEVICES)
        except LandlockError as error:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            return Failure(f"the sandbox could not be set up: {error.strerror or error}")
        return Success(helper_launch(ruleset, env, scratch))

    def _cache_folder(self) -> str:
        if not self.cache:
            return ""
        with contextlib.suppress(OSError):
            os.makedirs(self.cache, mode=0o700, exist_ok=True)
            return os.path.realpath(self.cache)
        return ""
