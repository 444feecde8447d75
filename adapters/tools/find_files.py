"""The ``find_files`` tool: ripgrep's file listing, filtered by globs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from returns.result import Failure, Result, Success

from treadle.adapters.tools.arguments import plural, refuse, text
from treadle.adapters.tools.ripgrep import Listing, RipgrepTool, relative_target
from treadle.adapters.tools.workspace import Workspace
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import ToolResult
from treadle.ports.tools import ToolContext

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


class FindFilesTool(RipgrepTool):
    """Runs ``rg --files`` through the context's ProcessRunner."""

    default_max_results = DEFAULT_MAX_RESULTS

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    def describe(self, arguments: Mapping[str, Any]) -> str:
        where = text(arguments, "path") or "the workspace"
        return f"find {text(arguments, 'glob') or 'all files'} in {where}"

    def command(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> Result[tuple[list[str], str], str]:
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

    def answer(
        self, listing: Listing, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        return _answer(listing, arguments)


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
