"""The WorkspaceIsolation port: a workspace of its own for a sub-agent (issue 27)."""

from __future__ import annotations

from typing import Protocol

from returns.result import Result

from treadle.domain.values.tools import Isolated


class WorkspaceIsolation(Protocol):
    """Makes a sub-agent's own copy of the workspace (a git worktree on a branch of its
    own) and, once it has reported, says what it changed there.

    ``isolate`` fails with the reason when it cannot be had (the workspace is in no git
    repository). ``finish`` returns the changes as a unified diff against where the copy
    started, "" when there are none; a copy without changes is removed, one with
    changes kept (its branch names it) for the caller to merge or drop.
    """

    async def isolate(self, workspace: str, agent: str) -> Result[Isolated, str]: ...

    async def finish(self, isolated: Isolated) -> str: ...
