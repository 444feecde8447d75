"""Making an MCP server's tools acceptable to the model providers.

Both OpenAI and Anthropic refuse a whole request when one tool in its list breaks
their rules, so every tool is made acceptable before it is offered:

- a name of ``[a-zA-Z0-9_-]{1,64}``: ``mcp__<server>__<tool>``. A name that fits
  keeps it; one that does not has other characters replaced by ``_``, and a short
  hash when it is too long or taken — never the name a fitting tool has
  (:func:`tool_names`);
- an input schema whose root is ``type: object`` with ``properties``, and no ``anyOf``,
  ``oneOf``, ``allOf``, ``not`` or ``enum`` at the top (what was dropped is told in
  the description instead); arrays with ``items`` and objects with ``properties``
  below, since OpenAI refuses them without;
- property keys of ``[a-zA-Z0-9_.-]{1,64}`` at every depth (Anthropic's rule; OpenAI
  takes these too): a key that does not fit (``$top``, ``filter[id]``, ``user name``)
  is offered under a name that does, the server's own in the property's description,
  and the model's arguments go back to the server under its names.

Example::

    >>> names = tool_names([("github", "search.code"), ("github", "search_code")])
    >>> names["github", "search_code"], names["github", "search.code"]
    ('mcp__github__search_code', 'mcp__github__search_code_97721ec7')
    >>> offered = provider_schema({"properties": {"$top": {"type": "integer"}}})
    >>> offered.schema["properties"]
    {'_top': {'type': 'integer', 'description': '(the server calls it "$top")'}}
    >>> offered.server_arguments({"_top": 5})
    {'$top': 5}
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, MutableSet
from dataclasses import dataclass
from typing import Any

MAX_TOOL_NAME = 64
"""Both providers' limit on a tool's name (and Anthropic's on a property key)."""

TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf", "not", "enum")
"""Keywords both providers refuse at the root of a tool's schema."""

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
"""Both providers' rule for a tool's name."""

PROPERTY_KEY = re.compile(r"[a-zA-Z0-9_.-]{1,64}\Z")
"""Anthropic's rule for every key of ``properties``, at any depth."""

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_NOT_KEY = re.compile(r"[^a-zA-Z0-9_.-]")
_HASH = 8
# Where schemas sit inside a schema; everything else (default, enum, examples…) is data.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems", "items"})
_SCHEMAS = frozenset({"items", "additionalProperties", "not", "contains", "if", "then", "else"})


def tool_names(tools: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The name the model calls each ``(server, tool)`` by, all different.

    ``mcp__<server>__<tool>`` when that fits :data:`TOOL_NAME`: such a name is
    never given to another tool. The others are rewritten (characters replaced by
    ``_``, cut and ended with a short hash of the server and the tool when too long
    or taken) into names no fitting tool has. The same tools give the same names in
    whatever order they come; where two want one name, the first in sorted order
    gets it.
    """
    keys = sorted(set(tools))
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for key in keys:
        plain = _plain_name(*key)
        if TOOL_NAME.match(plain) and plain not in taken:
            names[key] = plain
            taken.add(plain)
    for key in keys:
        if key not in names:
            rewritten = _NOT_NAME.sub("_", _plain_name(*key))
            names[key] = _unique(rewritten, "\0".join(key), taken, MAX_TOOL_NAME)
    return names


def _plain_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


@dataclass(frozen=True, slots=True)
class ProviderSchema:
    """A tool's input schema as the providers take it (``schema``), the top-level
    keywords it lost (``dropped``), and the property keys it renamed: each name
    offered to the model, and the server's own (``renamed``)."""

    schema: dict[str, Any]
    dropped: dict[str, Any]
    renamed: Mapping[str, str]

    def server_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The model's arguments under the server's names, at every depth.

        A renamed key is one no property of the schema has, so wherever it appears
        in the arguments, it can only be the property it stands for.
        """
        if not self.renamed:
            return dict(arguments)
        server = _renamed_back(dict(arguments), self.renamed)
        assert isinstance(server, dict)
        return server


def provider_schema(schema: object) -> ProviderSchema:
    """``schema`` made acceptable to both providers (a copy: the server's stays as it was)."""
    result: dict[str, Any] = copy.deepcopy(dict(schema)) if isinstance(schema, Mapping) else {}
    for key in ("$schema", "$id"):
        result.pop(key, None)
    dropped = {key: result.pop(key) for key in TOP_LEVEL_REFUSED if key in result}
    result["type"] = "object"
    result.setdefault("properties", {})
    if not isinstance(result["properties"], dict):
        result["properties"] = {}
    taken = {key for node in _schemas(result) for key in _properties(node) if _fits(key)}
    offered: dict[str, str] = {}  # the server's key -> the name offered for it
    for node in _schemas(result):
        _complete(node)
        properties = _properties(node)
        if all(_fits(key) for key in properties):
            continue
        for key in properties:
            if not _fits(key) and key not in offered:
                offered[key] = _unique(_NOT_KEY.sub("_", key) or "_", key, taken)
        node["properties"] = {
            offered.get(key, key): _noting(value, key) if key in offered else value
            for key, value in properties.items()
        }
        if isinstance(node.get("required"), list):
            node["required"] = [offered.get(key, key) for key in node["required"]]
    return ProviderSchema(result, dropped, {name: key for key, name in offered.items()})


def described(description: str, dropped: Mapping[str, Any], limit: int = 600) -> str:
    """The description, with what the schema could not say told in words."""
    if not dropped:
        return description
    rule = json.dumps(dict(dropped), ensure_ascii=False)
    if len(rule) > limit:
        rule = rule[:limit] + "…"
    return f"{description}\n\nThe arguments must also satisfy: {rule}".strip()


def _unique(name: str, original: str, taken: MutableSet[str], limit: int = MAX_TOOL_NAME) -> str:
    """``name``, or when it is longer than ``limit`` or taken, cut and ended with a
    short hash of ``original``; added to ``taken``."""
    if len(name) > limit or name in taken:
        digest = hashlib.sha256(original.encode("utf-8", "replace")).hexdigest()[:_HASH]
        tail, attempt = digest, 1
        while (candidate := f"{name[: limit - len(tail) - 1]}_{tail}") in taken:
            tail, attempt = f"{digest}{attempt}", attempt + 1  # practically never
        name = candidate
    taken.add(name)
    return name


def _fits(key: str) -> bool:
    return PROPERTY_KEY.match(key) is not None


def _noting(schema: Any, key: str) -> Any:
    """A renamed property's schema, its description saying the server's name."""
    if schema is True:
        schema = {}
    if not isinstance(schema, dict):
        return schema
    note = f"(the server calls it {json.dumps(key, ensure_ascii=False)})"
    about = schema.get("description")
    schema["description"] = f"{about} {note}" if isinstance(about, str) and about else note
    return schema


def _renamed_back(value: Any, renamed: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {renamed.get(key, key): _renamed_back(item, renamed) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed_back(item, renamed) for item in value]
    return value


def _properties(node: dict[str, Any]) -> dict[str, Any]:
    properties = node.get("properties")
    return properties if isinstance(properties, dict) else {}


def _schemas(root: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every schema in ``root``, itself first, each before those below it. A caller
    may replace a schema's ``properties`` when it gets it: the walk goes on below
    the new ones."""
    pending: list[Any] = [root]
    while pending:
        node = pending.pop()
        if not isinstance(node, dict):
            continue
        yield node
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                pending.extend(value.values())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                pending.extend(value)
            elif key in _SCHEMAS:
                pending.append(value)


def _complete(node: dict[str, Any]) -> None:
    """Give an array its ``items`` and an object its ``properties``."""
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and "items" not in node:
        node["items"] = {}
    if "object" in kinds and "properties" not in node and "additionalProperties" not in node:
        node["properties"] = {}
