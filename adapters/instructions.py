"""The instructions a user and a project leave for agents: ``AGENTS.md`` files.

Read in this order, the nearer file last so that it wins: the user's own
``AGENTS.md`` in treadle's configuration folder, then each folder's from the project
root (the nearest folder at or above the workspace holding ``.git``, else the
workspace) down to the workspace. In a folder without ``AGENTS.md`` a ``CLAUDE.md``
stands in. The whole text sent is capped (32 KiB by default, as in Codex), its
heading and each file's path included; what the cap leaves out is said, to the model
and to the person.

Example::

    found = read_instructions("/repo/pkg", user_folder="/home/me/.config/treadle")
    found.text      # what follows the system prompt in every request
    found.files     # each file read, with its size and the bytes the model sees
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from treadle.domain.values.events import Notice

FILE_NAMES = ("AGENTS.md", "CLAUDE.md")
"""In each folder, the first of these that exists is read."""

DEFAULT_LIMIT = 32 * 1024
NOTES_ROOM = 200
"""Bytes the cap keeps free for the notes of what it left out: the one of the file it
cut, and the one of the files after it."""
SEPARATOR = "\n\n"
NAMED_PATHS = 3
"""At most this many paths are named in the warning of what the cap left out."""

HEADING = """\
# Instructions from the user and the project

The user and the project keep these instructions for agents working here. Follow \
them; where two disagree, the later one (nearer the working folder) wins."""


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One file read: its size, the bytes of it the model sees, and who wrote it."""

    path: str
    size: int
    included: int
    from_user: bool = False
    problem: str = ""
    """Why it could not be read (then nothing of it is sent)."""

    @property
    def stands_in(self) -> bool:
        """A CLAUDE.md read because its folder has no AGENTS.md."""
        return os.path.basename(self.path) != FILE_NAMES[0]


@dataclass(frozen=True, slots=True)
class ProjectInstructions:
    """What was read, and the text that goes to the model ("" when there is none)."""

    root: str = ""
    limit: int = DEFAULT_LIMIT
    files: tuple[InstructionFile, ...] = ()
    text: str = ""

    @property
    def left_out(self) -> int:
        return sum(file.size - file.included for file in self.files if not file.problem)

    def notices(self) -> list[Notice]:
        """What the person should hear about: files cut or left out, or unreadable."""
        notices = [
            Notice("instructions_unreadable", f"cannot read {file.path}: {file.problem}")
            for file in self.files
            if file.problem
        ]
        if self.left_out:
            notices.append(
                Notice(
                    "instructions_cut",
                    f"project instructions are capped at {self.limit:,} bytes "
                    f"(project_instructions_limit): {self.left_out:,} bytes of "
                    f"{', '.join(self._cut_paths())} left out",
                )
            )
        return notices

    def _cut_paths(self) -> list[str]:
        paths = [_short(f.path) for f in self.files if f.included < f.size and not f.problem]
        if len(paths) <= NAMED_PATHS:
            return paths
        return [*paths[: NAMED_PATHS - 1], f"{len(paths) - NAMED_PATHS + 1:,} more files"]


def project_root(folder: str) -> str:
    """The nearest folder at or above ``folder`` that holds ``.git``, else ``folder``."""
    here = os.path.realpath(folder)
    while True:
        if os.path.exists(os.path.join(here, ".git")):  # a folder, or a worktree's file
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.realpath(folder)
        here = parent


def instruction_folders(workspace: str, user_folder: str | None) -> list[tuple[str, bool]]:
    """The folders to look in, in reading order, each with whether it is the user's."""
    workspace = os.path.realpath(workspace)
    root = project_root(workspace)
    chain = [workspace]
    while chain[-1] != root:
        chain.append(os.path.dirname(chain[-1]))
    folders = [(folder, False) for folder in reversed(chain)]
    if user_folder:
        user = os.path.realpath(user_folder)
        folders = [(user, True), *(entry for entry in folders if entry[0] != user)]
    return folders


def read_instructions(
    workspace: str, *, user_folder: str | None, limit: int = DEFAULT_LIMIT
) -> ProjectInstructions:
    """The instructions for a session in ``workspace``, within ``limit`` bytes."""
    found: list[tuple[str, bool]] = []
    for folder, from_user in instruction_folders(workspace, user_folder):
        for name in FILE_NAMES:
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                found.append((path, from_user))
                break
    files: list[InstructionFile] = []
    sections: list[str] = []
    used = len(HEADING.encode())  # of the text sent, separators and paths included
    full = False  # a file was cut: the ones after it are left out
    root = project_root(workspace)
    user = os.path.realpath(user_folder) if user_folder else ""
    for path, from_user in found:
        head = len(SEPARATOR) * 2 + len(_heading(path).encode())
        room = 0 if full else max(0, limit - used - head - NOTES_ROOM)
        try:
            size, kept = _read_within(path, user if from_user else root, room)
        except OSError as error:
            files.append(InstructionFile(path, 0, 0, from_user, error.strerror or str(error)))
            continue
        if not kept.strip() and size == len(kept):  # read, and nothing to say
            files.append(InstructionFile(path, size, size, from_user))
            continue
        if not kept:  # not even its path fits
            full = True
            files.append(InstructionFile(path, size, 0, from_user))
            continue
        text = kept.decode("utf-8", "ignore" if len(kept) < size else "replace")
        included = len(text.encode("utf-8")) if len(kept) < size else size
        full = full or included < size
        files.append(InstructionFile(path, size, included, from_user))
        section = _section(path, text, size - included)
        used += len(SEPARATOR) + len(section.encode())
        sections.append(section)
    instructions = ProjectInstructions(root, limit, tuple(files))
    if not sections:
        return instructions
    unsent = [f for f in files if f.included == 0 and f.size > 0 and not f.problem]
    if unsent:
        sections.append(
            f"[... {len(unsent):,} more instruction file{'s' if len(unsent) > 1 else ''} "
            f"({sum(f.size for f in unsent):,} bytes) left out: instructions are capped ...]"
        )
    return ProjectInstructions(
        instructions.root, limit, instructions.files, SEPARATOR.join([HEADING, *sections])
    )


def _read_within(path: str, tree: str, room: int) -> tuple[int, bytes]:
    """The size of the file at ``path`` and at most ``room`` bytes of it. A link that
    leads out of ``tree`` (the project, or the user's folder) is not followed: a cloned
    repository's AGENTS.md must not send ~/.ssh/id_rsa to the model.

    ``path`` is in a folder already resolved (:func:`instruction_folders`): only a link
    at its last step needs resolving, and resolving every path whole made 1,200 nested
    folders cost 700,000 lookups."""
    real = os.path.realpath(path) if os.path.islink(path) else path
    if os.path.commonpath([real, tree]) != tree:
        raise OSError(errno.EACCES, f"it leads outside {tree} (to {real}); not read")
    descriptor = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(descriptor, "rb") as source:
        status = os.fstat(source.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file; not read")
        return status.st_size, source.read(min(room, status.st_size))


def _section(path: str, text: str, left_out: int) -> str:
    """One file's part: its path as a heading, its text, and what the cap left out."""
    parts = [_heading(path), text.strip("\n")] if text.strip() else [_heading(path)]
    if left_out:
        parts.append(f"[... {left_out:,} bytes of this file left out: instructions are capped ...]")
    return SEPARATOR.join(parts)


def _short(path: str, most: int = 120) -> str:
    """A path of at most ``most`` characters, its middle left out (a deep folder's)."""
    if len(path) <= most:
        return path
    half = (most - 1) // 2
    return f"{path[:half]}…{path[-half:]}"


def _heading(path: str) -> str:
    return f"## {path}"
