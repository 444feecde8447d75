"""What confines a command: the sandbox mode, the folders it may write, and what to do
when the kernel cannot confine it.

Example::

    >>> decide_sandbox("read-only", True, SandboxSupport(0, "no Landlock"))
    Blocked(reason='sandbox = read-only was asked for, but no Landlock')
    >>> writable_folders("workspace-write", "/src", temporary=("/tmp",), extra=("/opt/c",))
    ('/src', '/tmp', '/opt/c')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

SandboxMode = Literal["workspace-write", "read-only", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("workspace-write", "read-only", "off")
DEFAULT_SANDBOX: SandboxMode = "workspace-write"

CACHE_FOLDERS = {
    "npm_config_cache": "npm",
    "PIP_CACHE_DIR": "pip",
    "UV_CACHE_DIR": "uv",
    "GOCACHE": "go-build",
    "GOMODCACHE": "go-mod",
    "XDG_CACHE_HOME": "xdg",
}
"""Where package managers keep their caches, and the sub-folder of each. Under
``workspace-write`` they point into a folder of treadle's own (unless the user set
them): the user's caches stay out of reach, since what a command writes there would
run later, unconfined."""


@dataclass(frozen=True, slots=True)
class SandboxSupport:
    """What the kernel offers: a Landlock ABI version, or 0 and why there is none."""

    abi: int
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.abi > 0


@dataclass(frozen=True, slots=True)
class Confine:
    """Every command runs confined in ``mode``."""

    mode: SandboxMode


@dataclass(frozen=True, slots=True)
class Unconfined:
    """Commands run as they are; ``warning`` (shown once) says why, empty for ``off``."""

    warning: str = ""


@dataclass(frozen=True, slots=True)
class Blocked:
    """Confinement was asked for and cannot be had: no command runs, each call says why."""

    reason: str


SandboxDecision = Confine | Unconfined | Blocked


def decide_sandbox(mode: SandboxMode, explicit: bool, support: SandboxSupport) -> SandboxDecision:
    """What commands get, from the setting (``explicit`` when the person chose it, not
    the default) and the kernel: an explicit choice is never quietly dropped; the
    default warns and runs unconfined, so treadle still works on such a kernel."""
    if mode == "off":
        return Unconfined()
    if support.available:
        return Confine(mode)
    if explicit:
        return Blocked(f"sandbox = {mode} was asked for, but {support.reason}")
    return Unconfined(
        f"commands run unconfined: {support.reason} "
        "(set sandbox = off to silence this, or an explicit sandbox to refuse commands)"
    )


def writable_folders(
    mode: SandboxMode,
    workspace: str,
    *,
    temporary: Sequence[str] = (),
    extra: Sequence[str] = (),
    cache: str = "",
    scratch: str = "",
) -> tuple[str, ...]:
    """The folders a confined command may change, in ``mode``.

    ``workspace-write``: the workspace, the temporary folders, the ``sandbox_writable``
    ones and treadle's cache for the workspace. ``read-only``: only ``scratch``, a fresh
    empty temporary folder for this one command, deleted after it (many programs cannot
    start without a temporary folder; nothing written there outlives the command).
    """
    if mode == "read-only":
        return (scratch,) if scratch else ()
    if mode == "off":
        return ()
    folders = [workspace, *temporary, *extra, *([cache] if cache else [])]
    return tuple(dict.fromkeys(folders))  # in order, once each


def cache_environment(cache: str, inherited: Sequence[str]) -> dict[str, str]:
    """The cache variables to set for a command, each into ``cache``, except those the
    user already set (``inherited`` names the variables of their environment).

    >>> cache_environment("/c", ["PIP_CACHE_DIR"])["npm_config_cache"]
    '/c/npm'
    """
    given = set(inherited)
    return {name: f"{cache}/{sub}" for name, sub in CACHE_FOLDERS.items() if name not in given}
