"""Git worktrees for sessions (issue 27): names, branches, folders, what git lists.

``treadle --worktree NAME`` works in a git worktree of the repository on the branch
``treadle/NAME``, in a folder of treadle's (under the state folder, or
``worktree_dir``), one folder per repository. These are the decisions about them as
pure functions; :mod:`treadle.adapters.worktrees` runs git.

Example::

    >>> check_name("fix-login"), branch_of("fix-login")
    (None, 'treadle/fix-login')
    >>> check_name("../up")
    "'../up' cannot name a worktree: letters, digits, . _ - (not first: . or -)"
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from treadle.domain.values.tools import Isolated

BRANCH_PREFIX = "treadle/"
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,79}\Z")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name a worktree (and its branch), or None when it can."""
    if _NAME.match(name) and ".." not in name and not name.endswith((".lock", ".")):
        return None
    return f"{name!r} cannot name a worktree: letters, digits, . _ - (not first: . or -)"


def name_for(text: str) -> str:
    """A worktree name made from any text (a batch task's id): what cannot be in a name
    becomes ``-``.

    >>> name_for("fix #12: the login"), name_for("..")
    ('fix-12-the-login', 'task')
    """
    name = _NOT_IN_NAME.sub("-", text).strip("-.")[:80].rstrip("-.")
    name = re.sub(r"\.{2,}", ".", name)
    return name if name and check_name(name) is None else "task"


def branch_of(name: str) -> str:
    return BRANCH_PREFIX + name


def repository_folder(repository: str) -> str:
    """The folder, under the worktrees' root, that holds one repository's worktrees:
    its name and a digest of its path (two checkouts named alike stay apart).

    >>> repository_folder("/src/app")
    'app-c0167fc9'
    """
    digest = hashlib.sha256(repository.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{repository.rstrip('/').rpartition('/')[2] or 'root'}-{digest}"


@dataclass(frozen=True, slots=True)
class WorktreeEntry:
    """One worktree as ``git worktree list --porcelain`` gives it."""

    path: str
    branch: str = ""
    """Its branch without ``refs/heads/`` ("" when detached)."""
    head: str = ""


def read_worktree_list(porcelain: str) -> list[WorktreeEntry]:
    """The entries of ``git worktree list --porcelain``.

    >>> read_worktree_list("worktree /r\\nHEAD ab\\nbranch refs/heads/main\\n\\n")
    [WorktreeEntry(path='/r', branch='main', head='ab')]
    """
    entries: list[WorktreeEntry] = []
    path = branch = head = ""
    for line in [*porcelain.splitlines(), ""]:
        key, _, value = line.partition(" ")
        if key == "worktree":
            path = value
        elif key == "branch":
            branch = value.removeprefix("refs/heads/")
        elif key == "HEAD":
            head = value
        elif not line and path:
            entries.append(WorktreeEntry(path, branch, head))
            path = branch = head = ""
    return entries


def sessions_worktrees(entries: Sequence[WorktreeEntry]) -> list[WorktreeEntry]:
    """The worktrees treadle made: those on a ``treadle/`` branch, the main checkout (git
    lists it first) left out even when it is on one."""
    return [entry for entry in entries[1:] if entry.branch.startswith(BRANCH_PREFIX)]


def include_patterns(text: str) -> list[str]:
    """The patterns of a ``.worktreeinclude``: one a line, ``#`` comments and blank
    lines left out, none that climbs out of the repository.

    >>> include_patterns("# secrets\\n.env\\n\\nconfig/*.local\\n../outside\\n/abs\\n")
    ['.env', 'config/*.local']
    """
    patterns = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("/") or ".." in line.split("/"):
            continue
        patterns.append(line)
    return patterns


def leaving_lines(name: str, path: str, created: bool) -> list[str]:
    """What a session in a worktree says as it ends: where it is, how to merge or drop it.

    >>> leaving_lines("x", "/w/x", True)[0]
    'worktree x: /w/x, branch treadle/x (made for this session)'
    """
    made = "made for this session" if created else "reused"
    branch = branch_of(name)
    return [
        f"worktree {name}: {path}, branch {branch} ({made})",
        f"  merge it: git merge {branch} (commit in the worktree first)",
        f"  remove it: treadle worktree remove {name}",
    ]


def isolation_report(isolated: Isolated, changes: str) -> str:
    """What the caller of a sub-agent in a worktree reads after its report: the diff of
    what it changed, where it is and how to take it; or that it changed nothing.

    >>> isolation_report(Isolated("/w/a", "/w/a", "treadle/agent-1-ab"), "")
    'It worked in a worktree of its own and changed nothing there (the worktree is removed).'
    """
    if not changes:
        return (
            "It worked in a worktree of its own and changed nothing there "
            "(the worktree is removed)."
        )
    return (
        f"It worked in the worktree {isolated.folder}, on the branch {isolated.branch}; "
        "your workspace has none of its changes. To take them: git merge "
        f"{isolated.branch} (once committed there), or apply this diff. Its changes:\n"
        f"```diff\n{changes.rstrip()}\n```"
    )
