"""Running ripgrep for the search tools, through the ProcessRunner port.

ripgrep is a dependency installed from PyPI, so its binary sits next to the Python
that runs treadle; a system ``rg`` on PATH is the fallback.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from returns.result import Failure, Result

from treadle.ports.process import ProcessResult, ProcessSpec
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
