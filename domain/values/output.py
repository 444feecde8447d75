"""What a turn's final answer must be, when the person asked for a schema-checked one."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OutputContract:
    """The final answer must be one JSON value valid against ``schema``; ``errors`` says
    what is wrong with a value, the first first (none: it is valid). It is made where a
    JSON Schema library may be imported (``adapters/output_schema.py``)."""

    schema: Mapping[str, object]
    errors: Callable[[object], Sequence[str]]
