"""Checking a tool call's arguments against the JSON schema its tool publishes.

Only the part of JSON Schema that treadle's own tools use is understood: ``type``,
``properties``, ``required``, ``items``, ``enum``, ``minimum`` and
``additionalProperties: false``. Every problem becomes one sentence for the model.

Example::

    >>> parse_arguments('{"command": 1}', BASH_SCHEMA)
    Failure("argument 'command' must be a string, not integer")
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from returns.result import Failure, Result, Success

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def parse_arguments(raw: str, schema: Mapping[str, Any]) -> Result[dict[str, Any], str]:
    """Parse the JSON text of a call's arguments and check it against ``schema``."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as error:
        return Failure(f"the arguments are not valid JSON ({error})")
    if not isinstance(value, dict):
        return Failure(f"the arguments must be a JSON object, not {_type_name(value)}")
    problem = _check(value, schema, "")
    return Failure(problem) if problem else Success(value)


def _check(value: Any, schema: Mapping[str, Any], path: str) -> str:
    where = f"argument '{path}'" if path else "the arguments"
    expected = schema.get("type")
    if isinstance(expected, str) and not _is_type(value, expected):
        article = "an" if expected[0] in "aeiou" else "a"
        return f"{where} must be {article} {expected}, not {_type_name(value)}"
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(choice) for choice in schema["enum"])
        return f"{where} must be one of {choices}"
    if "minimum" in schema and isinstance(value, int | float) and value < schema["minimum"]:
        return f"{where} must be at least {schema['minimum']}"
    if isinstance(value, dict):
        return _check_object(value, schema, path)
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problem = _check(item, schema["items"], f"{path}[{index}]")
            if problem:
                return problem
    return ""


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> str:
    properties: Mapping[str, Any] = schema.get("properties", {})
    prefix = f"{path}." if path else ""
    for name in schema.get("required", ()):
        if name not in value:
            return f"missing required argument '{prefix}{name}'"
    for name, item in value.items():
        if name in properties:
            problem = _check(item, properties[name], f"{prefix}{name}")
            if problem:
                return problem
        elif schema.get("additionalProperties") is False:
            known = ", ".join(properties) or "none"
            return f"unknown argument '{prefix}{name}' (known: {known})"
    return ""


def _is_type(value: Any, expected: str) -> bool:
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False
    return isinstance(value, _JSON_TYPES.get(expected, (object,)))


def _type_name(value: Any) -> str:
    for name in _JSON_TYPES:
        if name != "number" and _is_type(value, name):
            return name
    return type(value).__name__
