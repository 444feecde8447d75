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
    variables it gets. :meth:`started` once the process exists, :meth:`finished` once
    it has ended (a read-only command's scratch folder goes then)."""

    prefix: tuple[str, ...] = ()
    pass_fds: tuple[int, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    ruleset: Ruleset | None = None
    scratch: str = ""

    def started(self) -> None:
        if self.ruleset is not None:
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
        prefix = (sys.executable, "-I", "-S", HELPER, str(ruleset.fd), "--")
        return Success(Launch(prefix, (ruleset.fd,), env, ruleset, scratch))

    def _cache_folder(self) -> str:
        if not self.cache:
            return ""
        with contextlib.suppress(OSError):
            os.makedirs(self.cache, mode=0o700, exist_ok=True)
            return os.path.realpath(self.cache)
        return ""
