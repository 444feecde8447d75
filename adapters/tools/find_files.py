"""The ``find_files`` tool: ripgrep's file listing, filtered by globs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from returns.result import Failure, Result, Success

from treadle.adapters.tools.arguments import plural, refuse, text, whole
from treadle.adapters.tools.ripgrep import Listing, relative_target, run_ripgrep
from treadle.adapters.tools.workspace import Workspace
from treadle.ports.model import ToolSpec
from treadle.ports.tools import Access, ToolContext, ToolOutcome, ToolResult

DEFAULT_MAX_RESULTS = 500

SPEC = ToolSpec(
    name="find_files",
    description=(
        "List files in the workspace whose paths match a glob, sorted by path. Files "
        "ignored by .gitignore and hidden files are left out."
    ),
    parameters={
        "type": "object",
        "properties": {
            "glob": {
                "type": "string",
                "description": (
                    "Glob to match, e.g. '*.py' (any depth), 'src/**/*.ts', '*.{md,txt}'; "
                    "default: every file"
                ),
            },
            "path": {
                "type": "string",
                "description": "Folder to list, relative to the workspace (default: all of it)",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "description": f"Most paths to return (default {DEFAULT_MAX_RESULTS})",
            },
        },
        "required": [],
        "additionalProperties": False,
    },
)


class FindFilesTool:
    """Runs ``rg --files`` through the context's ProcessRunner."""

    def __init__(self, ripgrep: str | None = None) -> None:
        self._ripgrep = ripgrep

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    @property
    def access(self) -> Access:
        return "read"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        where = text(arguments, "path") or "the workspace"
        return f"find {text(arguments, 'glob') or 'all files'} in {where}"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        match _command(arguments, context):
            case Failure(problem):
                return refuse(problem)
            case Success((options, cwd)):
                pass
        max_results = whole(arguments, "max_results", DEFAULT_MAX_RESULTS)
        outcome = await run_ripgrep(self._ripgrep, options, context, cwd=cwd, max_lines=max_results)
        match outcome:
            case Failure(problem):
                return refuse(problem)
            case Success(listing):
                return _answer(listing, arguments)
        raise AssertionError("unreachable")


def _command(
    arguments: Mapping[str, Any], context: ToolContext
) -> Result[tuple[list[str], str], str]:
    if whole(arguments, "max_results", DEFAULT_MAX_RESULTS) < 1:
        return Failure("max_results must be at least 1")
    workspace = Workspace(context.workspace, (context.session_dir,))
    path = text(arguments, "path") or "."
    match workspace.resolve(path):
        case Failure() as refused:
            return refused
        case Success(real) if not os.path.isdir(real):
            what = "not a folder" if os.path.exists(real) else "no such folder"
            return Failure(f"{what}: {path}")
        case Success(real):
            pass
    glob = text(arguments, "glob")
    options = ["--files", "--sort=path", *([f"--glob={glob}"] if glob else [])]
    return Success(([*options, *relative_target(real, workspace.root)], workspace.root))


def _answer(listing: Listing, arguments: Mapping[str, Any]) -> ToolResult:
    result = listing.result
    errors = [line for line in listing.lines if line.startswith("rg:")]
    paths = [line for line in listing.lines if not line.startswith("rg:")]
    glob = text(arguments, "glob") or "*"
    if result.exit_code not in (0, 1) and not paths:
        return refuse("\n".join(errors) or f"ripgrep failed (exit code {result.exit_code})")
    if not paths:
        return ToolResult(f"No files match {glob!r}.", status="no files")
    notes = []
    if listing.more or listing.cut:
        more = f"{listing.more:,} more" if listing.more else "more"
        notes.append(f"[{more} paths not shown: narrow the glob or raise max_results]")
    if result.timed_out:
        notes.append("[the listing stopped at its deadline]")
    return ToolResult(
        "\n".join([*listing.lines, *notes]),
        status=plural(len(paths), "file") + (" (more not shown)" if notes else ""),
    )
