"""Making an MCP server's tools acceptable to the model providers.

Both OpenAI and Anthropic refuse a whole request when one tool in its list breaks
their rules, so every tool is made acceptable before it is offered:

- a name of ``[a-zA-Z0-9_-]{1,64}``: ``mcp__<server>__<tool>`` with other characters
  replaced by ``_``, and a short hash when it is too long or taken;
- an input schema whose root is ``type: object`` with ``properties``, and no ``anyOf``,
  ``oneOf``, ``allOf``, ``not`` or ``enum`` at the top (what was dropped is told in
  the description instead); arrays with ``items`` and objects with ``properties``
  below, since OpenAI refuses them without.

Example::

    >>> tool_name("git hub", "search.code", set())
    'mcp__git_hub__search_code'
    >>> provider_schema({"anyOf": [{"required": ["a"]}]})
    ({'type': 'object', 'properties': {}}, {'anyOf': [{'required': ['a']}]})
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping, MutableSet
from typing import Any

MAX_TOOL_NAME = 64
"""Both providers' limit on a tool's name."""

TOP_LEVEL_REFUSED = ("anyOf", "oneOf", "allOf", "not", "enum")
"""Keywords both providers refuse at the root of a tool's schema."""

_NOT_NAME = re.compile(r"[^a-zA-Z0-9_-]")
# Where schemas sit inside a schema; everything else (default, enum, examples…) is data.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems", "items"})
_SCHEMAS = frozenset({"items", "additionalProperties", "not", "contains", "if", "then", "else"})


def tool_name(server: str, tool: str, taken: MutableSet[str]) -> str:
    """The name the model calls a server's tool by, unique among ``taken`` (updated)."""
    name = f"mcp__{_NOT_NAME.sub('_', server)}__{_NOT_NAME.sub('_', tool)}"
    if len(name) > MAX_TOOL_NAME or name in taken:
        digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_TOOL_NAME - len(digest) - 1]}_{digest}"
    taken.add(name)
    return name


def provider_schema(schema: object) -> tuple[dict[str, Any], dict[str, Any]]:
    """``schema`` made acceptable to both providers, and the top-level keywords it lost."""
    result: dict[str, Any] = copy.deepcopy(dict(schema)) if isinstance(schema, Mapping) else {}
    for key in ("$schema", "$id"):
        result.pop(key, None)
    dropped = {key: result.pop(key) for key in TOP_LEVEL_REFUSED if key in result}
    result["type"] = "object"
    result.setdefault("properties", {})
    if not isinstance(result["properties"], dict):
        result["properties"] = {}
    _complete(result)
    return result, dropped


def described(description: str, dropped: Mapping[str, Any], limit: int = 600) -> str:
    """The description, with what the schema could not say told in words."""
    if not dropped:
        return description
    rule = json.dumps(dict(dropped), ensure_ascii=False)
    if len(rule) > limit:
        rule = rule[:limit] + "…"
    return f"{description}\n\nThe arguments must also satisfy: {rule}".strip()


def _complete(node: Any) -> None:
    """Give arrays their ``items`` and objects their ``properties``, everywhere below."""
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and "items" not in node:
        node["items"] = {}
    if "object" in kinds and "properties" not in node and "additionalProperties" not in node:
        node["properties"] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for schema in value.values():
                _complete(schema)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for schema in value:
                _complete(schema)
        elif key in _SCHEMAS:
            _complete(value)
