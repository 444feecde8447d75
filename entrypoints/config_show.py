"""``treadle config``'s lines: the files read, then every key, its value and its origin.

Example::

    for line in describe_config(app, os.environ):
        print(line)        # model  "demo"  flag --model
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from treadle.entrypoints.config_schema import DEFAULT_MAX_TOKENS, FLAG_KEYS, AppConfig
from treadle.entrypoints.paths import project_config_path, user_config_path
from treadle.entrypoints.providers import ModelNotConfigured, resolve
from treadle.entrypoints.trust import held_back_warning

UNSET_TEXT = {
    "approval": "(ask in a terminal, auto headless)",
    "max_tokens": f"(a quarter of the window, at most {DEFAULT_MAX_TOKENS})",
    "context_window": "(the server's, a known model's, or learned)",
}
VALUE_WIDTH = 40


def describe_config(
    app: AppConfig, environ: Mapping[str, str], in_force: list[str] | None = None
) -> list[str]:
    """The files read, then every key, its value and its origin; then ``in_force``,
    the window and budgets in force for the model (when known)."""
    user = user_config_path(environ)
    project = project_config_path(app.workspace)
    lines = [
        f"user file:    {user}{'' if user.is_file() else ' (none)'}",
        f"project file: {project}{'' if project.is_file() else ' (none)'}",
        "",
    ]
    rows = [(key, value_text(key, getattr(app, key)), app.origin(key)) for key in FLAG_KEYS]
    width = max(len(key) for key, _, _ in rows)
    value_width = min(VALUE_WIDTH, max(len(value) for _, value, _ in rows))
    lines += [f"{key:<{width}}  {value:<{value_width}}  {origin}" for key, value, origin in rows]
    if app.held_back:
        lines += ["", held_back_warning(app)]
    key_env = app.key_env or _default_key_env(app.model)
    if key_env:
        state = "set" if environ.get(key_env) else "not set"
        lines += ["", f"API key: ${key_env} is {state}"]
    if in_force:
        lines += ["", *in_force]
    return lines


def value_text(key: str, value: object) -> str:
    """A key's value as ``treadle config`` shows it: as the files would spell it."""
    if key == "mcp_servers" and isinstance(value, Mapping):
        return json.dumps(list(value), ensure_ascii=False) + (" (treadle mcp)" if value else "")
    if key == "hooks" and isinstance(value, Mapping):
        counts = {event: len(groups) for event, groups in value.items()}
        return json.dumps(counts) + (" (treadle context)" if value else "")
    if value is None and key in UNSET_TEXT:
        return UNSET_TEXT[key]
    match value:
        case bool():
            return "true" if value else "false"
        case Mapping() | str():
            return json.dumps(value, ensure_ascii=False)
        case tuple():
            return json.dumps(list(value), ensure_ascii=False)
        case float():
            return f"{value:g}"
    return str(value)


def _default_key_env(model: str) -> str:
    try:
        return resolve(model)[0].key_env
    except ModelNotConfigured:
        return ""
