"""Checkpoints of the workspace before each turn, in a shadow git repository.

Example::

    shadow = shadow_for(state_dir, "/src/app")
    shadow.record(session=session_id, task=task)
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

from treadle.adapters.checkpoints.shadow import (
    Changes,
    Checkpoint,
    CheckpointLimits,
    Restored,
    ShadowRepository,
)

FOLDER = "checkpoints"
OWN_PARTS = (FOLDER, "sessions", "cache")


def workspace_key(workspace: str) -> str:
    """A folder name for what treadle keeps about one workspace (its checkpoints, its
    commands' caches): a digest of the folder's real path."""
    return hashlib.sha256(os.fsencode(os.path.realpath(workspace))).hexdigest()[:16]


def shadow_for(
    state_dir: str, workspace: str, *, own_folders: Sequence[str] = (), **limits: int
) -> ShadowRepository:
    """The shadow repository of ``workspace``: one per folder, whatever the session,
    in ``<state>/checkpoints/<a digest of the folder's real path>``."""
    real = os.path.realpath(workspace)
    folder = os.path.join(state_dir, FOLDER, workspace_key(real))
    # The state folder may lie in the workspace (or be it): its parts are never recorded.
    own = (state_dir, *(os.path.join(state_dir, part) for part in OWN_PARTS), *own_folders)
    return ShadowRepository(real, folder, limits=CheckpointLimits(**limits), own_folders=own)


__all__ = [
    "Changes",
    "Checkpoint",
    "CheckpointLimits",
    "Restored",
    "ShadowRepository",
    "shadow_for",
    "workspace_key",
]
