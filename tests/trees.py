"""What tests of checkpoints share: a workspace's files and a repository's bytes, as values."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

USER_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "user",
    "GIT_AUTHOR_EMAIL": "user@example.test",
    "GIT_COMMITTER_NAME": "user",
    "GIT_COMMITTER_EMAIL": "user@example.test",
}


def user_git(workspace: Path, *args: str) -> str:
    """The user's own git, in their repository (none of treadle's settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | USER_GIT_ENV
    done = subprocess.run(
        ["git", *args], cwd=workspace, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def tree_state(root: Path, *, leave_out: tuple[str, ...] = ()) -> dict[str, tuple[object, ...]]:
    """Every path under ``root`` but ``.git`` (and ``leave_out``): its kind, its content's
    digest or its link's target, its permission bits."""
    state: dict[str, tuple[object, ...]] = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f != ".git"]
        for name in folders + files:
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, root)
            if relative.split(os.sep)[0] in leave_out:
                continue
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                state[relative] = ("link", os.readlink(full))
            elif stat.S_ISDIR(info.st_mode):
                state[relative] = ("folder",)
            else:
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
                state[relative] = ("file", digest, stat.S_IMODE(info.st_mode))
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(folder, f))]
    return state


def dot_git_bytes(workspace: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under ``.git``: its content's digest, mode, size and times (ns)."""
    found: dict[str, tuple[object, ...]] = {}
    for folder, folders, files in os.walk(workspace / ".git"):
        for name in folders + files:
            full = os.path.join(folder, name)
            info = os.lstat(full)
            digest = ""
            if stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
            found[os.path.relpath(full, workspace)] = (
                digest,
                info.st_mode,
                info.st_size,
                info.st_mtime_ns,
            )
    return found


def write(path: Path, content: str | bytes, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    if mode is not None:
        path.chmod(mode)
