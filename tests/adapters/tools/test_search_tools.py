"""search and find_files on a real tree, through the real runner and ripgrep."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from treadle.adapters.tools import FindFilesTool, SearchTool
from treadle.adapters.tools.ripgrep import find_ripgrep
from treadle.domain.values.tools import ToolResult
from treadle.ports.tools import ToolContext

Context = Callable[..., ToolContext]


async def search(context: ToolContext, **arguments: object) -> ToolResult:
    outcome = await SearchTool().run(arguments, context)
    assert isinstance(outcome, ToolResult)
    return outcome


async def find(context: ToolContext, **arguments: object) -> ToolResult:
    outcome = await FindFilesTool().run(arguments, context)
    assert isinstance(outcome, ToolResult)
    return outcome


def test_ripgrep_is_found_beside_the_running_python() -> None:
    assert find_ripgrep() == str(Path(sys.executable).parent / "rg")


async def test_search_lists_matches_with_workspace_paths_and_line_numbers(
    context: Context,
) -> None:
    result = await search(context(), pattern="needle")

    assert not result.is_error
    assert result.text == "README.md:3:Find the needle here."
    assert result.status == "1 match"


async def test_search_can_ignore_case_and_filter_by_glob(context: Context) -> None:
    result = await search(context(), pattern="needle", ignore_case=True, glob="*.py")

    assert result.text == "src/pkg/util.py:2:    return 'Needle'"


async def test_search_shows_context_lines(context: Context) -> None:
    result = await search(context(), pattern="def main", context_lines=1)

    # rg does not follow the symlink link_in.py: a link may lead anywhere.
    assert result.text.splitlines() == [
        "src/app.py-2-",
        "src/app.py:3:def main():",
        "src/app.py-4-    return os.sep",
    ]
    assert result.status == "1 match"


async def test_search_within_a_path(context: Context) -> None:
    result = await search(context(), pattern="return", path="src/pkg")

    assert result.text == "src/pkg/util.py:2:    return 'Needle'"


async def test_search_caps_the_results_and_says_so(context: Context) -> None:
    result = await search(context(), pattern=".", path="src", max_results=2)

    lines = result.text.splitlines()
    assert lines[:2] == ["src/app.py:1:import os", "src/app.py:3:def main():"]
    assert lines[2] == "[3 more lines not shown: narrow the search or raise max_results]"


async def test_no_match_is_an_answer_not_an_error(context: Context) -> None:
    result = await search(context(), pattern="nowhere to be found")

    assert not result.is_error
    assert result.text == "No matches for 'nowhere to be found' in the workspace."


async def test_a_bad_regular_expression_is_a_tool_error(context: Context) -> None:
    result = await search(context(), pattern="(unclosed")

    assert result.is_error
    assert "regex parse error" in result.text


async def test_search_does_not_follow_links_out_of_the_workspace(context: Context) -> None:
    result = await search(context(), pattern="outside the workspace")

    assert result.text.startswith("No matches")


@pytest.mark.parametrize("path", ["../outside", "dir_out", "link_out.txt", "/etc"])
async def test_search_refuses_paths_outside_the_workspace(context: Context, path: str) -> None:
    result = await search(context(), pattern="needle", path=path)

    assert result.is_error
    assert "outside the workspace" in result.text


async def test_search_reads_the_saved_outputs_in_the_session_folder(
    context: Context, tree: Path
) -> None:
    saved = tree.parent / "session" / "output-1.log"

    result = await search(context(), pattern="line 2", path=str(saved))

    assert result.text == f"{saved}:2:saved line 2"


async def test_a_missing_ripgrep_is_a_clear_error(context: Context, tmp_path: Path) -> None:
    outcome = await SearchTool(ripgrep=str(tmp_path / "no-rg")).run({"pattern": "x"}, context())

    assert isinstance(outcome, ToolResult)
    assert outcome.is_error
    assert "ripgrep (rg) is not installed" in outcome.text


async def test_find_files_lists_every_file_sorted(context: Context) -> None:
    result = await find(context())

    assert result.text.splitlines() == [
        "README.md",
        "data.bin",
        "src/app.py",
        "src/pkg/util.py",
    ]
    assert result.status == "4 files"


async def test_find_files_with_a_glob_and_a_folder(context: Context) -> None:
    assert (await find(context(), glob="*.py")).text == "src/app.py\nsrc/pkg/util.py"
    assert (await find(context(), glob="*.py", path="src/pkg")).text == "src/pkg/util.py"
    assert (await find(context(), glob="*.{md,bin}")).text == "README.md\ndata.bin"


async def test_find_files_caps_the_list(context: Context) -> None:
    result = await find(context(), max_results=1)

    assert result.text == (
        "README.md\n[3 more paths not shown: narrow the glob or raise max_results]"
    )


async def test_find_files_without_matches(context: Context) -> None:
    result = await find(context(), glob="*.rs")

    assert not result.is_error
    assert result.text == "No files match '*.rs'."


@pytest.mark.parametrize("path", ["dir_out", "../outside"])
async def test_find_files_refuses_folders_outside(context: Context, path: str) -> None:
    result = await find(context(), path=path)

    assert result.is_error
    assert "outside the workspace" in result.text


async def test_find_files_in_a_missing_folder(context: Context) -> None:
    result = await find(context(), path="nowhere")

    assert result.is_error
    assert result.text == "no such folder: nowhere"
