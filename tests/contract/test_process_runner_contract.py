"""One contract for every ProcessRunner: the fake plays by the rules the real one keeps.

Each case gives a command for the real runner and the FakeProcess that stands for it.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from returns.result import Success

from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner
from treadle.adapters.process import SubprocessRunner
from treadle.domain.values.process import ProcessResult, ProcessSpec
from treadle.ports.process import ProcessRunner

SEQUENCE = "".join(f"{n}\n" for n in range(1, 10_001))


@dataclass(frozen=True, slots=True)
class Case:
    command: str
    fake: FakeProcess
    timeout: float = 30.0
    output_limit: int = 30_000


Run = Callable[[Case], Awaitable[ProcessResult]]


@pytest.fixture(params=["fake", "real"])
def run(request: pytest.FixtureRequest, tmp_path: Path) -> Run:
    async def run_case(case: Case) -> ProcessResult:
        runner: ProcessRunner
        if request.param == "fake":
            runner = FakeRunner(FakeClock(), {case.command: case.fake})
        else:
            runner = SubprocessRunner(grace=1.0)
        spec = ProcessSpec(
            case.command, cwd=str(tmp_path), timeout=case.timeout, output_limit=case.output_limit
        )
        outcome = await runner.run(spec)
        assert isinstance(outcome, Success), outcome
        result = outcome.unwrap()
        assert isinstance(result, ProcessResult)
        return result

    return run_case


async def test_output_and_a_clean_exit(run: Run) -> None:
    result = await run(Case("printf 'hello\\nworld\\n'", FakeProcess("hello\nworld\n")))

    assert result.output == "hello\nworld\n"
    assert (result.exit_code, result.signal) == (0, None)
    assert not (result.timed_out or result.truncated)
    assert result.omitted_bytes == 0


async def test_the_exit_code_is_reported(run: Run) -> None:
    result = await run(Case("echo failing; exit 3", FakeProcess("failing\n", exit_code=3)))

    assert result.output == "failing\n"
    assert (result.exit_code, result.signal) == (3, None)


async def test_a_signal_is_reported_instead_of_an_exit_code(run: Run) -> None:
    result = await run(Case("kill -KILL $$", FakeProcess(signal=signal.SIGKILL)))

    assert (result.exit_code, result.signal) == (None, signal.SIGKILL)
    assert not result.timed_out


async def test_bytes_that_are_not_utf8_are_replaced(run: Run) -> None:
    result = await run(Case("printf 'caf\\351 \\377ok\\n'", FakeProcess(b"caf\xe9 \xffok\n")))

    assert result.output == "caf\ufffd \ufffdok\n"


async def test_the_bound_keeps_head_and_tail_and_counts_the_rest(run: Run) -> None:
    case = Case("seq 1 10000", FakeProcess(SEQUENCE), output_limit=1_000)

    result = await run(case)

    assert result.truncated
    assert result.omitted_bytes == len(SEQUENCE) - 1_000
    assert result.output.startswith("1\n2\n3\n")
    assert result.output.endswith("9999\n10000\n")
    assert f"[... {len(SEQUENCE) - 1_000:,} bytes (" in result.output
    assert result.exit_code == 0


async def test_the_deadline_stops_the_command_and_keeps_its_output(run: Run) -> None:
    case = Case(
        "echo before; sleep 30; echo after", FakeProcess("before\n", duration=30.0), timeout=1.0
    )

    result = await run(case)

    assert result.timed_out
    assert result.output == "before\n"
    assert result.exit_code is None
    assert result.signal in (signal.SIGTERM, signal.SIGKILL)
    assert result.duration >= 1.0


async def test_a_hidden_background_child_does_not_hold_the_call(run: Run) -> None:
    # It leaves the session and clears its environment; the call still ends with the shell.
    case = Case("setsid env -i sleep 30 & echo started", FakeProcess("started\n"))

    result = await run(case)

    assert result.output == "started\n"
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.duration < 10
