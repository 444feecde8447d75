"""``treadle --worktree [NAME]``, ``treadle worktree list|remove NAME`` and the worktrees
of ``treadle batch --worktree`` (issue 27).

A session with ``--worktree`` works in a git worktree of the repository it was started
in, on the branch ``treadle/NAME``, in a folder under ``worktree_dir`` (default: the
state folder's ``worktrees``); the same subfolder of it as the one it was started in.
Its commands may also write the repository's own ``.git`` folder, which the worktree's
git writes to (a commit on its branch), as they may in a session in the checkout itself.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import TextIO

from treadle.adapters.worktrees import Worktree, WorktreeError, Worktrees
from treadle.domain.rules.worktree import check_name, leaving_lines
from treadle.entrypoints.config import ConfigError, flag_values, load_config
from treadle.entrypoints.paths import new_session_id, state_dir


@dataclass(frozen=True, slots=True)
class EnteredWorktree:
    """The worktree a session runs in, and the repository's folder its git writes to."""

    tree: Worktree
    common_dir: str

    def leaving(self) -> list[str]:
        return leaving_lines(self.tree.name, self.tree.path, self.tree.created)


def worktrees_root(worktree_dir: str) -> str:
    """Where the worktrees live: ``worktree_dir``, or the state folder's ``worktrees``."""
    return os.path.expanduser(worktree_dir) if worktree_dir else str(state_dir() / "worktrees")


def repository_of(folder: str, worktree_dir: str) -> Worktrees:
    """The worktrees of the repository ``folder`` is in, or a ConfigError saying it is
    in none."""
    trees = Worktrees.of(folder, worktrees_root(worktree_dir))
    if trees is None:
        where = os.path.realpath(folder)
        raise ConfigError(f"--worktree: {where} is not in a git repository")
    return trees


def enter_worktree(args: argparse.Namespace) -> EnteredWorktree:
    """Make (or reuse) the worktree ``--worktree`` names and point ``args.workspace`` at
    it; a ConfigError for a name that cannot be one, a folder in no repository, or git's
    refusal. ``--worktree`` followed by what cannot be a name is the task (``treadle
    --worktree "fix the login"``), and the worktree is named after the session."""
    name = str(args.worktree or "")
    if name and check_name(name) is not None:
        if args.task is not None:
            raise ConfigError(f"flag --worktree: {check_name(name)}")
        args.task, name = name, ""
    name = name or new_session_id()
    folder = os.path.realpath(args.workspace or os.getcwd())
    app = load_config(flags=flag_values(args), environ=os.environ)
    trees = repository_of(folder, app.worktree_dir)
    try:
        tree = trees.open(name)
    except WorktreeError as error:
        raise ConfigError(str(error)) from None
    args.workspace = _same_place(folder, trees.repository, tree.path)
    if tree.copied:
        print(
            f"treadle: worktree {name}: copied from .worktreeinclude: {', '.join(tree.copied)}",
            file=sys.stderr,
        )
    return EnteredWorktree(tree, trees.common_dir)


def _same_place(folder: str, repository: str, worktree: str) -> str:
    """The worktree's folder that is where ``folder`` is in the repository (its root when
    the worktree lacks it)."""
    relative = os.path.relpath(folder, repository)
    if relative == "." or relative.startswith(".."):
        return worktree
    inside = os.path.join(worktree, relative)
    return inside if os.path.isdir(inside) else worktree


# treadle worktree list|remove --------------------------------------------------------


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    worktree = commands.add_parser("worktree", help="the worktrees sessions work in")
    actions = worktree.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="this repository's worktrees of treadle")
    listing.add_argument("--workspace", help="a folder of the repository (default: here)")
    remove = actions.add_parser("remove", help="remove a worktree (and its branch, if merged)")
    remove.add_argument("name")
    remove.add_argument("--force", action="store_true", help="also with changes not committed")
    remove.add_argument("--workspace", help="a folder of the repository (default: here)")


def run_worktree_command(args: argparse.Namespace, out: TextIO) -> int:
    """``treadle worktree list`` or ``remove NAME``: 0, 1 when git refuses, 2 for bad use."""
    folder = args.workspace or os.getcwd()
    app = load_config(flags={}, environ=os.environ)
    trees = repository_of(folder, app.worktree_dir)
    try:
        if args.action == "list":
            return _list(trees, out)
        print(trees.remove(args.name, force=args.force), file=out)
    except WorktreeError as error:
        print(f"treadle: {error}", file=sys.stderr)
        return 1
    return 0


def _list(trees: Worktrees, out: TextIO) -> int:
    entries = trees.list()
    if not entries:
        print(f"No worktrees of treadle in {trees.repository}", file=out)
        return 0
    table = [("NAME", "BRANCH", "FOLDER")]
    table += [(e.branch.removeprefix("treadle/"), e.branch, e.path) for e in entries]
    width = [max(len(row[i]) for row in table) for i in range(2)]
    for name, branch, path in table:
        print(f"{name.ljust(width[0])}  {branch.ljust(width[1])}  {path}", file=out)
    return 0
