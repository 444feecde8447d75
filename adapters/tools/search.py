"""The ``search`` tool: content search in the workspace with ripgrep."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from returns.result import Failure, Result, Success

from treadle.adapters.tools.arguments import flag, plural, refuse, text, whole
from treadle.adapters.tools.ripgrep import Listing, RipgrepTool, relative_target
from treadle.adapters.tools.workspace import Workspace
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import ToolResult
from treadle.ports.tools import ToolContext

DEFAULT_MAX_RESULTS = 100
MAX_CONTEXT_LINES = 10

# rg prints "path:12:text" for a match, "path-12-text" for context, "--" between groups;
# anything else (an "rg: ..." error and its continuation lines) is a message.
_MATCH_LINE = re.compile(r".+?:\d+:")
_RESULT_LINE = re.compile(r".+?[:-]\d+[:-]|--$")

SPEC = ToolSpec(
    name="search",
    description=(
        "Search file contents in the workspace with ripgrep (Rust regex syntax). Files "
        "ignored by .gitignore, hidden files and binary files are skipped. Each result "
        "line reads path:line:text (context lines use '-' instead of ':')."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to look for"},
            "path": {
                "type": "string",
                "description": "File or folder to search, relative to the workspace (default: all)",
            },
            "glob": {
                "type": "string",
                "description": "Only files matching this glob, e.g. '*.py' or 'src/**/*.ts'",
            },
            "ignore_case": {"type": "boolean", "description": "Match regardless of case"},
            "fixed_strings": {
                "type": "boolean",
                "description": "Treat the pattern as plain text, not a regular expression",
            },
            "context_lines": {
                "type": "integer",
                "minimum": 0,
                "description": f"Lines of context around each match (0-{MAX_CONTEXT_LINES})",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "description": f"Most result lines to return (default {DEFAULT_MAX_RESULTS})",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)


class SearchTool(RipgrepTool):
    """Runs ``rg`` through the context's ProcessRunner, with the tool deadline and bound."""

    default_max_results = DEFAULT_MAX_RESULTS

    @property
    def spec(self) -> ToolSpec:
        return SPEC

    def describe(self, arguments: Mapping[str, Any]) -> str:
        where = text(arguments, "path") or "the workspace"
        glob = text(arguments, "glob")
        return f"search {text(arguments, 'pattern')!r} in {where}" + (f" ({glob})" if glob else "")

    def command(
        self, arguments: Mapping[str, Any], context: ToolContext
    ) -> Result[tuple[list[str], str], str]:
        return _command(arguments, context)

    def answer(
        self, listing: Listing, arguments: Mapping[str, Any], context: ToolContext
    ) -> ToolResult:
        return _answer(listing, arguments, context.limits.default_timeout)


def _command(
    arguments: Mapping[str, Any], context: ToolContext
) -> Result[tuple[list[str], str], str]:
    """The rg options for this call and the folder to run in, or why there are none."""
    pattern = text(arguments, "pattern")
    context_lines = whole(arguments, "context_lines", 0)
    if not pattern:
        return Failure("the pattern is empty: give a regular expression to look for")
    if not 0 <= context_lines <= MAX_CONTEXT_LINES:
        return Failure(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}")
    workspace = Workspace(context.workspace, (context.session_dir,))
    path = text(arguments, "path") or "."
    match workspace.resolve(path):
        case Failure() as refused:
            return refused
        case Success(real) if not os.path.exists(real):
            return Failure(f"no such file or folder: {path}")
        case Success(real):
            pass
    options = ["--line-number", "--with-filename", "--no-heading", "--sort=path"]
    options += ["--ignore-case"] if flag(arguments, "ignore_case") else []
    options += ["--fixed-strings"] if flag(arguments, "fixed_strings") else []
    options += [f"--context={context_lines}"] if context_lines else []
    glob = text(arguments, "glob")
    options += [f"--glob={glob}"] if glob else []
    options += [f"--regexp={pattern}", *relative_target(real, workspace.root)]
    return Success((options, workspace.root))


def _answer(listing: Listing, arguments: Mapping[str, Any], deadline: float) -> ToolResult:
    result = listing.result
    pattern, path = text(arguments, "pattern"), text(arguments, "path") or "the workspace"
    if result.exit_code == 1 and not listing.lines:
        return ToolResult(f"No matches for {pattern!r} in {path}.", status="no matches")
    found = [line for line in listing.lines if _RESULT_LINE.match(line)]
    if result.exit_code not in (0, 1) and not found:
        return refuse("\n".join(listing.lines) or _ended(result.exit_code, result.signal))
    notes = []
    if listing.more or listing.cut:
        more = f"{listing.more:,} more lines" if listing.more else "more lines"
        notes.append(f"[{more} not shown: narrow the search or raise max_results]")
    if result.timed_out:
        notes.append(f"[the search stopped at its deadline of {deadline:g} s]")
    matches = sum(1 for line in found if _MATCH_LINE.match(line))
    return ToolResult(
        "\n".join([*listing.lines, *notes]),
        status=plural(matches, "match") + (" (more not shown)" if notes else ""),
    )


def _ended(exit_code: int | None, signal: int | None) -> str:
    if signal is not None:
        return f"ripgrep was stopped by signal {signal}"
    return f"ripgrep failed (exit code {exit_code})"
