"""read_file, write_file and edit_file on a real tree, and the workspace they stay in."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from returns.result import Failure, Success

from tests.processes import ROOT
from treadle.adapters.tools import (
    EditFileTool,
    ReadFileTool,
    Workspace,
    WriteFileTool,
    file_tools,
)
from treadle.domain.rules.arguments import parse_arguments
from treadle.domain.values.tools import ToolResult
from treadle.ports.tools import Tool, ToolContext

Context = Callable[..., ToolContext]


async def call(tool: Tool, context: ToolContext, **arguments: object) -> ToolResult:
    outcome = await tool.run(arguments, context)
    assert isinstance(outcome, ToolResult)
    return outcome


def read(path: Path) -> bytes:
    return path.read_bytes()


def names(folder: Path) -> list[str]:
    return [path.name for path in folder.iterdir()]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# The tools as a set ------------------------------------------------------------

SCHEMA_WORDS = {
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "minimum",
    "additionalProperties",
    "description",
}


def schema_words(schema: Mapping[str, Any]) -> set[str]:
    words = set(schema)
    for inner in schema.get("properties", {}).values():
        words |= schema_words(inner)
    if "items" in schema:
        words |= schema_words(schema["items"])
    return words


def test_the_five_tools_and_what_they_may_do() -> None:
    tools = {tool.spec.name: tool.access for tool in file_tools()}

    assert tools == {
        "search": "read",
        "find_files": "read",
        "read_file": "read",
        "write_file": "write",
        "edit_file": "write",
    }


@pytest.mark.parametrize("tool", file_tools(), ids=lambda tool: tool.spec.name)
def test_schemas_use_only_what_the_argument_checker_knows(tool: Tool) -> None:
    parameters = tool.spec.parameters

    assert schema_words(parameters) <= SCHEMA_WORDS
    assert parameters["additionalProperties"] is False
    assert set(parameters["required"]) <= set(parameters["properties"])
    assert isinstance(parse_arguments('{"surplus": 1}', parameters), Failure)


def test_one_line_summaries() -> None:
    read_tool, write_tool, edit_tool = ReadFileTool(), WriteFileTool(), EditFileTool()

    assert (
        read_tool.describe({"path": "a.py", "offset": 10, "limit": 5}) == "read a.py (lines 10-14)"
    )
    assert write_tool.describe({"path": "a.py", "content": "é\n"}) == "write a.py (3 bytes)"
    assert edit_tool.describe({"path": "a.py", "replace_all": True}) == (
        "edit a.py (every occurrence)"
    )


# The workspace -----------------------------------------------------------------


def test_paths_resolve_inside_the_workspace(tree: Path) -> None:
    workspace = Workspace(str(tree), (str(tree.parent / "session"),))
    root = os.path.realpath(tree)

    assert workspace.resolve("src/app.py") == Success(f"{root}/src/app.py")
    assert workspace.resolve("src/../README.md") == Success(f"{root}/README.md")
    assert workspace.resolve(f"{root}/new/file.txt") == Success(f"{root}/new/file.txt")
    assert workspace.resolve("link_in.py") == Success(f"{root}/src/app.py")


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../outside/secret.txt", "is outside the workspace"),
        ("link_out.txt", "(it resolves to "),
        ("dir_out/new.txt", "(it resolves to "),
        ("/etc/passwd", "is outside the workspace"),
        ("", "the path is empty"),
    ],
)
def test_paths_that_leave_the_workspace_are_refused(tree: Path, path: str, why: str) -> None:
    refused = Workspace(str(tree)).resolve(path)

    assert isinstance(refused, Failure)
    assert why in refused.failure()


def test_the_session_folder_is_readable_but_not_writable(tree: Path) -> None:
    workspace = Workspace(str(tree), (str(tree.parent / "session"),))
    saved = str(tree.parent / "session" / "output-1.log")

    assert isinstance(workspace.resolve(saved), Success)
    assert "may read but not write" in workspace.resolve(saved, for_writing=True).failure()


# read_file ---------------------------------------------------------------------


async def test_reading_numbers_the_lines(context: Context) -> None:
    result = await call(ReadFileTool(), context(), path="src/app.py")

    assert (
        result.text == "     1\timport os\n     2\t\n     3\tdef main():\n     4\t    return os.sep"
    )
    assert result.status == "lines 1-4"


async def test_reading_a_window_says_how_to_go_on(context: Context, tree: Path) -> None:
    (tree / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))

    result = await call(ReadFileTool(), context(), path="long.txt", offset=10, limit=3)

    assert result.text.splitlines() == [
        "    10\tline 10",
        "    11\tline 11",
        "    12\tline 12",
        "[88 more lines in long.txt, stopped by the line limit; continue with offset=13]",
    ]


async def test_reading_stops_at_the_output_bound(context: Context, tree: Path) -> None:
    (tree / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))

    result = await call(ReadFileTool(), context(output_limit=100), path="long.txt")

    lines = result.text.splitlines()
    assert len(result.text) < 200
    assert lines[-1].endswith("stopped by the output bound; continue with offset=8]")
    assert lines[-2] == "     7\tline 7"  # 7 numbered lines of 14 bytes fit in 100


async def test_a_very_long_line_is_cut(context: Context, tree: Path) -> None:
    (tree / "minified.js").write_text("x" * 100_000 + "\nnext\n")

    result = await call(ReadFileTool(), context(), path="minified.js")

    first, second = result.text.splitlines()
    assert first.endswith("x [... line cut at 2000 characters]")
    assert len(first) < 2100
    assert second == "     2\tnext"


async def test_reading_replaces_bytes_that_are_not_utf8(context: Context, tree: Path) -> None:
    (tree / "latin1.txt").write_bytes(b"caf\xe9\n")

    result = await call(ReadFileTool(), context(), path="latin1.txt")

    assert result.text == "     1\tcaf\ufffd"


async def test_reading_a_saved_output_in_the_session_folder(context: Context, tree: Path) -> None:
    result = await call(
        ReadFileTool(), context(), path=str(tree.parent / "session" / "output-1.log")
    )

    assert result.text == "     1\tsaved line 1\n     2\tsaved line 2"


async def test_reading_through_a_link_inside_the_workspace(context: Context) -> None:
    result = await call(ReadFileTool(), context(), path="link_in.py", limit=1)

    assert result.text.startswith("     1\timport os\n[3 more lines")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": "missing.txt"}, "no such file: missing.txt"),
        ({"path": "src"}, "src is a folder: use find_files to list it"),
        ({"path": "data.bin"}, "data.bin is a binary file, not shown"),
        ({"path": "link_out.txt"}, "link_out.txt is outside the workspace"),
        ({"path": "../outside/secret.txt"}, "../outside/secret.txt is outside the workspace"),
        (
            {"path": "README.md", "offset": 9},
            "README.md has only 3 lines; offset 9 is past its end",
        ),
        ({"path": "README.md", "limit": 0}, "offset and limit count lines from 1"),
    ],
)
async def test_reading_refusals(
    context: Context, arguments: dict[str, object], message: str
) -> None:
    result = await call(ReadFileTool(), context(), **arguments)

    assert result.is_error
    assert result.text.startswith(message)


async def test_reading_a_file_without_permission(context: Context, tree: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    locked = tree / "locked.txt"
    locked.write_text("no\n")
    locked.chmod(0)

    result = await call(ReadFileTool(), context(), path="locked.txt")

    assert result.is_error
    assert result.text == "permission denied: locked.txt"


async def test_reading_an_empty_file(context: Context, tree: Path) -> None:
    (tree / "empty.txt").write_text("")

    result = await call(ReadFileTool(), context(), path="empty.txt")

    assert (result.text, result.is_error) == ("empty.txt is empty.", False)


# write_file --------------------------------------------------------------------


async def test_writing_creates_the_file_and_its_folders(context: Context, tree: Path) -> None:
    result = await call(WriteFileTool(), context(), path="new/deep/file.py", content="a = 1\nb = 2")

    assert read(tree / "new" / "deep" / "file.py") == b"a = 1\nb = 2"
    assert result.text == "Wrote 2 lines (11 bytes) to new/deep/file.py (created)."


async def test_writing_replaces_a_file_and_keeps_its_mode(context: Context, tree: Path) -> None:
    script = tree / "run.sh"
    script.write_text("old\n")
    script.chmod(0o751)

    result = await call(WriteFileTool(), context(), path="run.sh", content="#!/bin/sh\necho new\n")

    assert read(script) == b"#!/bin/sh\necho new\n"
    assert mode(script) == 0o751
    assert "(replaced)" in result.text
    assert [name for name in names(tree) if name.startswith(".treadle-")] == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside/new.txt", "is outside the workspace"),
        ("link_out.txt", "is outside the workspace"),
        ("dir_out/new.txt", "is outside the workspace"),
        ("src", "src is a folder, not a file"),
    ],
)
async def test_writing_refusals(context: Context, tree: Path, path: str, message: str) -> None:
    result = await call(WriteFileTool(), context(), path=path, content="x")

    assert result.is_error
    assert message in result.text
    assert read(tree.parent / "outside" / "secret.txt") == b"needle outside the workspace\n"
    assert not (tree.parent / "outside" / "new.txt").exists()


async def test_writing_into_the_session_folder_is_refused(context: Context, tree: Path) -> None:
    result = await call(
        WriteFileTool(), context(), path=str(tree.parent / "session" / "output-1.log"), content="x"
    )

    assert result.is_error
    assert read(tree.parent / "session" / "output-1.log") == b"saved line 1\nsaved line 2\n"


# edit_file ---------------------------------------------------------------------


async def test_editing_replaces_one_exact_match(context: Context, tree: Path) -> None:
    result = await call(
        EditFileTool(), context(), path="src/app.py", old_string="os.sep", new_string="'/'"
    )

    assert read(tree / "src" / "app.py") == b"import os\n\ndef main():\n    return '/'\n"
    assert result.text == "Replaced 1 occurrence in src/app.py (first at line 4)."


async def test_editing_refuses_an_ambiguous_match(context: Context, tree: Path) -> None:
    result = await call(
        EditFileTool(), context(), path="src/app.py", old_string="os", new_string="x"
    )

    assert result.is_error
    assert result.text.startswith("old_string occurs 2 times in src/app.py (lines 1, 4)")
    assert read(tree / "src" / "app.py").startswith(b"import os\n")


async def test_editing_every_occurrence_when_asked(context: Context, tree: Path) -> None:
    result = await call(
        EditFileTool(),
        context(),
        path="src/app.py",
        old_string="os",
        new_string="system",
        replace_all=True,
    )

    assert read(tree / "src" / "app.py") == (
        b"import system\n\ndef main():\n    return system.sep\n"
    )
    assert result.text == "Replaced 2 occurrences in src/app.py (first at line 1)."


async def test_editing_refuses_a_missing_match(context: Context, tree: Path) -> None:
    result = await call(
        EditFileTool(), context(), path="src/app.py", old_string="return  os", new_string="x"
    )

    assert result.is_error
    assert result.text.startswith("old_string was not found in src/app.py")


async def test_editing_keeps_windows_line_ends_and_foreign_bytes(
    context: Context, tree: Path
) -> None:
    target = tree / "dos.txt"
    target.write_bytes(b"caf\xe9\r\nfirst\r\nsecond\r\n")

    result = await call(
        EditFileTool(), context(), path="dos.txt", old_string="first\nsecond", new_string="one\ntwo"
    )

    assert not result.is_error
    assert read(target) == b"caf\xe9\r\none\r\ntwo\r\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": "missing.py", "old_string": "a", "new_string": "b"}, "no such file"),
        ({"path": "src/app.py", "old_string": "", "new_string": "b"}, "old_string is empty"),
        ({"path": "src/app.py", "old_string": "os", "new_string": "os"}, "are the same"),
        ({"path": "link_out.txt", "old_string": "needle", "new_string": "x"}, "outside the"),
        ({"path": "data.bin", "old_string": "needle", "new_string": "x"}, "is a binary file"),
        ({"path": "src", "old_string": "a", "new_string": "b"}, "src is a folder"),
    ],
)
async def test_editing_refusals(
    context: Context, tree: Path, arguments: dict[str, object], message: str
) -> None:
    result = await call(EditFileTool(), context(), **arguments)

    assert result.is_error
    assert message in result.text
    assert read(tree.parent / "outside" / "secret.txt") == b"needle outside the workspace\n"


# A write that fails midway -----------------------------------------------------

# The child may write 64 KiB to a file, no more: the kernel then fails the write
# (EFBIG), as a full disk would (ENOSPC).
WRITE_WITH_A_SIZE_LIMIT = """
import asyncio, resource, signal, sys
from treadle.adapters.tools import WriteFileTool
from tests.adapters.tools.conftest import make_context
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
arguments = {"path": sys.argv[2], "content": "x" * 1_000_000}
result = asyncio.run(WriteFileTool().run(arguments, make_context(sys.argv[1])))
print(result.is_error, result.text)
"""


@pytest.mark.parametrize("path", ["new.txt", "README.md"])
def test_a_write_that_fails_midway_leaves_no_half_file(tree: Path, path: str) -> None:
    before = (tree / path).read_bytes() if (tree / path).exists() else None

    child = subprocess.run(
        [sys.executable, "-c", WRITE_WITH_A_SIZE_LIMIT, str(tree), path],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )

    assert child.stdout.startswith(f"True cannot write {path}: File too large")
    assert ((tree / path).read_bytes() if (tree / path).exists() else None) == before
    assert [name for name in names(tree) if name.startswith(".treadle-")] == []


async def test_a_named_pipe_is_refused_not_waited_on(context: Context, tree: Path) -> None:
    os.mkfifo(tree / "pipe")

    result = await call(ReadFileTool(), context(), path="pipe")

    assert (result.is_error, result.text) == (True, "cannot read pipe: not a regular file")


async def test_the_workspace_itself_is_a_folder_to_every_file_tool(context: Context) -> None:
    read = await call(ReadFileTool(), context(), path=".")
    wrote = await call(WriteFileTool(), context(), path=".", content="x")
    edited = await call(EditFileTool(), context(), path=".", old_string="a", new_string="b")

    assert read.text == ". is a folder: use find_files to list it"
    assert wrote.text == ". is a folder, not a file"
    assert edited.text == ". is a folder, not a file"
