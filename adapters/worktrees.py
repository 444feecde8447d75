"""Git worktrees of the person's repository, for sessions that work apart (issue 27).

``Worktrees.of(folder, root)`` finds the repository ``folder`` is in (None: it is in
none); ``open(name)`` makes the worktree ``name`` on a new branch ``treadle/NAME`` from
the repository's HEAD, or reuses it (or its branch) when it exists, and copies in the
files ``.worktreeinclude`` names that the new checkout lacks (``.env`` and the like,
which git does not track); ``remove(name)`` removes it, and its branch when that is
merged. Git runs as the person would run it, in their repository, never prompting.

Example::

    trees = Worktrees.of("/src/app", "/home/me/.local/state/treadle/worktrees")
    tree = trees.open("fix-login")      # /…/worktrees/app-1a2b3c4d/fix-login
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from treadle.domain.rules.worktree import (
    WorktreeEntry,
    branch_of,
    include_patterns,
    read_worktree_list,
    repository_folder,
    sessions_worktrees,
)

INCLUDE_FILE = ".worktreeinclude"


class WorktreeError(Exception):
    """git refused (a dirty worktree, a branch in use…); the message says what to do."""


@dataclass(frozen=True, slots=True)
class Worktree:
    name: str
    path: str
    branch: str
    created: bool = False
    copied: tuple[str, ...] = ()
    """The files ``.worktreeinclude`` brought in, relative to the repository."""


def _environment(environ: Mapping[str, str]) -> dict[str, str]:
    """Git's environment: the person's, without a parent git's own variables (a hook
    running treadle would point it elsewhere), never waiting for a password."""
    kept = {
        name: value
        for name, value in environ.items()
        if not name.startswith("GIT_") or name.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))
    }
    return {**kept, "GIT_TERMINAL_PROMPT": "0"}


def git(folder: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``git -C folder ARGUMENTS`` to its end, output captured, never prompting."""
    return subprocess.run(
        ["git", "-C", folder, *arguments],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=_environment(os.environ),
        check=False,
    )


def _said(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return lines[-1].removeprefix("fatal: ").removeprefix("error: ") if lines else "git failed"


class Worktrees:
    """The worktrees treadle keeps for one repository, under ``root``."""

    def __init__(self, repository: str, root: str, common_dir: str) -> None:
        self.repository = repository
        self.common_dir = common_dir
        """The repository's own ``.git`` folder, which every worktree's git writes to."""
        self.folder = Path(root) / repository_folder(repository)

    @classmethod
    def of(cls, folder: str, root: str) -> Worktrees | None:
        """The worktrees of the repository ``folder`` is in; None when it is in none (or
        git is missing)."""
        try:
            done = git(folder, "rev-parse", "--show-toplevel", "--git-common-dir")
        except OSError:
            return None
        if done.returncode != 0:
            return None
        top, common = done.stdout.splitlines()[:2]
        # The main checkout's, also when ``folder`` is in a worktree already.
        common_dir = os.path.realpath(os.path.join(top, common))
        main = _main_checkout(top, common_dir)
        return cls(main, root, common_dir)

    def entries(self) -> list[WorktreeEntry]:
        done = git(self.repository, "worktree", "list", "--porcelain")
        if done.returncode != 0:
            raise WorktreeError(_said(done))
        return read_worktree_list(done.stdout)

    def list(self) -> list[WorktreeEntry]:
        """The worktrees on ``treadle/`` branches, the main checkout left out."""
        return sessions_worktrees(self.entries())

    def path_of(self, name: str) -> Path:
        return self.folder / name

    def open(self, name: str) -> Worktree:
        """Make the worktree ``name``, or reuse it."""
        path, branch = self.path_of(name), branch_of(name)
        for entry in self.entries():
            if os.path.realpath(entry.path) == os.path.realpath(path):
                return Worktree(name, str(path), branch)
            if entry.branch == branch:  # its branch is checked out elsewhere: work there
                return Worktree(name, entry.path, branch)
        self.folder.mkdir(parents=True, exist_ok=True)
        git(self.repository, "worktree", "prune")  # a folder removed by hand: forgotten
        exists = git(self.repository, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        if exists.returncode == 0:
            done = git(self.repository, "worktree", "add", str(path), branch)
        else:
            done = git(self.repository, "worktree", "add", "-b", branch, str(path), "HEAD")
        if done.returncode != 0:
            raise WorktreeError(f"cannot make worktree {name}: {_said(done)}")
        copied = copy_included(Path(self.repository), path)
        return Worktree(name, str(path), branch, created=True, copied=copied)

    def remove(self, name: str, *, force: bool = False) -> str:
        """Remove the worktree ``name``, and its branch if merged; what was done."""
        branch = branch_of(name)
        entry = next((e for e in self.list() if e.branch == branch), None)
        if entry is None:
            raise WorktreeError(f"no worktree {name} (treadle worktree list shows them)")
        done = git(self.repository, "worktree", "remove", *(["--force"] * force), entry.path)
        if done.returncode != 0:
            why = _said(done)
            if "modified or untracked" in why or "contains" in why:
                why = (
                    "it has changes not committed: commit them, or "
                    f"treadle worktree remove {name} --force"
                )
            raise WorktreeError(f"cannot remove worktree {name}: {why}")
        deleted = git(self.repository, "branch", "-d", branch)
        if deleted.returncode == 0:
            return f"removed worktree {name} ({entry.path}) and its branch {branch}"
        return (
            f"removed worktree {name} ({entry.path}); branch {branch} kept: it is not "
            f"merged (git merge {branch}, or git branch -D {branch} to drop it)"
        )


def _main_checkout(top: str, common_dir: str) -> str:
    """The main checkout's folder: the one whose ``.git`` is the common folder."""
    if os.path.basename(common_dir) == ".git":
        return os.path.dirname(common_dir)
    return os.path.realpath(top)  # a bare repository's worktree: it is its own root


def copy_included(repository: Path, worktree: Path) -> tuple[str, ...]:
    """Copy into ``worktree`` the files of ``repository`` that its ``.worktreeinclude``
    names and the worktree lacks; symlinks, and what resolves outside, are left out."""
    try:
        text = (repository / INCLUDE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    root = repository.resolve()
    copied: list[str] = []
    for pattern in include_patterns(text):
        for found in sorted(repository.glob(pattern)):
            for source in _files(found):
                relative = source.relative_to(repository)
                if not _inside(source, root) or ".git" in relative.parts:
                    continue
                target = worktree / relative
                if target.exists() or target.is_symlink():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target, follow_symlinks=False)
                copied.append(str(relative))
    return tuple(copied)


def _files(found: Path) -> Sequence[Path]:
    if found.is_symlink():
        return ()
    if found.is_dir():
        return [p for p in sorted(found.rglob("*")) if p.is_file() and not p.is_symlink()]
    return [found] if found.is_file() else ()


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True
