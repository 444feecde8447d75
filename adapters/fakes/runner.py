"""A process runner that plays scripted results and honours deadlines on the clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from returns.result import Failure, Result, Success

from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.process import HostGrant, ProcessError, ProcessResult, ProcessSpec
from treadle.ports.clock import Clock

SIGTERM = 15


@dataclass(frozen=True, slots=True)
class FakeProcess:
    """What a scripted command prints, how it ends, and how long it takes.

    ``early`` is printed as the command starts, before its ``duration`` passes (what
    a stop finds it had printed); ``output`` follows it at the end.
    """

    output: bytes | str = b""
    exit_code: int = 0
    duration: float = 0.0
    signal: int | None = None
    early: bytes | str = b""
    refused_hosts: tuple[str, ...] = ()
    """Hosts an allowlist refused it (those :meth:`FakeRunner.allow_host` has let
    through are not)."""


class FakeRunner:
    """The ProcessRunner port without processes.

    ``script`` maps a command line to its :class:`FakeProcess` (or is a function of
    the command); an unknown command exits 127. A command longer than its deadline
    ends at the deadline, timed out, killed. ``specs`` keeps every spec it ran.

    Example::

        runner = FakeRunner(clock, {"make test": FakeProcess("ok\\n", duration=3.0)})
    """

    def __init__(
        self,
        clock: Clock,
        script: Mapping[str, FakeProcess] | Callable[[str], FakeProcess] | None = None,
    ) -> None:
        self._clock = clock
        self._script = script or {}
        self.specs: list[ProcessSpec] = []
        self.grants: list[tuple[str, HostGrant]] = []
        """Every host let through by a yes, with how (``allow_host``)."""
        self._used: set[int] = set()

    def allow_host(self, host: str, grant: HostGrant) -> None:
        self.grants.append((host, grant))

    def _lookup(self, command: str) -> FakeProcess:
        if callable(self._script):
            return self._script(command)
        return self._script.get(
            command,
            FakeProcess(
                f"bash: {command.split()[0] if command.split() else ''}: command not found\n", 127
            ),
        )

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]:
        self.specs.append(spec)
        if not spec.command.strip():
            return Failure(ProcessError("empty command"))
        process = self._lookup(spec.command)
        timed_out = process.duration > spec.timeout
        early = _raw(process.early)
        if early and spec.on_output is not None:
            spec.on_output(early)
        await self._clock.sleep(min(process.duration, spec.timeout))
        rest = _raw(process.output)
        if rest and spec.on_output is not None:
            spec.on_output(rest)
        bounded = OutputBound.of(early + rest, spec.output_limit)
        return Success(
            ProcessResult(
                output=bounded.text(),
                exit_code=None if timed_out or process.signal else process.exit_code,
                signal=SIGTERM if timed_out else process.signal,
                duration=min(process.duration, spec.timeout),
                timed_out=timed_out,
                truncated=bounded.truncated,
                omitted_bytes=bounded.omitted,
                refused_hosts=tuple(h for h in process.refused_hosts if not self._granted(h)),
            )
        )

    def _granted(self, host: str) -> bool:
        """Whether a grant lets ``host`` through now (a once is used up)."""
        for index, (name, grant) in enumerate(self.grants):
            if name == host and grant == "always":
                return True
            if name == host and grant == "once" and index not in self._used:
                self._used.add(index)
                return True
        return False


def _raw(output: bytes | str) -> bytes:
    return output.encode() if isinstance(output, str) else output
