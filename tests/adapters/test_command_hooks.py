"""Hooks as real commands (issue 23), through the real process runner: what happened
on stdin as JSON, exit 2 and stderr, JSON on stdout, a deadline that kills a hook and
everything it started."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.processes import gone_within, wait_for_pid
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.sandbox import Sandbox, probe
from treadle.adapters.workflows.hooks import CommandHooks, split_output
from treadle.domain.rules.hooks import read_hooks
from treadle.domain.values.hooks import HookEvent, HookInput


def hooks(tmp_path: Path, event: str, command: str, matcher: str = "", **more: object):
    table, problems = read_hooks(
        {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, **more}]}]},
        "test",
    )
    assert problems == ()
    runner = SubprocessRunner(grace=0.2)
    return CommandHooks(table, runner, workspace=str(tmp_path), session_id="s-1")


RM = HookInput(HookEvent.PRE_TOOL_USE, "bash", {"command": "rm -rf build"})


async def test_a_hook_reads_what_happened_on_stdin(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    h = hooks(tmp_path, "PreToolUse", f"cat > {seen}", "Bash")
    verdict = await h.fire(RM)
    assert not verdict.blocked and verdict.ran == 1
    told = json.loads(seen.read_text())
    assert told["tool_name"] == "Bash" and told["tool_input"]["command"] == "rm -rf build"
    assert told["session_id"] == "s-1" and told["cwd"] == str(tmp_path)
    assert told["hook_event_name"] == "PreToolUse"


async def test_exit_2_refuses_with_stderr_and_stdout_is_kept_apart(tmp_path: Path) -> None:
    script = (
        "input=$(cat); echo chatter; "
        'case "$input" in *\'"rm \'*) echo "rm is not allowed here" >&2; exit 2;; esac'
    )
    h = hooks(tmp_path, "PreToolUse", script, "Bash")
    verdict = await h.fire(RM)
    assert verdict.blocked and verdict.reason == "rm is not allowed here"
    ls = HookInput(HookEvent.PRE_TOOL_USE, "bash", {"command": "ls"})
    assert not (await h.fire(ls)).blocked


async def test_json_on_stdout_decides(tmp_path: Path) -> None:
    answer = json.dumps({"decision": "block", "reason": "tests fail"})
    h = hooks(tmp_path, "Stop", f"echo '{answer}'")
    verdict = await h.fire(HookInput(HookEvent.STOP))
    assert verdict.blocked and verdict.reason == "tests fail"


async def test_a_hook_that_does_not_match_is_not_run(tmp_path: Path) -> None:
    h = hooks(tmp_path, "PreToolUse", "exit 2", "Edit")
    assert not h.wants(HookEvent.PRE_TOOL_USE, "bash")
    assert (await h.fire(RM)).ran == 0
    assert h.wants(HookEvent.PRE_TOOL_USE, "edit_file")


async def test_a_failing_hook_is_a_problem_not_a_refusal(tmp_path: Path) -> None:
    h = hooks(tmp_path, "PreToolUse", "echo broken >&2; exit 1")
    verdict = await h.fire(RM)
    assert not verdict.blocked
    assert verdict.problems == (
        "PreToolUse hook 'echo broken >&2; exit 1' failed with exit 1: broken",
    )


async def test_a_hook_that_sleeps_forever_is_killed_at_its_deadline_with_all_it_started(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pid"
    h = hooks(tmp_path, "PreToolUse", f"sleep 1000 & echo $! > {pids}; sleep 1000", timeout=0.5)
    verdict = await h.fire(RM)
    assert not verdict.blocked
    (problem,) = verdict.problems
    assert problem.startswith("PreToolUse hook 'sleep 1000 & echo")
    assert problem.endswith("was stopped at its deadline of 0.5 s")
    assert gone_within(wait_for_pid(pids))


def test_stderr_is_found_behind_the_run_s_marker_only() -> None:
    assert split_output("out\nmore\nM-1\nerr", "M-1") == ("out\nmore", "err")
    assert split_output("killed before the end", "M-1") == ("killed before the end", "")


async def test_a_stop_kills_a_running_hook_and_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pid"
    h = hooks(tmp_path, "PreToolUse", f"sleep 1000 & echo $! > {pids}; sleep 1000", timeout=60)
    running = asyncio.ensure_future(h.fire(RM))
    pid = await asyncio.get_running_loop().run_in_executor(None, wait_for_pid, pids)
    running.cancel()  # Esc: the turn's task is cancelled
    with pytest.raises(asyncio.CancelledError):
        await running
    assert gone_within(pid)


@pytest.mark.skipif(not probe().available, reason="needs Landlock")
async def test_under_a_read_only_sandbox_stderr_is_kept_apart_by_the_shell(tmp_path: Path) -> None:
    table, _ = read_hooks(
        {"PreToolUse": [{"hooks": [{"command": "echo out; echo 'no rm' >&2; exit 2"}]}]}, "t"
    )
    runner = SubprocessRunner(grace=0.2, sandbox=Sandbox("read-only", str(tmp_path), explicit=True))
    h = CommandHooks(table, runner, workspace=str(tmp_path))
    verdict = await h.fire(RM)
    assert verdict.blocked and verdict.reason == "no rm"


@pytest.mark.skipif(probe().abi < 4, reason="needs Landlock's network rules (ABI 4)")
async def test_a_hook_runs_under_the_session_s_network_mode(tmp_path: Path) -> None:
    """Hooks run through the session's runner: ``sandbox_network = off`` holds for them."""
    import socket
    import sys

    from treadle.domain.rules.network import NetworkPolicy

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    connect = (
        f"{sys.executable} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'"
        " 2>/dev/null && echo reached >&2 && exit 2; exit 0"
    )
    table, _ = read_hooks({"PreToolUse": [{"hooks": [{"command": connect}]}]}, "t")
    try:
        for network, blocked in (("on", True), ("off", False)):
            box = Sandbox(
                "off",
                str(tmp_path),
                network=NetworkPolicy(network),  # type: ignore[arg-type]
                network_explicit=True,
            )
            runner = SubprocessRunner(grace=0.2, sandbox=box)
            verdict = await CommandHooks(table, runner, workspace=str(tmp_path)).fire(RM)
            box.close()
            assert verdict.blocked is blocked, (network, verdict)
    finally:
        listener.close()
