"""The hooks a session runs, as read from the files (issue 23), and how one hook's
command ended. Apart from :mod:`treadle.domain.values.hooks` so that a session with no
hook never loads them (each dataclass costs its start-up a few compiles).
"""

from __future__ import annotations

from dataclasses import dataclass

from treadle.domain.values.hooks import DEFAULT_HOOK_TIMEOUT, HookEvent


@dataclass(frozen=True, slots=True)
class HookCommand:
    """One command of a group: a shell command line, and its deadline in seconds."""

    command: str
    timeout: float = DEFAULT_HOOK_TIMEOUT


@dataclass(frozen=True, slots=True)
class HookGroup:
    """Commands that run at ``event`` when ``matcher`` matches (``""``: always).
    ``source`` says where the group was written (a file's path)."""

    event: HookEvent
    matcher: str
    commands: tuple[HookCommand, ...]
    source: str = ""


@dataclass(frozen=True, slots=True)
class HookTable:
    """Every hook a session runs, in the order the files gave them."""

    groups: tuple[HookGroup, ...] = ()

    def __add__(self, other: HookTable) -> HookTable:
        return HookTable(self.groups + other.groups)

    def events(self) -> frozenset[HookEvent]:
        return frozenset(group.event for group in self.groups)

    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(group.source for group in self.groups))


@dataclass(frozen=True, slots=True)
class HookRun:
    """How one hook's command ended: its exit code (None: a signal, or it never
    started), what it wrote on stdout and on stderr, whether its deadline stopped it,
    and why it could not start ("" : it did)."""

    command: str
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    failure: str = ""
    timeout: float = DEFAULT_HOOK_TIMEOUT
    duration: float = 0.0
