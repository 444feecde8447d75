"""The real WorkspaceIsolation: a sub-agent's git worktree, and the diff it leaves.

``isolate`` makes a worktree of the repository the workspace is in, on the branch
``treadle/<agent>-<6 hex digits>`` (two sessions' ``agent-1`` never share one), under
the worktrees' root, and lets the session's commands write it (``allow_writing``: the
sandbox). ``finish`` stages everything the sub-agent left in it and diffs that against
the commit it started from (its own commits included); without changes the worktree and
its branch are removed.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from returns.result import Failure, Result, Success

from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.tools import Isolated

DIFF_LIMIT = 60_000
"""Bytes of a sub-agent's diff its caller reads (head and tail); the branch has it all."""


class WorktreeIsolation:
    """Sub-agents' worktrees under ``root``; ``allow_writing(folder)`` opens one to the
    session's commands."""

    def __init__(self, root: str, allow_writing: Callable[[str], None] = lambda folder: None):
        self._root = root
        self._allow_writing = allow_writing

    async def isolate(self, workspace: str, agent: str) -> Result[Isolated, str]:
        return await asyncio.to_thread(self._isolate, workspace, agent)

    def _isolate(self, workspace: str, agent: str) -> Result[Isolated, str]:
        # git's worktrees only once a sub-agent asks for one: every session offers the
        # port, and importing them cost 3 ms before the first request.
        from treadle.adapters.worktrees import WorktreeError, Worktrees, git
        from treadle.domain.rules.worktree import name_for

        folder = os.path.realpath(workspace)
        trees = Worktrees.of(folder, self._root)
        if trees is None:
            return Failure(f"the workspace {folder} is in no git repository")
        base = git(trees.repository, "rev-parse", "--verify", "--quiet", "HEAD")
        if base.returncode != 0:
            return Failure("the repository has no commit to start a worktree from")
        name = f"{name_for(agent.replace('/', '-'))}-{os.urandom(3).hex()}"
        try:
            tree = trees.open(name)
        except WorktreeError as error:
            return Failure(str(error))
        self._allow_writing(tree.path)
        self._allow_writing(trees.common_dir)  # its git writes there (a commit)
        relative = os.path.relpath(folder, trees.repository)
        inside = os.path.join(tree.path, relative) if not relative.startswith("..") else tree.path
        where = inside if os.path.isdir(inside) else tree.path
        return Success(Isolated(where, tree.path, tree.branch, base.stdout.strip()))

    async def finish(self, isolated: Isolated) -> str:
        return await asyncio.to_thread(self._finish, isolated)

    def _finish(self, isolated: Isolated) -> str:
        from treadle.adapters.worktrees import Worktrees, git

        folder = isolated.folder
        git(folder, "add", "-A")
        done = git(folder, "diff", "--cached", "--no-color", "--no-ext-diff", isolated.base)
        diff = done.stdout if done.returncode == 0 else ""
        if diff.strip():
            return OutputBound.of(diff.encode("utf-8", "replace"), DIFF_LIMIT).text()
        main = Worktrees.of(folder, self._root)
        if main is not None:
            git(main.repository, "worktree", "remove", "--force", folder)
            git(main.repository, "branch", "-D", isolated.branch)
        return ""
