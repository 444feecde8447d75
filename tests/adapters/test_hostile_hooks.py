"""Hostile hooks through the real runner (hostile2): a hook that floods its stderr is
read in bounded memory — the wrapper's shell keeps only the stderr's tail, so a hook
that writes gigabytes before ``exit 2`` neither grows the shell nor loses its reason."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from returns.result import Result

from treadle.adapters.process import SubprocessRunner
from treadle.adapters.workflows.hooks import HOOK_STDERR, CommandHooks
from treadle.domain.rules.hooks import read_hooks
from treadle.domain.values.hooks import HookEvent, HookInput
from treadle.domain.values.process import ProcessError, ProcessResult, ProcessSpec

RM = HookInput(HookEvent.PRE_TOOL_USE, "bash", {"command": "rm -rf build"})


class _Capped(SubprocessRunner):
    """The runner with the wrapper's shell held to ``ulimit -v`` (KiB of address space):
    a shell that gathers all a hook writes to stderr fails under it."""

    def __init__(self, kib: int) -> None:
        super().__init__(grace=0.2)
        self._kib = kib

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]:
        capped = f"ulimit -v {self._kib}\n{spec.command}"
        return await super().run(dataclasses.replace(spec, command=capped))


@pytest.mark.slow
async def test_a_hook_flooding_stderr_refuses_in_bounded_memory(tmp_path: Path) -> None:
    flood = "head -c 300000000 /dev/zero | tr '\\0' a >&2; echo 'no rm here' >&2; exit 2"
    table, problems = read_hooks(
        {"PreToolUse": [{"hooks": [{"command": flood, "timeout": 60}]}]}, "t"
    )
    assert problems == ()
    h = CommandHooks(table, _Capped(200_000), workspace=str(tmp_path))
    verdict = await h.fire(RM)
    assert verdict.problems == ()
    assert verdict.blocked and verdict.reason.endswith("no rm here")
    assert len(verdict.reason) <= HOOK_STDERR
