"""The effective configuration: every key, its value and where the value came from.

Layers, later ones winning: the defaults, the user file (``config.toml`` in the
platform's config folder, or ``$TREADLE_CONFIG_DIR``), the project file
(``.treadle.toml`` in the workspace), ``TREADLE_*`` environment variables, then flags.
A resumed session's model, server and folder sit just below the flags. A project file
sets what could send the key elsewhere or lower safety only in a folder the user has
trusted for the file as it is (``treadle trust``, :mod:`~treadle.entrypoints.trust`);
elsewhere those values are held back and said so.

Example::

    app = load_config(flags={"model": "demo"}, environ=os.environ)
    app.origins["model"]   # 'flag --model'

An unknown key or a bad value is a :class:`ConfigError` naming the file (or variable,
or flag) and the key; treadle does not start on a broken configuration. The keys are
:mod:`~treadle.entrypoints.config_schema`; the checks of a value,
:mod:`~treadle.entrypoints.config_check`; the rules across keys,
:mod:`~treadle.entrypoints.config_rules`; ``treadle config``'s lines,
:mod:`~treadle.entrypoints.config_show`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from treadle.domain.values.prices import Prices
from treadle.entrypoints.config_check import check_value
from treadle.entrypoints.config_rules import check_together, mcp_server_configs
from treadle.entrypoints.config_schema import (
    DEFAULT,
    DEFAULT_MAX_TOKENS,
    ENV_ALIASES,
    ENV_PREFIX,
    FLAG_KEYS,
    KEYS,
    NOT_CONFIG_VARIABLES,
    RECORDED_SETTINGS,
    USAGE_ERROR,
    AppConfig,
    ConfigError,
)
from treadle.entrypoints.config_show import describe_config
from treadle.entrypoints.paths import project_config_path, read_settings_file, user_config_path
from treadle.entrypoints.trust import (
    HELD_BECAUSE,
    held_back_warning,
    trust_folder,
    trust_state,
    trusted_values,
)

__all__ = [  # what the rest of treadle reads of the configuration, from here
    "DEFAULT",
    "DEFAULT_MAX_TOKENS",
    "KEYS",
    "RECORDED_SETTINGS",
    "USAGE_ERROR",
    "AppConfig",
    "ConfigError",
    "check_value",
    "describe_config",
    "flag_values",
    "held_back_warning",
    "load_config",
    "mcp_server_configs",
    "model_prices",
    "read_file_values",
    "settings_environment",
    "trust_folder",
]

SESSION_KEYS = ("model", "base_url", "workspace")
"""What a resumed session brings of its own: what it was started with."""


def load_config(
    *,
    flags: Mapping[str, object],
    environ: Mapping[str, str],
    session: tuple[str, Mapping[str, str]] | None = None,
    cwd: str | None = None,
) -> AppConfig:
    """The effective configuration for a run.

    ``flags`` are the command line's values (None for a flag not given); ``session`` is
    a resumed session's id and recorded ``model``, ``base_url`` and ``workspace``.
    """
    given = {key: value for key, value in flags.items() if value is not None}
    session_id, recorded = session if session is not None else ("", {})
    workspace = _workspace(given, recorded, session_id, cwd)
    user = user_config_path(environ)
    app = AppConfig().with_values(read_file_values(user), f"user file {user}")
    app = _with_project(app, workspace, environ)
    for key, (value, name) in read_env_values(environ).items():
        app = app.with_values({key: value}, f"env {name}")
    if session_id:
        app = _with_session(app, session_id, recorded)
    for key, value in given.items():
        app = app.with_values({key: _flag_value(key, value)}, _flag(key))
    if "workspace" not in app.origins:
        app = replace(app, workspace=workspace)
    if app.output_schema:  # a file's relative path is the workspace's; kept absolute
        app = replace(app, output_schema=os.path.join(app.workspace, app.output_schema))
    return check_together(app)


FLAGS = (
    "model",
    "base_url",
    "approval",
    "workspace",
    "sandbox",
    "sandbox_network",
    "max_cost",
    "max_tokens_total",
    "max_requests",
    "max_time",
    "output_schema",
)
"""The command line's flags that are configuration keys."""


TEXT_FLAGS = ("max_cost", "max_tokens_total", "max_requests", "max_time")
"""Flags whose text is read as the key's type (a number, a duration)."""


def flag_values(args: object) -> dict[str, object]:
    """The configuration flags an argparse namespace was given (for :func:`load_config`)."""
    values = {key: getattr(args, key, None) for key in FLAGS}
    if values.get("output_schema"):  # a file named on the command line is where it stands
        values["output_schema"] = os.path.abspath(str(values["output_schema"]))
    return {key: value for key, value in values.items() if value is not None}


def _workspace(
    given: Mapping[str, object], recorded: Mapping[str, str], session_id: str, cwd: str | None
) -> str:
    workspace = str(given.get("workspace") or recorded.get("workspace") or cwd or os.getcwd())
    if not os.path.isdir(workspace):
        what = "not a folder" if os.path.exists(workspace) else "no such folder"
        origin = "flag --workspace" if given.get("workspace") else f"session {session_id}"
        raise ConfigError(f"{origin}: workspace {workspace}: {what}")
    return workspace


def _with_project(app: AppConfig, workspace: str, environ: Mapping[str, str]) -> AppConfig:
    """The project file's layer: its bytes read once, so that what is trusted is what
    is parsed."""
    project = project_config_path(workspace)
    content = _read(project)
    values = _parsed(content, project) if content is not None else {}
    state = trust_state(workspace, content, environ)
    kept, held = trusted_values(values, state, app, workspace)
    app = app.with_values(kept, f"project file {project}")
    return replace(app, held_back=held, held_because=HELD_BECAUSE[state] if held else "")


def _with_session(app: AppConfig, session_id: str, recorded: Mapping[str, str]) -> AppConfig:
    kept = {key: value for key, value in recorded.items() if key in SESSION_KEYS and value}
    for key in ("model", "base_url"):
        if key in kept:
            try:
                check_value(key, kept[key])
            except ValueError as problem:
                raise ConfigError(f"session {session_id}: {key}: {problem}") from None
    return app.with_values(kept, f"session {session_id}")


def _flag(key: str) -> str:
    return f"flag --{key.replace('_', '-')}"


def _flag_value(key: str, value: object) -> object:
    if key not in FLAG_KEYS:
        raise ConfigError(f"{_flag(key)}: not a configuration key")
    try:
        if key == "workspace":
            return value
        # A number on the command line is text, as in a variable.
        return check_value(key, value, from_text=key in TEXT_FLAGS)
    except ValueError as problem:
        raise ConfigError(f"{_flag(key)}: {problem}") from None


# Files and variables -----------------------------------------------------------------


def read_file_values(path: Path) -> dict[str, Any]:
    """The checked values of one TOML file; {} when there is none."""
    content = _read(path)
    return _parsed(content, path) if content is not None else {}


def _read(path: Path) -> bytes | None:
    try:
        return read_settings_file(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror or error}") from None


def _parsed(content: bytes, path: Path) -> dict[str, Any]:
    import tomllib  # only when there is a file to read: see entrypoints

    try:
        data = tomllib.loads(content.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return _checked(data, str(path))


def _checked(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (the keys: {', '.join(KEYS)})")
        try:
            values[key] = check_value(key, value)
        except ValueError as problem:
            joint = "." if key == "mcp_servers" and isinstance(value, dict) else ": "
            raise ConfigError(f"{where}: {key}{joint}{problem}") from None
    return values


def _variables() -> list[tuple[str, str]]:
    """Each variable's name and its key: the short ones, then the full (which win)."""
    return [*ENV_ALIASES.items(), *((ENV_PREFIX + key.upper(), key) for key in KEYS)]


def read_env_values(environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """Values from ``TREADLE_<KEY>`` variables, each with the variable's name."""
    unknown = unknown_variables(environ)
    if unknown:
        raise ConfigError(
            f"environment variable {unknown[0]}: not a configuration key "
            f"(TREADLE_<KEY> with KEY one of {', '.join(KEYS)})"
        )
    values: dict[str, tuple[Any, str]] = {}
    for name, key in _variables():
        if name in environ:
            try:
                values[key] = (check_value(key, environ[name], from_text=True), name)
            except ValueError as problem:
                raise ConfigError(f"environment variable {name}: {key}: {problem}") from None
    return values


def settings_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without treadle's own settings: ``TREADLE_MAX_TOKENS`` is a budget, not
    a secret for its name, and a bad value of it must be shown in its error."""
    own = {name for name, _ in _variables()}
    return {name: value for name, value in environ.items() if name not in own}


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """``TREADLE_*`` variables that name no key (a typo): an error, like an unknown key."""
    known = {name for name, _ in _variables()} | NOT_CONFIG_VARIABLES
    return sorted(
        name
        for name in environ
        if name.startswith(ENV_PREFIX) and name not in known and not name.startswith("TREADLE_RUN_")
    )


def model_prices(app: AppConfig) -> Prices | None:
    """The configured prices of ``app.model``: its table as ``PROVIDER:NAME`` or as NAME."""
    name = app.model.partition(":")[2] or app.model
    table = app.prices.get(app.model) or app.prices.get(name)
    if not table:
        return None
    return Prices(
        table["input"], table["output"], table.get("cache_read"), table.get("cache_write")
    )
