"""Project trust (issues 15 and 20): what a project's ``.treadle.toml`` may set.

A repository's file must not send the user's key to another server, name another
variable to send, let secrets or commands through, start tool servers, run a scripted
model without asking, or loosen the sandbox: those values (each key's ``trust`` in
:data:`~treadle.entrypoints.config_schema.KEYS`) count only in a folder the user has
trusted — and only for the file's content the user trusted. ``treadle trust`` records
the folder with a digest of its ``.treadle.toml``; a file changed since (by a command
the agent ran, say) is held back as an untrusted one is, until trusted again::

    trust_folder("/src/app", os.environ)        # records the file as it is now
    trust_state("/src/app", content, environ)   # "trusted", "changed", …

AGENTS.md is not bound: it is sent in every folder, trusted or not (it is the
project's word to the model, which the approval policy and the sandbox already treat
as untrusted), so trust gives it nothing a change could take over.

The same holds for ``.claude/settings.json`` and ``.claude/settings.local.json``
(issue 23): their hooks run commands, so they run only in a trusted folder, for the
content the user trusted (``part="claude"``).

The record, ``trusted-folders`` in the user's config folder, has a line per folder:
``sha256:HEX,claude=sha256:HEX /real/path`` (``none`` for a folder with no such file).
A line of a path alone (written before the digests were) trusts no content: what its
folder's file says may already be a command's, so the folder is asked again, once, by
the same line; so is a line without the Claude settings' digest, for their hooks.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from treadle.entrypoints.config_schema import KEYS, AppConfig
from treadle.entrypoints.paths import (
    project_config_path,
    read_settings_file,
    trusted_folders_path,
)

TrustState = Literal["trusted", "changed", "unrecorded", "untrusted"]
TrustedPart = Literal["project", "claude"]
"""What of a folder trust is bound to: its ``.treadle.toml``, or its Claude Code
settings (``.claude/settings.json`` and ``.claude/settings.local.json``)."""
CLAUDE_SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
NO_FILE = "none"
HELD_BECAUSE: dict[TrustState, str] = {
    "untrusted": "this folder is not trusted (a repository could send your key elsewhere)",
    "changed": "the file changed since you trusted this folder (a command may have written it)",
    "unrecorded": "this folder was trusted before treadle recorded what its file says",
    "trusted": "",
}


WIDENING = {"sandbox_network": ("off", "allowlist", "on")}
"""Keys whose ``safe`` values are ordered narrowest first: a project file's counts
untrusted only when it is no wider than what the user chose (``allowlist`` lets out
the user's list, which ``off`` did not)."""
KEEPING = ("network_deny",)
"""Lists a project file's value replaces: it counts untrusted only when it keeps every
entry of the user's (``network_deny = []`` would let out what the user denied)."""


LOWERING = ("max_cost", "max_tokens_total", "max_requests", "max_time")
"""Spending limits: a project file's counts untrusted only when it is no higher than
the user's (where the user set none, any limit narrows)."""


def needs_trust(
    key: str, value: object, current: AppConfig | None = None, workspace: str | None = None
) -> bool:
    """Whether a project file may set ``key`` to ``value`` only in a trusted folder;
    ``current`` is what the layers before it (the user's file) say, ``workspace`` the
    folder whose file it is."""
    spec = KEYS[key]
    if current is not None and key in KEEPING:
        kept = getattr(current, key)
        return not set(kept) <= set(value if isinstance(value, list | tuple) else ())
    if current is not None and key in LOWERING:
        before = getattr(current, key)
        return before is not None and isinstance(value, int | float) and value > before
    if current is not None and key == "prices" and isinstance(value, Mapping):
        return any(  # a price lowered would let a cost limit be spent past its sum
            isinstance(price, int | float)
            and price < current.prices.get(model, {}).get(name, price)
            for model, table in value.items()
            if isinstance(table, Mapping)
            for name, price in table.items()
        )
    if key == "output_schema" and workspace is not None:  # it goes to the model
        return not _inside(workspace, str(value))
    match spec.trust:
        case "free":
            return False
        case "always":
            return True
        case "raise":
            return isinstance(value, int | float) and value > getattr(AppConfig(), key)
        case "unless":
            order = WIDENING.get(key, ())
            before = getattr(current, key, None) if current is not None else None
            if before in order and value in order:
                return value not in spec.safe or order.index(value) > order.index(before)
            return value not in spec.safe
        case "starting":
            return isinstance(value, str) and value.startswith(spec.risky)
        case "enabled":
            tables = value.values() if isinstance(value, Mapping) else ()
            return any(dict(table).get("enabled", True) is not False for table in tables)
        case "command":
            return not isinstance(value, bool)


def digest(content: bytes | None) -> str:
    """What the record keeps of a project file's content (None: there is no file)."""
    return NO_FILE if content is None else "sha256:" + hashlib.sha256(content).hexdigest()


def _records(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Each trusted folder's real path and the digests it was trusted with, by part
    (none for a line written before digests were)."""
    try:
        lines = trusted_folders_path(environ).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    records: dict[str, dict[str, str]] = {}
    for line in lines:
        if line.startswith(os.sep):  # a path alone: trusted before its content was
            records[line] = {}
        elif " " in line:
            recorded, _, path = line.partition(" ")
            first, *others = recorded.split(",")
            parts = {"project": first}
            for other in others:
                name, _, value = other.partition("=")
                parts[name] = value
            records[path] = parts
    return records


def trust_state(
    workspace: str,
    content: bytes | None,
    environ: Mapping[str, str],
    part: TrustedPart = "project",
) -> TrustState:
    """Whether ``workspace`` is trusted for ``content``: its project file's, or (``part``
    ``claude``) its Claude Code settings' (:func:`read_claude_settings`)."""
    recorded = _records(environ).get(os.path.realpath(workspace))
    if recorded is None:
        return "untrusted"
    if not recorded.get(part):
        return "unrecorded"
    return "trusted" if recorded[part] == digest(content) else "changed"


def read_claude_settings(workspace: str) -> bytes | None:
    """Claude Code's settings files of the folder, as one content that trust is bound
    to (each file's name before its bytes); None when it has neither. One that is there
    but not a regular file of a bounded size is not read."""
    found = b""
    for name in CLAUDE_SETTINGS:
        try:
            data = read_settings_file(Path(workspace, name))
        except FileNotFoundError:
            continue
        except OSError:  # there but not read (a device, a FIFO, too large): said, not run
            data = b"\0unreadable"
        found += name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data
    return found or None


def read_project_content(workspace: str) -> bytes | None:
    """The project file's bytes as they are now; None when there is none (or it cannot
    be read: then nothing of it is trusted)."""
    try:
        return read_settings_file(project_config_path(workspace))
    except OSError:
        return None


def trust_folder(workspace: str, environ: Mapping[str, str]) -> Path:
    """Trust ``workspace``, its project file as it is now; the file that records it.
    Raises OSError. An earlier line for the folder is replaced."""
    path = trusted_folders_path(environ)
    real = os.path.realpath(workspace)
    kept = {folder: recorded for folder, recorded in _records(environ).items() if folder != real}
    kept[real] = {
        "project": digest(read_project_content(workspace)),
        "claude": digest(read_claude_settings(workspace)),
    }
    lines = [_line(folder, recorded) for folder, recorded in kept.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(path.name + ".new")
    fresh.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(fresh, path)  # never half a record
    return path


def _line(folder: str, recorded: Mapping[str, str]) -> str:
    if not recorded.get("project"):
        return folder
    others = "".join(f",{name}={value}" for name, value in recorded.items() if name != "project")
    return f"{recorded['project']}{others} {folder}"


def _inside(workspace: str, path: str) -> bool:
    """Whether ``path`` (relative to ``workspace``), its links followed, is in it."""
    root = os.path.realpath(workspace)
    return os.path.commonpath([root, os.path.realpath(os.path.join(root, path))]) == root


def trusted_values(
    values: dict[str, Any],
    state: TrustState,
    current: AppConfig | None = None,
    workspace: str | None = None,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The project file's values that count, and the keys held back; ``current`` is
    the configuration before the file's layer, ``workspace`` the file's folder."""
    held = tuple(
        key for key, value in values.items() if needs_trust(key, value, current, workspace)
    )
    if not held or state == "trusted":
        return values, ()
    return {key: value for key, value in values.items() if key not in held}, held


def held_back_warning(app: AppConfig) -> str:
    """The line that says which project settings were left out, and how to let them in."""
    project = project_config_path(app.workspace)
    why = app.held_because or HELD_BECAUSE["untrusted"]
    return (
        f"{project} sets {', '.join(app.held_back)}: ignored, as {why}; if it is yours: "
        f"treadle trust {os.path.realpath(app.workspace)}"
    )
