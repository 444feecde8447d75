"""Keeping file tools inside the workspace, after resolving symlinks.

Example::

    workspace = Workspace("/home/me/project")
    workspace.resolve("src/app.py")      # Success("/home/me/project/src/app.py")
    workspace.resolve("../secrets.txt")  # Failure("../secrets.txt is outside the workspace ...")
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from returns.result import Failure, Result, Success


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
        real = os.path.realpath(os.path.join(self.root, os.path.expanduser(path)))
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

    def show(self, real: str) -> str:
        """How a resolved path is shown: relative to the root when inside it."""
        if _within(real, self.root):
            return os.path.relpath(real, self.root)
        return real


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
