"""Hooks (issue 23): what a no-op PreToolUse hook adds to each tool call (target: at
most 10 ms a call), and what reading a repository's ``.claude/settings.json`` hooks
adds to a session's start (the file read, its hooks read, trust asked; the module
that does it is imported by every session's container, with hooks or without).

The per-call figure is a whole turn of bash calls (`true`, through the session's kind
of runner: sandboxed, in a cgroup where the kernel gives one) with a no-op hook on
every call against the same turn without, on the same runner, interleaved; the hook's
own run is timed too (its wrapper, its input file, its process group). A hook is a
command like the call it guards, so its cost moves with the machine's load as the
call's does: the ratio of the two says what the hook itself adds.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from treadle.adapters.fakes import FakeClock, ScriptedModel, SilentTerminal
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.sandbox import Sandbox
from treadle.adapters.workflows.hooks import CommandHooks
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.hooks import read_hooks
from treadle.domain.values.hooks import HookEvent, HookInput
from treadle.ports.hooks import Hooks

CALLS = 20
ROUNDS = 5
FIRES = 40
TARGET_MS = 10.0
START_RUNS = 15
START_TARGET_MS = 2.0

NO_OP = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}


async def _turn(runner: SubprocessRunner, hooks: Hooks | None, workspace: str) -> float:
    script = [R.calling("bash", command="true") for _ in range(CALLS)] + [R.saying("done")]
    clock = FakeClock()
    ports = TurnPorts(ScriptedModel(script, clock), clock, runner, SilentTerminal(), hooks=hooks)
    agent = Agent(ports, TurnSettings(workspace=workspace, session_dir=""))
    started = time.perf_counter()
    await agent.run_turn("run true")
    return time.perf_counter() - started


async def _per_call(workspace: str) -> tuple[float, float, float]:
    runner = SubprocessRunner(sandbox=Sandbox("workspace-write", workspace))
    table, _ = read_hooks(NO_OP, "bench")
    hooks = CommandHooks(table, runner, workspace=workspace, session_id="bench")
    await _turn(runner, hooks, workspace)  # warm: the spawner, the cgroup, the imports
    bare: list[float] = []
    hooked: list[float] = []
    for _ in range(ROUNDS):
        bare.append(await _turn(runner, None, workspace))
        hooked.append(await _turn(runner, hooks, workspace))
    fired: list[float] = []
    happened = HookInput(HookEvent.PRE_TOOL_USE, "bash", {"command": "true"})
    for _ in range(FIRES):
        started = time.perf_counter()
        await hooks.fire(happened)
        fired.append(time.perf_counter() - started)
    over = (statistics.median(hooked) - statistics.median(bare)) / CALLS
    return over * 1e3, statistics.median(fired) * 1e3, statistics.median(bare) / CALLS * 1e3


START = """
import sys, time
from treadle.entrypoints.config import AppConfig  # a session has these already
from treadle.adapters.transcript.sessions import TRANSCRIPT
from treadle.domain.values.events import Notice
from treadle.entrypoints.hooks import read_session_hooks  # the container imports it anyway
started = time.perf_counter()
found = read_session_hooks(AppConfig(workspace=sys.argv[1]))
elapsed = time.perf_counter() - started
assert len(found.table.groups) + len(found.notices) == int(sys.argv[2]), found
print(elapsed)
"""


def _start_up(workspace: Path, expected: int, env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", START, str(workspace), str(expected)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    return float(done.stdout)


def run() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="treadle-bench-hooks-") as folder:
        workspace = os.path.join(folder, "work")
        os.mkdir(workspace)
        over, fire, call = asyncio.run(_per_call(workspace))
        base = Path(folder)
        env = {**os.environ, "TREADLE_CONFIG_DIR": str(base / "config"), "HOME": str(base)}
        none = base / "none"
        (none / ".git").mkdir(parents=True)
        claude = base / "claude"
        (claude / ".claude").mkdir(parents=True)
        (claude / ".git").mkdir()
        (claude / ".claude" / "settings.json").write_text(json.dumps({"hooks": NO_OP}))
        withouts: list[float] = []
        withs: list[float] = []
        for _ in range(START_RUNS):  # interleaved, so load on the machine hits both alike
            withouts.append(_start_up(none, 0, env))
            withs.append(_start_up(claude, 1, env))  # untrusted: one line says so
    ok = "ok" if over <= TARGET_MS else "MISSED"
    without, with_hooks = statistics.median(withouts), statistics.median(withs)
    start_over = statistics.median(w - n for w, n in zip(withs, withouts, strict=True)) * 1e3
    start_ok = "ok" if start_over <= START_TARGET_MS else "MISSED"
    return [
        f"no-op PreToolUse hook: {over:+.2f} ms a tool call over the same turn without "
        f"({call:.2f} ms a call: the hook costs {over / call:.2f}x the call it guards; its run "
        f"alone {fire:.2f} ms) (target <= {TARGET_MS:g} ms a call: {ok})",
        f"hooks at start-up: {without * 1e3:.2f} ms without .claude/settings.json, "
        f"{with_hooks * 1e3:.2f} ms with its hooks = {start_over:+.2f} ms "
        f"(target <= {START_TARGET_MS:g} ms more: {start_ok})",
    ]


if __name__ == "__main__":
    for line in run():
        print(line)
