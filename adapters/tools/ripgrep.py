"""Running ripgrep for the search tools, through the ProcessRunner port.

ripgrep is a dependency installed from PyPI, so its binary sits next to the Python
that runs treadle; a system ``rg`` on PATH is the fallback.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from returns.result import Failure, Result, Success

from treadle.adapters.tools.arguments import refuse, whole
from treadle.domain.values.process import ProcessResult, ProcessSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

MISSING = (
    "ripgrep (rg) is not installed: it comes with treadle's 'ripgrep' package "
    "(pip install ripgrep), or install rg and put it on PATH"
)

# Options every call shares: no user config (results must not depend on it), no
# colour, and minified lines shown as a preview instead of megabytes of text.
COMMON_OPTIONS = ("--no-config", "--color=never", "--max-columns=500", "--max-columns-preview")


def find_ripgrep() -> str | None:
    """The rg binary beside the running Python (a venv's bin), else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "rg")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("rg")


@dataclass(frozen=True, slots=True)
class Listing:
    """What rg printed, one entry a line, and what was left out of it."""

    lines: list[str]
    more: int
    """Lines beyond ``max_lines`` that were not kept."""
    cut: bool
    """The output bound cut the output, so there were more lines than counted."""
    result: ProcessResult


async def run_ripgrep(
    ripgrep: str | None,
    arguments: Sequence[str],
    context: ToolContext,
    *,
    cwd: str,
    max_lines: int,
) -> Result[Listing, str]:
    """Run ``rg arguments`` in ``cwd`` with the tool deadline and output bound."""
    binary = ripgrep or find_ripgrep()
    if binary is None or not os.access(binary, os.X_OK):
        return Failure(MISSING)
    spec = ProcessSpec(
        command=shlex.join([binary, *COMMON_OPTIONS, *arguments]),
        cwd=cwd,
        timeout=context.limits.default_timeout,
        output_limit=context.limits.output_limit,
    )
    outcome = await context.runner.run(spec)
    return outcome.map(lambda result: _listing(result, max_lines)).alt(
        lambda error: f"ripgrep could not start: {error.detail}"
    )


class RipgrepTool:
    """A reading tool that runs rg: a subclass says which options (:meth:`command`),
    how many result lines to keep at most, and what the model reads (:meth:`answer`).

    ``ripgrep`` names the binary; by default the one beside the running Python, or on PATH.
    """

    access: Access = "read"
    default_max_results = 100

    def __init__(self, ripgrep: str | None = None) -> None:
        self._ripgrep = ripgrep

    def command(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> Result[tuple[list[str], str], str]:
        """The rg options for this call and the folder to run in, or why there are none."""
        raise NotImplementedError

    def answer(
        self, listing: Listing, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        raise NotImplementedError

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        max_results = whole(arguments, "max_results", self.default_max_results)
        if max_results < 1:
            return refuse("max_results must be at least 1")
        match self.command(arguments, context):
            case Failure(problem):
                return refuse(problem)
            case Success((options, cwd)):
                pass
        outcome = await run_ripgrep(self._ripgrep, options, context, cwd=cwd, max_lines=max_results)
        match outcome:
            case Failure(problem):
                return refuse(problem)
            case Success(listing):
                return self.answer(listing, arguments, context)
        raise AssertionError("unreachable")


def _listing(result: ProcessResult, max_lines: int) -> Listing:
    lines = result.output.splitlines()
    if result.truncated:
        # Only the head is a continuous run of results: drop the marker and the tail.
        marker = next(
            (index for index, line in enumerate(lines) if line.startswith("[... ")), len(lines)
        )
        lines = lines[:marker]
    more = max(0, len(lines) - max_lines)
    return Listing(lines[:max_lines], more, result.truncated, result)


def relative_target(real: str, workspace: str) -> list[str]:
    """The path argument for rg: none for the workspace itself, else relative when inside."""
    if real == workspace:
        return []
    if real.startswith(workspace.rstrip(os.sep) + os.sep):
        return ["--", os.path.relpath(real, workspace)]
    return ["--", real]
