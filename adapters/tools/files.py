"""The file tools: ``read_file``, ``write_file`` and ``edit_file``, inside the workspace.

Reading shows numbered lines, a window at a time; writing replaces the whole file;
editing swaps one exact piece of text and refuses a piece that is missing or occurs
more than once (unless every occurrence should change).
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from returns.result import Failure, Result, Success

from treadle.adapters.tools.arguments import flag, plural, refuse, text, whole
from treadle.adapters.tools.file_diff import BINARY_SNIFF, DIFF_UP_TO, change_diff, looks_binary
from treadle.adapters.tools.workspace import LinkOnTheWay, Workspace
from treadle.domain.rules.diffs import bounded_diff, describe_counts
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

DEFAULT_LINES = 2000
LONGEST_LINE = 2000
"""Characters shown of one line; minified files would otherwise fill the answer."""
COUNT_LINES_UP_TO = 64 * 1024 * 1024
"""Past the window, lines are counted this far to say how many remain; beyond, "at least"."""


def _path_schema(purpose: str) -> dict[str, str]:
    return {"type": "string", "description": f"{purpose}, relative to the workspace"}


# Reading ---------------------------------------------------------------------

READ_SPEC = ToolSpec(
    name="read_file",
    description=(
        "Read a text file with line numbers (as `cat -n`). Long files come a window at a "
        "time: pass offset and limit to read further. Saved full outputs of commands can be "
        "read here too."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _path_schema("File to read"),
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "First line to show, from 1 (default 1)",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Most lines to show (default {DEFAULT_LINES})",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)


class ReadFileTool:
    """Numbered lines of a text file in the workspace (or a saved output), a window at a time."""

    @property
    def spec(self) -> ToolSpec:
        return READ_SPEC

    @property
    def access(self) -> Access:
        return "read"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        offset, limit = whole(arguments, "offset", 1), whole(arguments, "limit", 0)
        window = f" (lines {offset}-{offset + limit - 1})" if limit else ""
        window = window or (f" (from line {offset})" if offset > 1 else "")
        return f"read {text(arguments, 'path')}{window}"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        offset, limit = whole(arguments, "offset", 1), whole(arguments, "limit", DEFAULT_LINES)
        if offset < 1 or limit < 1:
            return refuse("offset and limit count lines from 1: give values of at least 1")
        workspace = Workspace(context.workspace, (context.session_dir,))
        path = text(arguments, "path")
        match workspace.resolve(path):
            case Failure(problem):
                return refuse(problem, "outside the workspace")
            case Success(real):
                pass
        budget = context.limits.output_limit
        return await asyncio.to_thread(_read_window, workspace, real, path, offset, limit, budget)


def _read_window(
    workspace: Workspace, real: str, shown: str, offset: int, limit: int, budget: int
) -> ToolResult:
    try:
        with _open_to_read(workspace, real) as file:
            if looks_binary(file.read(BINARY_SNIFF)):
                return refuse(f"{shown} is a binary file, not shown", "binary file")
            file.seek(0)
            return _numbered_window(file, shown, offset, limit, budget)
    except IsADirectoryError:
        return refuse(f"{shown} is a folder: use find_files to list it", "is a folder")
    except FileNotFoundError:
        return refuse(f"no such file: {shown}", "not found")
    except PermissionError:
        return refuse(f"permission denied: {shown}", "permission denied")
    except OSError as error:
        return refuse(f"cannot read {shown}: {_why(error)}", "cannot read")


def _open_to_read(workspace: Workspace, real: str) -> BinaryIO:
    """The file, opened beneath the workspace's root; a FIFO or a device is not read
    (it would never end, or block the tool for good)."""
    descriptor = workspace.open_beneath(real, os.O_RDONLY | os.O_NONBLOCK)
    try:
        kind = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(kind):
            raise IsADirectoryError(real)
        if not stat.S_ISREG(kind):
            raise OSError(0, "not a regular file")
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _why(error: OSError) -> str:
    if isinstance(error, LinkOnTheWay):
        return f"{error.strerror} (refused: it could lead outside the workspace)"
    return error.strerror or str(error)


def _numbered_window(
    file: BinaryIO, shown: str, offset: int, limit: int, budget: int
) -> ToolResult:
    """Lines ``offset`` .. ``offset + limit - 1``, numbered, within ``budget`` bytes."""
    window: list[str] = []
    spent = number = 0
    for number, raw in enumerate(_lines(file), start=1):
        if number < offset:
            continue
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if len(line) > LONGEST_LINE:
            line = line[:LONGEST_LINE] + f" [... line cut at {LONGEST_LINE} characters]"
        entry = f"{number:>6}\t{line}"
        size = len(entry.encode()) + 1
        if len(window) == limit or (window and spent + size > budget):
            rest, exact = _count_rest(file)
            why = "the line limit" if len(window) == limit else "the output bound"
            more = f"{'' if exact else 'at least '}{plural(rest + 1, 'more line')}"
            note = f"[{more} in {shown}, stopped by {why}; continue with offset={number}]"
            return ToolResult(
                "\n".join([*window, note]), status=f"lines {offset}-{number - 1}, {more}"
            )
        window.append(entry)
        spent += size
    if number == 0:
        return ToolResult(f"{shown} is empty.", status="empty file")
    if offset > number:
        return refuse(f"{shown} has only {plural(number, 'line')}; offset {offset} is past its end")
    return ToolResult("\n".join(window), status=f"lines {offset}-{number}")


def _lines(file: BinaryIO) -> Iterator[bytes]:
    """The file's lines, at most a few kilobytes of each: a huge line must not fill memory."""
    while raw := file.readline(LONGEST_LINE * 4):
        if not raw.endswith(b"\n"):
            while (rest := file.readline(1 << 16)) and not rest.endswith(b"\n"):
                pass
        yield raw


def _count_rest(file: BinaryIO) -> tuple[int, bool]:
    """Lines left in the file, and whether all of it was counted."""
    count, read, last = 0, 0, b"\n"
    while chunk := file.read(1 << 20):
        count += chunk.count(b"\n")
        read, last = read + len(chunk), chunk[-1:]
        if read >= COUNT_LINES_UP_TO:
            return count, False
    return count + (last != b"\n"), True


# Writing ---------------------------------------------------------------------

WRITE_SPEC = ToolSpec(
    name="write_file",
    description=(
        "Write a whole file in the workspace, creating missing folders. An existing file is "
        "replaced: to change part of a file, use edit_file."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _path_schema("File to write"),
            "content": {"type": "string", "description": "The complete new content"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
)


class WriteFileTool:
    """A whole file written; an existing one replaced atomically, keeping its permissions."""

    @property
    def spec(self) -> ToolSpec:
        return WRITE_SPEC

    @property
    def access(self) -> Access:
        return "write"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        size = len(text(arguments, "content").encode())
        return f"write {text(arguments, 'path')} ({plural(size, 'byte')})"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        path, content = text(arguments, "path"), text(arguments, "content")
        workspace = Workspace(context.workspace)
        match workspace.resolve(path, for_writing=True):
            case Failure(problem):
                return refuse(problem, "outside the workspace")
            case Success(real):
                pass
        return await asyncio.to_thread(_write, workspace, real, path, content)

    async def preview(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        path, content = text(arguments, "path"), text(arguments, "content")
        workspace = Workspace(context.workspace)
        real = workspace.resolve(path, for_writing=True).value_or(None)
        if real is None:
            return ""  # the call will be refused: nothing to show
        return await asyncio.to_thread(
            lambda: change_diff(path, _current(workspace, real), content)
        )


def _write(workspace: Workspace, real: str, shown: str, content: str) -> ToolResult:
    data = content.encode("utf-8", errors="surrogateescape")
    before = _current(workspace, real)
    match replace_file(workspace, real, data, shown):
        case Failure(problem):
            return refuse(problem)
        case Success(existed):
            pass
    lines = plural(content.count("\n") + (bool(content) and not content.endswith("\n")), "line")
    size = plural(len(data), "byte")
    how = "replaced" if existed else "created"
    diff = change_diff(shown, before, data)
    return ToolResult(
        f"Wrote {lines} ({size}) to {shown} ({how}).",
        status=f"{how}, {lines} · {describe_counts(diff)}",
        diff=bounded_diff(diff),  # the approval saw all of it; the record keeps its ends
    )


def _current(workspace: Workspace, real: str) -> bytes | None:
    """What a file holds now (enough of it for a diff); None when there is none."""
    try:
        with _open_to_read(workspace, real) as file:
            return file.read(DIFF_UP_TO + 1)
    except OSError:
        return None


def replace_file(workspace: Workspace, real: str, data: bytes, shown: str) -> Result[bool, str]:
    """Write ``data`` to ``real`` whole or not at all; whether a file was there before.

    The folders on the way are opened (and made) beneath the workspace's root without
    following a symlink; the data goes to a new file beside the target, which then is
    renamed over it: a crash or a full disk mid-write leaves no half file, new or old,
    and a replaced file keeps its permissions.
    """
    try:
        folder, name = workspace.folder_beneath(real, create=True)
    except IsADirectoryError:
        return Failure(f"{shown} is a folder, not a file")
    except PermissionError:
        return Failure(f"permission denied: cannot write {shown}")
    except OSError as error:
        return Failure(f"cannot write {shown}: {_why(error)}")
    try:
        try:
            before = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            before = None
        if before is not None and stat.S_ISDIR(before.st_mode):
            return Failure(f"{shown} is a folder, not a file")
        if before is not None and stat.S_ISLNK(before.st_mode):
            raise LinkOnTheWay(name)
        _write_beside(folder, name, data, None if before is None else before.st_mode & 0o7777)
    except PermissionError:
        return Failure(f"permission denied: cannot write {shown}")
    except OSError as error:
        return Failure(f"cannot write {shown}: {_why(error)}")
    finally:
        os.close(folder)
    return Success(before is not None)


def _write_beside(folder: int, name: str, data: bytes, mode: int | None) -> None:
    """A new file in ``folder`` with ``data``, renamed to ``name`` once it is whole."""
    temporary = f".treadle-{os.urandom(6).hex()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    descriptor = os.open(temporary, flags, 0o666 if mode is None else 0o600, dir_fd=folder)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view) :]
            if mode is not None:
                os.fchmod(descriptor, mode)
        finally:
            os.close(descriptor)
        os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        os.unlink(temporary, dir_fd=folder)
        raise


# Editing ---------------------------------------------------------------------

EDIT_SPEC = ToolSpec(
    name="edit_file",
    description=(
        "Replace an exact piece of text in a file. old_string must match the file exactly "
        "(whitespace and indentation included) and occur once, unless replace_all is set; "
        "include surrounding lines to make it unique. Read the file first."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": _path_schema("File to edit"),
            "old_string": {"type": "string", "description": "The exact text to replace"},
            "new_string": {"type": "string", "description": "The text to put in its place"},
            "replace_all": {
                "type": "boolean",
                "description": "Replace every occurrence instead of exactly one",
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    },
)


class EditFileTool:
    """One exact piece of text replaced (or every occurrence, when asked)."""

    @property
    def spec(self) -> ToolSpec:
        return EDIT_SPEC

    @property
    def access(self) -> Access:
        return "write"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        every = " (every occurrence)" if flag(arguments, "replace_all") else ""
        return f"edit {text(arguments, 'path')}{every}"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        path = text(arguments, "path")
        old, new = text(arguments, "old_string"), text(arguments, "new_string")
        workspace = Workspace(context.workspace)
        match workspace.resolve(path, for_writing=True):
            case Failure(problem):
                return refuse(problem, "outside the workspace")
            case Success(real):
                pass
        every = flag(arguments, "replace_all")
        return await asyncio.to_thread(_edit, workspace, real, path, old, new, every)

    async def preview(self, arguments: Mapping[str, Any], context: ToolContext) -> str:
        path = text(arguments, "path")
        old, new = text(arguments, "old_string"), text(arguments, "new_string")
        workspace = Workspace(context.workspace)
        real = workspace.resolve(path, for_writing=True).value_or(None)
        if real is None:
            return ""  # the call will be refused: nothing to show
        every = flag(arguments, "replace_all")
        planned = await asyncio.to_thread(_plan_edit, workspace, real, path, old, new, every)
        return planned.map(lambda edit: change_diff(path, edit.content, edit.updated)).value_or("")


@dataclass(frozen=True, slots=True)
class _Edit:
    content: str
    updated: str
    count: int
    first_line: int


def _edit(
    workspace: Workspace, real: str, shown: str, old: str, new: str, every: bool
) -> ToolResult:
    planned = _plan_edit(workspace, real, shown, old, new, every)
    edit = planned.value_or(None)
    if edit is None:
        return planned.failure()  # why it cannot be made
    data = edit.updated.encode("utf-8", errors="surrogateescape")
    match replace_file(workspace, real, data, shown):
        case Failure(problem):
            return refuse(problem)
    what = plural(edit.count if every else 1, "occurrence")
    diff = change_diff(shown, edit.content, edit.updated)
    return ToolResult(
        f"Replaced {what} in {shown} (first at line {edit.first_line}).",
        status=f"replaced {what} · {describe_counts(diff)}",
        diff=bounded_diff(diff),
    )


def _plan_edit(
    workspace: Workspace, real: str, shown: str, old: str, new: str, every: bool
) -> Result[_Edit, ToolResult]:
    """The file's text before and after the edit, or why the edit cannot be made."""
    if not old:
        return Failure(refuse("old_string is empty: use write_file to create or replace a file"))
    if old == new:
        return Failure(refuse("old_string and new_string are the same: nothing would change"))
    try:
        with _open_to_read(workspace, real) as file:
            data = file.read()
    except FileNotFoundError:
        return Failure(refuse(f"no such file: {shown} (use write_file to create it)", "not found"))
    except IsADirectoryError:
        return Failure(refuse(f"{shown} is a folder, not a file", "is a folder"))
    except PermissionError:
        return Failure(refuse(f"permission denied: {shown}", "permission denied"))
    except OSError as error:
        return Failure(refuse(f"cannot read {shown}: {_why(error)}", "cannot read"))
    if looks_binary(data[:BINARY_SNIFF]):
        return Failure(
            refuse(f"{shown} is a binary file: edit_file changes text files only", "binary")
        )
    # Undecodable bytes survive the round trip untouched.
    content = data.decode("utf-8", errors="surrogateescape")
    if old not in content and "\r\n" in content and "\r\n" not in old:
        # The model writes "\n"; a file with Windows line ends spells them "\r\n".
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = content.count(old)
    if count == 0:
        return Failure(
            refuse(
                f"old_string was not found in {shown}. It must match exactly, whitespace and "
                "indentation included: read the file again and copy the text.",
                "no match",
            )
        )
    if count > 1 and not every:
        lines = ", ".join(map(str, _lines_of(content, old)))
        return Failure(
            refuse(
                f"old_string occurs {count} times in {shown} (lines {lines}): include more "
                "surrounding text to pick one, or set replace_all to change all.",
                "ambiguous match",
            )
        )
    first_line = content.count("\n", 0, content.index(old)) + 1
    updated = content.replace(old, new) if every else content.replace(old, new, 1)
    return Success(_Edit(content, updated, count, first_line))


def _lines_of(content: str, piece: str) -> list[int]:
    lines: list[int] = []
    start = content.find(piece)
    while start != -1 and len(lines) < 10:
        lines.append(content.count("\n", 0, start) + 1)
        start = content.find(piece, start + 1)
    return lines
