"""The ProcessRunner port: run one shell command with a deadline and an output bound."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from returns.result import Result

from treadle.domain.values.process import HostGrant, ProcessError, ProcessResult, ProcessSpec


class ProcessRunner(Protocol):
    """Runs commands in their own process group with stdin closed.

    At the deadline, or when the awaiting task is cancelled, the whole group (and
    anything it started) is stopped: SIGTERM, then SIGKILL after a short grace.
    Cancellation re-raises after that cleanup. ``spec.on_output``, when given, is
    called with each piece of output as it is read, up to the end of that cleanup.
    """

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]: ...


@runtime_checkable
class GrantsHosts(Protocol):
    """A runner whose commands reach the network through an allowlist that a yes can
    widen: ``allow_host`` lets ``host`` through once (its next connection) or for the
    rest of the session (held in memory only, never written)."""

    def allow_host(self, host: str, grant: HostGrant) -> None: ...
