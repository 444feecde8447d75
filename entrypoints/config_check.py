"""Checking configuration values: one key's value (:func:`check_value`), then the keys
together once every layer has had its say (:func:`check_together`).

A problem is a ValueError saying what is wrong with the value; the loader adds where it
came from and which key, as a :class:`~treadle.entrypoints.config_schema.ConfigError`.
The checks across keys are :mod:`~treadle.entrypoints.config_rules`::

    check_value("max_tokens", "8192", from_text=True)   # 8192
    check_value("sandbox", "none")  # ValueError: must be one of workspace-write, …
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from treadle.domain.rules.limits import parse_duration
from treadle.domain.values.text import well_formed
from treadle.entrypoints.config_schema import (
    KEYS,
    PRICE_KINDS,
    Key,
    Kind,
)
from treadle.entrypoints.providers import ModelNotConfigured, resolve

if TYPE_CHECKING:
    from treadle.adapters.mcp.config import TableProblem

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SWITCH_WORDS = {"true": True, "1": True, "yes": True, "on": True}
_SWITCH_WORDS |= {"false": False, "0": False, "no": False, "off": False}


def check_value(key: str, value: object, *, from_text: bool = False) -> Any:
    """``value`` as the key's type, or ValueError saying what is wrong with it.

    ``from_text`` parses the strings of environment variables (``"8192"``, ``"a,b"``).
    """
    spec = KEYS[key]
    if from_text and isinstance(value, str):
        value = _parse_text(spec, value)
    return _CHECKS[spec.kind](spec, value)


# One check per kind ------------------------------------------------------------------


def _check_switch(spec: Key, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, not {shown(value)}")
    return value


def _check_text(spec: Key, value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, not {shown(value)}")
    if well_formed(value) != value:  # a command line's bytes that are not UTF-8
        raise ValueError(f"must be text, not bytes that are not UTF-8: {shown(value)}")
    return value


def _check_url(spec: Key, value: object) -> str:
    """An http:// or https:// address with a host and, if any, a port that can be."""
    url = _check_text(spec, value)
    if not url:
        return url
    from urllib.parse import urlsplit  # only when a URL is configured: see entrypoints

    problem = f"must be an http:// or https:// address with a host, not {shown(url)}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ValueError(f"{problem} ({error})") from None
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host or any(c.isspace() for c in url):
        raise ValueError(problem)
    if port == 0:
        raise ValueError(f"{problem} (port 0)")
    if host.replace(".", "").isdigit() or ":" in host:  # an address, not a name: a real one
        import ipaddress

        try:
            ipaddress.ip_address(host)
        except ValueError as error:
            raise ValueError(f"{problem} ({error})") from None
    return url


def _check_env_name(spec: Key, value: object) -> str:
    name = _check_text(spec, value)
    if name and not _ENV_NAME.match(name):
        raise ValueError(f"must be an environment variable name, not {shown(name)}")
    return name


def _check_choice(spec: Key, value: object) -> str:
    choice = _check_text(spec, value)
    if choice not in spec.choices:
        raise ValueError(f"must be one of {', '.join(spec.choices)}, not {shown(choice)}")
    return choice


def _check_model(spec: Key, value: object) -> str:
    """``PROVIDER:NAME`` of a provider's row; a bare name is checked once ``provider``
    has had its say (:func:`check_together`)."""
    model = _check_text(spec, value)
    if ":" in model:
        try:
            resolve(model)
        except ModelNotConfigured as problem:
            raise ValueError(str(problem)) from None
    return model


def _check_texts(spec: Key, value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"must be a list of strings, not {shown(value)}")
    return tuple(value)


def _check_env_names(spec: Key, value: object) -> tuple[str, ...]:
    names = _check_texts(spec, value)
    for name in names:
        if not _ENV_NAME.match(name):
            raise ValueError(f"{shown(name)} is not an environment variable name")
    return names


def _check_number(spec: Key, value: object) -> int | float:
    whole = spec.kind == "whole"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a {'whole number' if whole else 'number'}, not {shown(value)}")
    if whole and not isinstance(value, int):
        raise ValueError(f"must be a whole number, not {shown(value)}")
    if not math.isfinite(value):
        raise ValueError(f"must be a finite number, not {shown(value)}")
    problem = _out_of_bounds(spec, value)
    if problem:
        raise ValueError(f"must be {problem}, not {shown(value)}")
    return value if whole else float(value)


def _out_of_bounds(spec: Key, value: float) -> str:
    """What the value must be, when it is outside the key's bounds; "" when inside."""
    low, high = spec.minimum, spec.maximum
    if low is not None and spec.positive and value <= low:
        return f"more than {low:g}"
    if low is not None and not spec.positive and value < low:
        return f"at least {low:g}"
    if high is not None and value > high:
        return f"at most {high:g}"
    return ""


def _check_servers(spec: Key, value: object) -> dict[str, dict[str, Any]]:
    # The MCP client's modules are imported only when a server is configured.
    from treadle.adapters.mcp.config import TableProblem, check_table

    if not isinstance(value, dict):
        raise ValueError(f"must be tables, [mcp_servers.NAME], not {shown(value)}")
    servers = {}
    for name, table in value.items():
        try:
            servers[name] = check_table(name, table)
        except TableProblem as problem:
            raise ValueError(table_problem(name, problem)) from None
    return servers


_PRICE = Key("number", "", minimum=0)


OTEL_KEYS = ("endpoint", "log_prompts")


def _check_otel(spec: Key, value: object) -> dict[str, Any]:
    """``{"endpoint": "http://…:4318", "log_prompts": false}``, each key optional."""
    if not isinstance(value, dict):
        raise ValueError(f"must be a table, [otel], not {shown(value)}")
    unknown = [key for key in value if key not in OTEL_KEYS]
    if unknown:
        raise ValueError(f"unknown key {shown(unknown[0])} (the keys: {', '.join(OTEL_KEYS)})")
    checked: dict[str, Any] = {}
    if "endpoint" in value:
        try:
            checked["endpoint"] = _check_url(spec, value["endpoint"])
        except ValueError as problem:
            raise ValueError(f"endpoint: {problem}") from None
    if "log_prompts" in value:
        try:
            checked["log_prompts"] = _check_switch(spec, value["log_prompts"])
        except ValueError as problem:
            raise ValueError(f"log_prompts: {problem}") from None
    return checked


def _check_duration(spec: Key, value: object) -> float:
    """Seconds: a number, or text as people write it (``90s``, ``10m``, ``1h30m``)."""
    seconds = (
        float(value)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        else parse_duration(value)
        if isinstance(value, str)
        else None
    )
    if seconds is None or not math.isfinite(seconds):
        raise ValueError(f"must be a duration such as 90s, 10m or 1h30m, not {shown(value)}")
    return seconds


def _check_prices(spec: Key, value: object) -> dict[str, dict[str, float]]:
    """``{"MODEL": {"input": 3.0, "output": 15.0, …}}``, every price a number ≥ 0."""
    if not isinstance(value, dict):
        raise ValueError(f'must be tables, [prices."MODEL"], not {shown(value)}')
    prices: dict[str, dict[str, float]] = {}
    for model, table in value.items():
        if not isinstance(table, dict):
            raise ValueError(f"{shown(model)}: must be a table, not {shown(table)}")
        unknown = sorted(set(table) - set(PRICE_KINDS))
        if unknown:
            raise ValueError(
                f"{shown(model)}: unknown price {shown(unknown[0])} "
                f"(the prices: {', '.join(PRICE_KINDS)})"
            )
        for kind, price in table.items():
            try:
                _check_number(_PRICE, price)
            except ValueError as problem:
                raise ValueError(f"{shown(model)}.{kind}: {problem}") from None
        prices[model] = {kind: float(price) for kind, price in table.items()}
    return prices


def _check_hooks(spec: Key, value: object) -> dict[str, list[dict[str, object]]]:
    """Claude Code's ``hooks`` table; in treadle's own files, anything it cannot run
    is an error (a settings file of another agent's only has it said)."""
    from treadle.domain.rules.hooks import hooks_table_value, read_hooks

    table, problems = read_hooks(value, "")
    if problems:
        raise ValueError(problems[0])
    return hooks_table_value(table)


def _check_notify(spec: Key, value: object) -> bool | tuple[str, ...]:
    """true, false, or a command as the words of its line (``["notify-send", "-t"]``)."""
    if isinstance(value, bool):
        return value
    words = _check_texts(spec, value) if isinstance(value, list | tuple) else None
    if not words or not words[0]:
        raise ValueError(
            f'must be true, false or a command such as ["notify-send"], not {shown(value)}'
        )
    return words


_CHECKS: dict[Kind, Callable[[Key, object], Any]] = {
    "switch": _check_switch,
    "text": _check_text,
    "model": _check_model,
    "url": _check_url,
    "env_name": _check_env_name,
    "choice": _check_choice,
    "whole": _check_number,
    "number": _check_number,
    "texts": _check_texts,
    "env_names": _check_env_names,
    "servers": _check_servers,
    "prices": _check_prices,
    "duration": _check_duration,
    "otel": _check_otel,
    "hooks": _check_hooks,
    "notify": _check_notify,
}


# A variable's text as a value ------------------------------------------------------

_FILES_ONLY = {
    "servers": "can only be set in a file, as [mcp_servers.NAME] tables",
    "prices": 'can only be set in a file, as [prices."MODEL"] tables',
    "otel": "can only be set in a file, as an [otel] table",
    "hooks": "can only be set in a file, as [[hooks.EVENT]] tables",
}


def _parse_text(spec: Key, text: str) -> object:
    text = text.strip()
    if spec.kind in _FILES_ONLY:
        raise ValueError(_FILES_ONLY[spec.kind])
    if spec.kind == "switch":
        if text.lower() not in _SWITCH_WORDS:
            raise ValueError(f"must be true or false, not {shown(text)}")
        return _SWITCH_WORDS[text.lower()]
    if spec.kind in ("whole", "number"):
        try:
            return int(text) if spec.kind == "whole" else float(text)
        except ValueError:
            raise ValueError(f"must be a number, not {shown(text)}") from None
    if spec.kind in ("texts", "env_names"):
        return _parse_list(text)
    if spec.kind == "notify":
        word = _SWITCH_WORDS.get(text.lower())
        return word if word is not None else _parse_list(text)
    return text


def _parse_list(text: str) -> object:
    if not text.startswith("["):
        return [item.strip() for item in text.split(",") if item.strip()]
    try:  # a JSON or TOML list, as in the files
        parsed: object = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"must be a list of strings, not {shown(text)}") from None
    return parsed


def shown(value: object) -> str:
    """A value as the configuration's files would spell it, for a problem's line."""
    if isinstance(value, str):
        return json.dumps(well_formed(value), ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    return repr(value)


def table_problem(name: str, problem: TableProblem) -> str:
    """``time.args: must be …``, said after ``mcp_servers``; the dot joins them."""
    return f"{name}{'.' + problem.key if problem.key else ''}: {problem.problem}"
