"""Keeping file tools inside the workspace, after resolving symlinks.

A path is checked (:meth:`Workspace.resolve`), then opened one folder at a time from a
descriptor of the root, never following a symlink (:meth:`Workspace.open_beneath`,
:meth:`Workspace.folder_beneath`): a folder swapped for a link between the check and
the use (by a command running beside the tool) makes the open fail, instead of leading
outside.

Example::

    workspace = Workspace("/home/me/project")
    workspace.resolve("src/app.py")      # Success("/home/me/project/src/app.py")
    workspace.resolve("../secrets.txt")  # Failure("../secrets.txt is outside the workspace ...")
    descriptor = workspace.open_beneath("/home/me/project/src/app.py", os.O_RDONLY)
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from returns.result import Failure, Result, Success

_FOLDER = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LinkOnTheWay(OSError):
    """A folder on the way, or the file itself, became a symlink after the path was checked."""

    def __init__(self, name: str) -> None:
        super().__init__(errno.ELOOP, f"{name} changed into a symlink while it was opened")


@dataclass(frozen=True, slots=True)
class Workspace:
    """The folder the file tools may touch, and folders they may only read.

    ``readable`` holds extra read-only roots: the session folder, where a command's
    full output is saved when its bound cut it.
    """

    root: str
    readable: Sequence[str] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", os.path.realpath(self.root))
        object.__setattr__(self, "readable", tuple(os.path.realpath(r) for r in self.readable if r))

    def resolve(self, path: str, *, for_writing: bool = False) -> Result[str, str]:
        """The real path ``path`` names (relative to the root), if it is ours to touch.

        Symlinks are followed first, so a link inside pointing outside is refused,
        and so is ``..`` that climbs out; a path that does not exist yet is judged
        by the folders it would be in.
        """
        if not path or "\0" in path:
            return Failure("the path is empty" if not path else "the path contains a NUL byte")
        try:
            real = os.path.realpath(os.path.join(self.root, os.path.expanduser(path)))
        except OSError as error:  # a link that changed while it was being followed
            return Failure(f"{path} cannot be resolved: {error.strerror or error}")
        if _within(real, self.root):
            return Success(real)
        in_readable = any(_within(real, root) for root in self.readable)
        if in_readable and not for_writing:
            return Success(real)
        if in_readable:
            return Failure(f"{path} is in the session folder, which tools may read but not write")
        through_link = real != os.path.normpath(os.path.join(self.root, path))
        how = f" (it resolves to {real})" if through_link else ""
        return Failure(f"{path} is outside the workspace {self.root}{how}")

    def open_beneath(self, real: str, flags: int, mode: int = 0o666) -> int:
        """A descriptor for ``real`` (a path :meth:`resolve` gave), opened without following
        any symlink from the root it is in; raises OSError (:class:`LinkOnTheWay` for a
        link that appeared)."""
        folder, name = self.folder_beneath(real)
        try:
            return _open_here(folder, name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        finally:
            os.close(folder)

    def folder_beneath(self, real: str, *, create: bool = False) -> tuple[int, str]:
        """A descriptor of the folder that holds ``real``, and ``real``'s name in it.

        ``create`` makes the missing folders on the way, each inside the one before."""
        root = next((r for r in (self.root, *self.readable) if _within(real, r)), None)
        if root is None:
            raise OSError(errno.EINVAL, f"{real} is not inside the workspace")
        if real == root:
            raise IsADirectoryError(errno.EISDIR, "the workspace itself is a folder", real)
        *folders, name = os.path.relpath(real, root).split(os.sep)
        current = os.open(root, _FOLDER & ~os.O_NOFOLLOW)
        try:
            for part in folders:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, dir_fd=current)
                inner = _open_here(current, part, _FOLDER)
                os.close(current)
                current = inner
        except BaseException:
            os.close(current)
            raise
        return current, name

    def show(self, real: str) -> str:
        """How a resolved path is shown: relative to the root when inside it."""
        if _within(real, self.root):
            return os.path.relpath(real, self.root)
        return real


def _open_here(folder: int, name: str, flags: int, mode: int = 0o666) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=folder)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(folder, name):
            raise LinkOnTheWay(name) from None
        raise


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
