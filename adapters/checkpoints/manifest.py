"""What a checkpoint keeps besides git's tree: its turn, and what git does not record.

It is the checkpoint commit's message, as JSON: the session and task of the turn it
was taken before, empty folders, permission bits git does not keep (it keeps only the
executable bit), what was left out and why (too large, a repository of its own, an
ignore rule), and a fingerprint of the user's own repository, to say when a turn
changed it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any


@dataclasses.dataclass(frozen=True, slots=True)
class Manifest:
    session: str = ""
    task: str = ""
    created: float = 0.0
    empty_dirs: tuple[str, ...] = ()
    modes: tuple[tuple[str, int], ...] = ()
    """Regular files whose permission bits are neither 644 nor 755."""
    skipped_large: tuple[str, ...] = ()
    skipped_nested: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    """What an ignore rule of the workspace left out (folders end in ``/``)."""
    user_git: tuple[tuple[str, str], ...] | None = None
    undid: int = 0
    """For the state kept by an undo: the number of the checkpoint it went back to."""

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """The manifest in a commit message; an unreadable one is an empty manifest."""
        try:
            data: dict[str, Any] = json.loads(text)
        except ValueError:
            return cls()
        if not isinstance(data, dict):
            return cls()
        user_git = data.get("user_git")
        return cls(
            session=str(data.get("session", "")),
            task=str(data.get("task", "")),
            created=float(data.get("created", 0.0)),
            empty_dirs=tuple(data.get("empty_dirs", ())),
            modes=tuple((str(path), int(mode)) for path, mode in data.get("modes", ())),
            skipped_large=tuple(data.get("skipped_large", ())),
            skipped_nested=tuple(data.get("skipped_nested", ())),
            ignored=tuple(data.get("ignored", ())),
            user_git=tuple((k, v) for k, v in user_git) if user_git is not None else None,
            undid=int(data.get("undid", 0)),
        )


def user_repository_state(workspace: str) -> tuple[tuple[str, str], ...] | None:
    """A fingerprint of the workspace's own repository (its HEAD, refs and index), read
    as plain files: no git runs on it, so nothing of the user's runs or is refreshed.
    None when the workspace is not a repository."""
    git = os.path.join(workspace, ".git")
    if not os.path.isdir(git):
        return None
    state: dict[str, str] = {}
    for name in ("HEAD", "packed-refs", "index"):
        try:
            with open(os.path.join(git, name), "rb") as handle:
                state[name] = hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            pass
    digest = hashlib.sha256()
    for root, folders, files in os.walk(os.path.join(git, "refs")):
        folders.sort()
        for name in sorted(files):
            try:
                path = os.path.join(root, name)
                with open(path, "rb") as handle:
                    digest.update(os.fsencode(os.path.relpath(path, git)) + b"\0" + handle.read())
            except OSError:
                pass
    state["refs"] = digest.hexdigest()
    return tuple(sorted(state.items()))
