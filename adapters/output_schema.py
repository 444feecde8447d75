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


MAX_SCHEMA_BYTES = 256 * 1024
"""The largest schema file taken: it is sent in the system prompt of every request."""
BASE = "file:///treadle/output.schema.json"
"""The schema's own address, for its ``$ref``s: nothing outside the file is fetched."""
IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")
"""Keywords whose schemas apply to the value itself, as a ``$ref``'s target does: a loop
through them alone never ends, where one through ``items`` or ``properties`` descends
into the value."""
DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas (a ``$ref`` there is text)."""


def load_output_schema(path: Path) -> OutputContract:
    """The contract of the schema in ``path``, or SchemaUnusable saying why not."""
    try:
        with path.open("rb") as file:
            content = file.read(MAX_SCHEMA_BYTES + 1)
    except OSError as error:
        raise SchemaUnusable(f"{path}: cannot be read: {error.strerror or error}") from None
    if len(content) > MAX_SCHEMA_BYTES:
        raise SchemaUnusable(
            f"{path}: over {MAX_SCHEMA_BYTES // 1024} KiB (it goes with every request)"
        )
    try:
        schema = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SchemaUnusable(f"{path}: not JSON: {error}") from None
    except RecursionError:
        raise SchemaUnusable(f"{path}: nested too deep") from None
    return output_contract(schema, str(path))


def output_contract(schema: object, where: str = "the output schema") -> OutputContract:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, Mapping | bool):
        raise SchemaUnusable(f"{where}: a schema is an object, not {type(schema).__name__}")
    try:
        Draft202012Validator.check_schema(schema)
        _check_references(schema, where)
    except SchemaError as error:
        raise SchemaUnusable(
            f"{where}: not a JSON Schema (draft 2020-12): {error.message}"
        ) from None
    except RecursionError:
        raise SchemaUnusable(f"{where}: nested too deep") from None
    validator = Draft202012Validator(schema)

    def errors(value: object) -> list[str]:
        try:
            found = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.path])
        except RecursionError:  # a value nested deeper than a check can follow
            return ["$: nested too deep to check"]
        return [f"{_path(error.absolute_path)}: {error.message}" for error in found]

    shown: Mapping[str, Any] = schema if isinstance(schema, Mapping) else {}
    return OutputContract(shown, errors)


def _check_references(schema: Mapping[str, Any] | bool, where: str) -> None:
    """Every ``$ref`` resolves within the file (none is fetched: a web address or a file
    of the machine is refused), and none loops back without descending into the value
    (``{"$ref": "#"}`` would check for ever)."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    if not isinstance(schema, Mapping):
        return
    registry: Registry[Any] = Registry().with_resource(BASE, DRAFT202012.create_resource(schema))
    registry = registry.crawl()
    edges: dict[int, list[int]] = {}
    kept: dict[int, object] = {}

    def visit(node: object, resolver: Any) -> None:
        if isinstance(node, list):
            for item in node:
                visit(item, resolver)
            return
        if not isinstance(node, Mapping):
            return
        kept[id(node)] = node
        if isinstance(node.get("$id"), str):
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        out = edges.setdefault(id(node), [])
        for keyword in ("$ref", "$dynamicRef"):
            reference = node.get(keyword)
            if isinstance(reference, str):
                try:
                    target = resolver.lookup(reference).contents
                except Unresolvable:
                    raise SchemaUnusable(
                        f"{where}: {keyword} {reference} is not in the file (no schema is fetched)"
                    ) from None
                kept[id(target)] = target
                out.append(id(target))
        for keyword in IN_PLACE:
            inner = node.get(keyword)
            parts = (
                inner.values()
                if keyword == "dependentSchemas" and isinstance(inner, Mapping)
                else inner
                if isinstance(inner, list)
                else [inner]
            )
            out.extend(id(part) for part in parts if isinstance(part, Mapping))
        for keyword, value in node.items():
            if keyword not in DATA:
                visit(value, resolver)

    visit(schema, registry.resolver(base_uri=BASE))
    _refuse_loops(edges, where)


def _refuse_loops(edges: Mapping[int, list[int]], where: str) -> None:
    """SchemaUnusable when ``edges`` (a schema to what applies to the same value) close
    a loop."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if state.get(start):
            continue
        stack = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while stack:
            node, following = stack[-1]
            step = next(following, None)
            if step is None:
                state[node] = 2
                stack.pop()
            elif state.get(step) == 1:
                raise SchemaUnusable(
                    f"{where}: its $ref loops back without descending into the value"
                )
            elif not state.get(step):
                state[step] = 1
                stack.append((step, iter(edges.get(step, ()))))


def _path(parts: Any) -> str:
    """``$.items[2].name``: where in the value an error is."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
