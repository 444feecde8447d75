"""Checking a tool call's arguments against the JSON schema its tool publishes.

Only the part of JSON Schema that treadle's own tools use is understood: ``type``,
``properties``, ``required``, ``items``, ``enum``, ``minimum``, ``exclusiveMinimum`` and
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

from treadle.domain.values.text import well_formed

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


MAX_DEPTH = 64
"""How deeply a call's arguments may nest: no tool's schema needs a tenth of it."""


def arguments_object(raw: str) -> dict[str, Any] | None:
    """A call's arguments as the JSON object they must be, or None when they are not one
    (not JSON as :func:`load_json` reads it, a list, a string). Empty arguments are the
    empty object.

    Every request must be valid for the server: arguments that are not an object go
    back as ``{}`` (llama.cpp answers every later request with a 500 otherwise), and
    the tool error the model reads quotes what it wrote.
    """
    if not raw.strip():
        return {}
    value = load_json(raw).value_or(None)
    return value if isinstance(value, dict) else None


def sendable_arguments(raw: str) -> str:
    """``raw`` when it is a JSON object (sent back byte for byte), else ``"{}"``."""
    if raw.strip() and arguments_object(raw) is not None:
        return raw
    return "{}"


def parse_arguments(raw: str, schema: Mapping[str, Any]) -> Result[dict[str, Any], str]:
    """Parse the JSON text of a call's arguments and check it against ``schema``."""
    parsed = load_json(raw) if raw.strip() else Success({})
    if isinstance(parsed, Failure):  # a JSON null is a value, not a failure to read
        return Failure(f"the arguments are not valid JSON ({parsed.failure()})")
    value = parsed.unwrap()
    if not isinstance(value, dict):
        return Failure(f"the arguments must be a JSON object, not {_type_name(value)}")
    problem = _check(value, schema, "")
    return Failure(problem) if problem else Success(value)


def load_json(text: str, max_depth: int = MAX_DEPTH) -> Result[Any, str]:
    """JSON from outside, or why it cannot be used: not JSON, NaN or Infinity (which
    JSON does not have, and which would pass any numeric check), or nested deeper than
    ``max_depth``. Strings come back well-formed (no lone surrogates).

    Example: ``load_json('{"a": NaN}')`` is ``Failure('NaN is not a JSON number')``.
    """
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except _NotJson as problem:
        return Failure(str(problem))
    except ValueError as error:  # not JSON, or a number longer than Python reads (4,300 digits)
        return Failure(str(error))
    except RecursionError:
        return Failure(f"nested deeper than {max_depth} levels")
    cleaned = _cleaned(value, max_depth)
    if cleaned is _TOO_DEEP:
        return Failure(f"nested deeper than {max_depth} levels")
    return Success(cleaned)


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


_TOO_DEEP = object()


def _cleaned(value: Any, max_depth: int) -> Any:
    """A copy of ``value`` with every string well-formed, or ``_TOO_DEEP``: a walk with
    its own stack, not a recursion, so that no depth can exhaust Python's."""
    root: dict[int, Any] = {0: value}
    pending: list[tuple[dict[Any, Any] | list[Any], Any, int]] = [(root, 0, 0)]
    while pending:
        parent, key, depth = pending.pop()
        item = parent[key]
        if isinstance(item, str):
            parent[key] = well_formed(item)
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                return _TOO_DEEP
            copy: dict[Any, Any] | list[Any]
            if isinstance(item, dict):
                copy = {well_formed(name): child for name, child in item.items()}
            else:
                copy = list(item)
            parent[key] = copy
            pending.extend((copy, child_key, depth + 1) for child_key in _keys(copy))
    return root[0]


def _keys(container: dict[Any, Any] | list[Any]) -> list[Any]:
    return list(container) if isinstance(container, dict) else list(range(len(container)))


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
    if (
        "exclusiveMinimum" in schema
        and isinstance(value, int | float)
        and value <= schema["exclusiveMinimum"]
    ):
        return f"{where} must be more than {schema['exclusiveMinimum']}"
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
