"""One command to run, and how it ended."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class ProcessSpec:
    """One command to run.

    ``timeout`` is the deadline in seconds; ``output_limit`` bounds the bytes kept
    (head and tail); ``env`` adds to the sanitised environment; when the bound cuts
    something, the whole output is saved in ``spill_dir`` (if given). ``on_output``
    is given every piece of output as it is read (stdout and stderr interleaved), all
    of it, the bound notwithstanding; it must be quick: the command's reading waits.
    """

    command: str
    cwd: str
    timeout: float
    output_limit: int = 30_000
    env: Mapping[str, str] = field(default_factory=dict)
    spill_dir: str | None = None
    on_output: Callable[[bytes], None] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """How a command ended and what it printed (stdout and stderr interleaved).

    ``exit_code`` is None when a signal ended it. ``omitted_bytes`` counts what the
    bound left out of ``output``; ``full_output_path`` then names the whole output.
    """

    output: str
    exit_code: int | None
    signal: int | None
    duration: float
    timed_out: bool = False
    truncated: bool = False
    omitted_bytes: int = 0
    full_output_path: str | None = None
    refused_hosts: tuple[str, ...] = ()
    """Host names the network proxy refused to the command that a yes could let
    through (on no ``network_deny``), each once, in the order first refused."""


HostGrant = Literal["once", "always", "no"]
"""What the person said to a host the allowlist refused: let it through once (the
next connection to it), for the rest of the session (never written anywhere), or no."""


@dataclass(frozen=True, slots=True)
class ProcessError:
    """The command could not be started at all. ``blocked``: it must not be, as things
    are (confinement was asked for and the kernel cannot give it); ``detail`` says why."""

    detail: str
    blocked: bool = False


class BackgroundState(enum.StrEnum):
    """Where a background process is, closed: what ``/processes`` and the tools go by."""

    RUNNING = "running"
    EXITED = "exited"
    """It ended by itself (its exit code or signal says how)."""
    STOPPED = "stopped"
    """``process_stop``, or the end of the session, stopped it."""
    NOT_STARTED = "not started"
    """It could not be started (``detail`` says why)."""


@dataclass(frozen=True, slots=True)
class BackgroundView:
    """One background process as it is now: its id (``bg1``…), its command, its state,
    when it started (the clock's seconds) and ended, how it ended, and how many bytes
    it printed that nobody has read yet."""

    id: str
    command: str
    state: BackgroundState
    started: float
    ended: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    unread: int = 0
    detail: str = ""
