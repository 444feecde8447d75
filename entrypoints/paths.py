"""Where treadle keeps its own files: the state folder, the config folder, the caches.

Every path treadle reads or writes of its own is made here, from the environment
(``TREADLE_STATE_DIR``, ``TREADLE_CONFIG_DIR``) or else the platform's folders::

    state_dir()                      # ~/.local/state/treadle
    sessions_dir() / "20261201-…"    # one session's folder
    user_config_path(os.environ)     # ~/.config/treadle/config.toml

platformdirs is imported only when no variable names the folder.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path

from treadle.adapters.transcript.session_log import LOG_FILE

STATE_VARIABLE = "TREADLE_STATE_DIR"
CONFIG_VARIABLE = "TREADLE_CONFIG_DIR"
PATH_VARIABLES = frozenset({STATE_VARIABLE, CONFIG_VARIABLE})
"""``TREADLE_*`` variables that name folders, not configuration keys."""
USER_FILE = "config.toml"
PROJECT_FILE = ".treadle.toml"
TRUST_FILE = "trusted-folders"


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where sessions, checkpoints and caches live: ``TREADLE_STATE_DIR``, else the
    platform's state folder."""
    override = (os.environ if environ is None else environ).get(STATE_VARIABLE)
    if override:
        return Path(override)
    import platformdirs  # only when no variable says

    return Path(platformdirs.user_state_dir("treadle"))


def new_session_id() -> str:
    """A new session's folder name: when it started, and six random hex digits."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + os.urandom(3).hex()


def sessions_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of every session's folder."""
    return state_dir(environ) / "sessions"


def cache_dir(state: str, workspace_key: str) -> str:
    """A workspace's cache for its commands (under the sandbox); "" without a state folder."""
    return os.path.join(state, "cache", workspace_key) if state else ""


def config_dir(environ: Mapping[str, str]) -> Path:
    """``$TREADLE_CONFIG_DIR``, else the platform's config folder."""
    folder = environ.get(CONFIG_VARIABLE)
    if folder:
        return Path(folder)
    import platformdirs  # only when no variable says

    return Path(platformdirs.user_config_dir("treadle"))


def user_config_path(environ: Mapping[str, str]) -> Path:
    """The user's ``config.toml``."""
    return config_dir(environ) / USER_FILE


def project_config_path(workspace: str) -> Path:
    """The project's ``.treadle.toml``, at the workspace's top."""
    return Path(workspace) / PROJECT_FILE


def trusted_folders_path(environ: Mapping[str, str]) -> Path:
    """The record of the folders the user trusted (``treadle trust``)."""
    return config_dir(environ) / TRUST_FILE


def outside_log_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where a bug outside any session leaves its traceback: the state folder's
    ``treadle.log``, the name a session's log has in its own folder."""
    return state_dir(environ) / LOG_FILE


SETTINGS_FILE_LIMIT = 4 * 1024 * 1024
"""Bytes a settings file may hold (``config.toml``, ``.treadle.toml``, Claude Code's
``settings.json``): more is refused, not read."""


def read_settings_file(path: str | Path, limit: int = SETTINGS_FILE_LIMIT) -> bytes:
    """A settings file's bytes, read only when it is a regular file of at most ``limit``
    bytes: a repository's ``.treadle.toml`` committed as a symlink to ``/dev/zero`` (or
    a FIFO) would be read without end. ``FileNotFoundError`` when there is none; any
    other ``OSError`` names why it is not read (the path left for the caller to say)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise OSError("not a regular file (a FIFO, a folder, a device)")
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise OSError(f"larger than {limit // (1024 * 1024)} MiB")
    return data
