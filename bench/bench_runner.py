"""What the runner and the search tool cost over running the same programs bare.

Every figure is a ratio against a baseline measured in the same run, so a busy machine
moves both sides. Targets: `true` ≤ 1.3× a bare ``subprocess.run``; a search ≤ 1.2× the
same rg invocation run directly; a `true` confined by the sandbox, in
its cgroup, ≤ 1.3× ``bash -c true`` + 2 ms; ≤ 50 MB above idle while a command prints 1 GB.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from returns.result import Result

import treadle
from treadle.adapters.fakes import FakeClock
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.process.cgroup import cgroup_home
from treadle.adapters.sandbox import Sandbox
from treadle.adapters.sandbox.spawner import confined_by
from treadle.adapters.tools import SearchTool
from treadle.domain.rules.network import NetworkConfine, NetworkPolicy
from treadle.domain.rules.sandbox import Confine
from treadle.domain.values.process import ProcessError, ProcessResult, ProcessSpec
from treadle.domain.values.tools import ToolLimits, ToolResult
from treadle.ports.tools import ToolContext

ROUNDS = 60
SEARCH_ROUNDS = 8
SEARCH = {"pattern": r"def __init__\(self, \*", "glob": "*.py"}

# The child measures its own peak resident set (VmHWM) before and after the 1 GB run.
MEMORY_PROBE = """
import asyncio, sys, tempfile
from treadle.adapters.process import SubprocessRunner
from treadle.domain.values.process import ProcessSpec

def peak_kib():
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM")).split()[1])

async def main():
    runner = SubprocessRunner()
    await runner.run(ProcessSpec("true", cwd=".", timeout=10))
    idle = peak_kib()
    with tempfile.TemporaryDirectory() as spill:
        spec = ProcessSpec("yes | head -c 1000000000", cwd=".", timeout=600, spill_dir=spill)
        result = (await runner.run(spec)).unwrap()
    print(idle, peak_kib(), result.omitted_bytes, result.duration)

asyncio.run(main())
"""


def _per_call(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _tenth(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 10] * 1000


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


def _timed_sync(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


async def _true_figures() -> list[str]:
    workspace = tempfile.mkdtemp(prefix="treadle-bench-runner-")
    runner = SubprocessRunner()
    sandbox = Sandbox("workspace-write", workspace)
    confined = SubprocessRunner(sandbox=sandbox)
    # As without the built spawner: the Python helper, a migration and a gate.
    helper = SubprocessRunner(sandbox=Sandbox("workspace-write", workspace), spawner=False)
    # sandbox_network = off: Landlock's TCP rules and the seccomp socket filter (issue 28).
    offline = Sandbox("workspace-write", workspace, network=NetworkPolicy("off"))
    netted = SubprocessRunner(sandbox=offline)
    # allowlist: a network namespace per command, the proxy's port handed over.
    listed = Sandbox("workspace-write", workspace, network=NetworkPolicy("allowlist", ("a.test",)))
    proxied = SubprocessRunner(sandbox=listed)
    spec = ProcessSpec("true", cwd=workspace, timeout=30)
    ours: list[float] = []
    boxed: list[float] = []
    filtered: list[float] = []
    allowlisted: list[float] = []
    helped: list[float] = []
    bare: list[float] = []
    bash: list[float] = []
    await runner.run(spec)
    await confined.run(spec)
    await helper.run(spec)
    await netted.run(spec)
    await proxied.run(spec)
    for _ in range(ROUNDS):  # interleaved, so load on the machine hits all alike
        ours.append(await _timed(lambda: runner.run(spec)))
        boxed.append(await _timed(lambda: confined.run(spec)))
        filtered.append(await _timed(lambda: netted.run(spec)))
        allowlisted.append(await _timed(lambda: proxied.run(spec)))
        helped.append(await _timed(lambda: helper.run(spec)))
        bare.append(_timed_sync(lambda: subprocess.run(["true"], check=True)))
        bash.append(_timed_sync(lambda: subprocess.run(["/bin/bash", "-c", "true"], check=True)))
    listed.close()
    os.rmdir(workspace)
    runner_ms, bare_ms, bash_ms = _per_call(ours), _per_call(bare), _per_call(bash)
    boxed_ms, helped_ms, filtered_ms = _per_call(boxed), _per_call(helped), _per_call(filtered)
    home = cgroup_home()
    how = f"{sandbox.mode}, {'a cgroup' if home is not None and home.usable else 'no cgroup'}"
    how += f", {confined_by()}" if sandbox.decision == Confine(sandbox.mode) else ", unconfined"
    return [
        f"runner `true`: {runner_ms:.2f} ms/call vs subprocess.run(['true']) {bare_ms:.2f} ms "
        f"= {runner_ms / bare_ms:.2f}x (target <= 1.3x)",
        f"runner `true`: vs subprocess.run(['/bin/bash', '-c', 'true']) {bash_ms:.2f} ms "
        f"= {runner_ms / bash_ms:.2f}x (same shell: the fair comparison)",
        f"runner `true` sandboxed ({how}): {boxed_ms:.2f} ms/call vs bash -c true "
        f"{bash_ms:.2f} ms = {boxed_ms / bash_ms:.2f}x, "
        f"{(boxed_ms - 1.3 * bash_ms):+.2f} ms over 1.3x (target <= 1.3x + 2 ms); fastest tenth "
        f"{_tenth(boxed):.2f} vs {_tenth(bash):.2f} ms = {_tenth(boxed) / _tenth(bash):.2f}x "
        "(less moved by load)",
        f"runner `true` sandboxed without the native spawner (Python helper, migration, "
        f"gate): {helped_ms:.2f} ms/call = {helped_ms / bash_ms:.2f}x bash -c true",
        f"runner `true` sandboxed with the network off ({_network_how(offline)}): "
        f"{filtered_ms:.2f} ms/call vs {boxed_ms:.2f} ms with it on = "
        f"{(filtered_ms / boxed_ms - 1) * 100:+.1f}% (target: a few %); fastest tenth "
        f"{_tenth(filtered):.2f} vs {_tenth(boxed):.2f} ms = "
        f"{(_tenth(filtered) / _tenth(boxed) - 1) * 100:+.1f}%",
        f"runner `true` sandboxed with the network allowlisted (a network namespace, the "
        f"proxy's port handed over): {_per_call(allowlisted):.2f} ms/call = "
        f"{_per_call(allowlisted) - boxed_ms:+.2f} ms over the network on",
    ]


def _network_how(sandbox: Sandbox) -> str:
    decision = sandbox.network_decision
    if isinstance(decision, NetworkConfine):
        return "Landlock TCP rules and the seccomp socket filter"
    return f"not confined: {getattr(decision, 'warning', '') or getattr(decision, 'reason', '')}"


class _RecordingRunner:
    """The real runner, remembering the command the tool asked for."""

    def __init__(self) -> None:
        self.inner = SubprocessRunner()
        self.commands: list[str] = []

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]:
        self.commands.append(spec.command)
        return await self.inner.run(spec)


async def never_stopped() -> None:
    await asyncio.Event().wait()


async def _no_answer(question: str) -> str | None:
    return None


async def _search_figures() -> list[str]:
    tree = sysconfig.get_paths()["purelib"]
    runner = _RecordingRunner()
    context = ToolContext(
        workspace=tree,
        session_dir=tempfile.gettempdir(),
        runner=runner,
        clock=FakeClock(),
        limits=ToolLimits(),
        emit=lambda event: None,
        ask_question=_no_answer,
        until_stopped=never_stopped,
    )
    tool = SearchTool()
    first = await tool.run(SEARCH, context)
    assert isinstance(first, ToolResult) and not first.is_error, first
    direct = shlex.split(runner.commands[0])
    ours, bare = [], []
    for _ in range(SEARCH_ROUNDS):
        ours.append(await _timed(lambda: tool.run(SEARCH, context)))
        bare.append(_timed_sync(lambda: subprocess.run(direct, cwd=tree, capture_output=True)))
    tool_ms, bare_ms = _per_call(ours), _per_call(bare)
    return [
        f"search tool on site-packages ({first.status}): {tool_ms:.1f} ms vs rg run directly "
        f"{bare_ms:.1f} ms = {tool_ms / bare_ms:.2f}x (target <= 1.2x)"
    ]


def _memory_figures() -> list[str]:
    root = Path(treadle.__file__).resolve().parent.parent
    environment = dict(os.environ, PYTHONPATH=str(root))
    probe = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tempfile.gettempdir(),
        check=True,
    )
    idle, peak, omitted, duration = probe.stdout.split()
    growth_mb = (int(peak) - int(idle)) / 1024
    return [
        f"runner memory while a command prints 1 GB: peak {int(peak) / 1024:.1f} MB, "
        f"{growth_mb:.1f} MB above idle (target <= 50 MB); {int(omitted):,} bytes omitted "
        f"in {float(duration):.1f} s"
    ]


def run() -> list[str]:
    lines = asyncio.run(_true_figures())
    lines += asyncio.run(_search_figures())
    lines += _memory_figures()
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
