"""Confining the commands a session runs: the setting, the kernel, and how each starts.

Example::

    sandbox = Sandbox("workspace-write", "/src/app")
    match sandbox.launch():
        case Success(launch):   # confined by launch.ruleset (see spawner.plan_start)
            ...
        case Failure(reason):   # confinement asked for and impossible: do not run
            ...
"""

from __future__ import annotations

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
from treadle.adapters.sandbox.spawner import native_spawner
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


@dataclass
class Launch:
    """What the sandbox asks of one command: the ``ruleset`` to confine it with (None:
    unconfined), the variables ``env`` adds, and ``scratch``, a read-only command's
    folder. :meth:`started` once the process exists, :meth:`finished` once it has ended
    (the scratch folder goes then). A ruleset the launch ``owns`` (read-only's, made for
    its scratch folder) is closed once the command started; the session's stays open.

    How the process starts (the native spawner or the Python helper) is
    :func:`~treadle.adapters.sandbox.spawner.plan_start`'s to say."""

    env: Mapping[str, str] = field(default_factory=dict)
    ruleset: Ruleset | None = None
    scratch: str = ""
    owns: bool = False

    def started(self) -> None:
        if self.owns and self.ruleset is not None:
            self.ruleset.close()

    def finished(self) -> None:
        self.started()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = ""


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
        self._kept: tuple[tuple[tuple[int, int], ...], Ruleset] | None = None

    def allow_writing(self, folder: str) -> None:
        """Let the session's next commands write ``folder`` too (a sub-agent's worktree):
        the next ruleset names it."""
        path = os.path.realpath(folder)
        if path not in self.writable:
            self.writable = (*self.writable, path)

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
        if not sys.executable and native_spawner() is None:
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
            if scratch:  # a folder of its own: a ruleset of its own (a tenth of a ms)
                return Success(Launch(env, prepare(folders, self.support), scratch, owns=True))
            return Success(Launch(env, self._session_ruleset(folders)))
        except LandlockError as error:
            if scratch:
                shutil.rmtree(scratch, ignore_errors=True)
            return Failure(f"the sandbox could not be set up: {error.strerror or error}")

    def _session_ruleset(self, folders: Sequence[str]) -> Ruleset:
        """The session's ruleset, built once and kept while every folder it names is the
        same folder: rules bind inodes, so one deleted and made again (or made since)
        gets a new ruleset."""
        identity = _identities((*folders, *DEVICES))
        if self._kept is not None and self._kept[0] == identity:
            return self._kept[1]
        ruleset = prepare(folders, self.support, devices=DEVICES)
        if self._kept is not None:
            self._kept[1].close()  # the commands it started keep their own copy
        self._kept = (identity, ruleset)
        return ruleset

    def _cache_folder(self) -> str:
        if not self.cache:
            return ""
        with contextlib.suppress(OSError):
            os.makedirs(self.cache, mode=0o700, exist_ok=True)
            return os.path.realpath(self.cache)
        return ""


def _identities(paths: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """(device, inode) of each path, (0, 0) for one that is not there."""
    found = []
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            found.append((0, 0))
        else:
            found.append((info.st_dev, info.st_ino))
    return tuple(found)
