"""The output schema of ``--output-schema``: read, checked as a JSON Schema (draft
2020-12, with the ``jsonschema`` library) and made the turn's :class:`OutputContract`.

Example::

    contract = load_output_schema(Path("answer.schema.json"))
    contract.errors({"count": "twelve"})   # ["$.count: 'twelve' is not of type 'integer'"]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from treadle.domain.values.output import OutputContract


class SchemaUnusable(Exception):
    """The file cannot be read, is not JSON, or is not a draft 2020-12 schema."""


def load_output_schema(path: Path) -> OutputContract:
    """The contract of the schema in ``path``, or SchemaUnusable saying why not."""
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise SchemaUnusable(f"{path}: cannot be read: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SchemaUnusable(f"{path}: not JSON: {error}") from None
    return output_contract(schema, str(path))


def output_contract(schema: object, where: str = "the output schema") -> OutputContract:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, Mapping | bool):
        raise SchemaUnusable(f"{where}: a schema is an object, not {type(schema).__name__}")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise SchemaUnusable(
            f"{where}: not a JSON Schema (draft 2020-12): {error.message}"
        ) from None
    validator = Draft202012Validator(schema)

    def errors(value: object) -> list[str]:
        found = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.path])
        return [f"{_path(error.absolute_path)}: {error.message}" for error in found]

    shown: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
    return OutputContract(shown, errors)


def _path(parts: Any) -> str:
    """``$.items[2].name``: where in the value an error is."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
