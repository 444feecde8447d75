"""What OpenAI and Anthropic refuse in a request's tool list, answered as they answer it.

Both refuse the whole request (400) when one tool in the list breaks their rules,
whichever tool the model would have called. The rules are those their error
messages state (collected from public issue threads: neither documents all of them):

- a name of ``[a-zA-Z0-9_-]{1,64}``, unique in the list;
- a schema whose root is ``type: object``, with no ``anyOf``, ``oneOf``, ``allOf``
  (OpenAI: nor ``enum`` or ``not``) at the top;
- OpenAI also: every object schema with ``properties``, every array with ``items``;
- Anthropic also: every key of ``properties``, at any depth, of ``[a-zA-Z0-9_.-]{1,64}``
  (``$top``, ``filter[id]`` and ``user name`` are refused). OpenAI states no rule for
  property keys outside strict mode, and none is known refused.

Example::

    refusal(path="/v1/chat/completions", body=request_json)   # None, or the 400's body
"""

from __future__ import annotations

import re
from typing import Any

NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
PROPERTY_KEY = re.compile(r"[a-zA-Z0-9_.-]{1,64}\Z")
OPENAI_TOP_LEVEL = ("oneOf", "anyOf", "allOf", "enum", "not")
ANTHROPIC_TOP_LEVEL = ("oneOf", "anyOf", "allOf")


def refusal(path: str, body: Any) -> dict[str, Any] | None:
    """The error body the provider behind ``path`` would answer, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        return None
    if path.endswith("/chat/completions"):
        return openai_refusal(body["tools"])
    if path.endswith("/messages"):
        return anthropic_refusal(body["tools"])
    if path.endswith("/responses"):  # OpenAI's rules; the Responses API's tools are flat
        return openai_refusal([{"function": tool} for tool in body["tools"]])
    return None


def openai_refusal(tools: list[Any]) -> dict[str, Any] | None:
    for index, tool in enumerate(tools):
        function = tool.get("function", {}) if isinstance(tool, dict) else {}
        name = function.get("name", "")
        where = f"tools[{index}].function"
        if not isinstance(name, str) or not NAME.match(name):
            return _openai(
                f"Invalid '{where}.name': string does not match pattern. Expected a string "
                "that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                f"{where}.name",
            )
        problem = _openai_schema_problem(function.get("parameters", {}))
        if problem:
            return _openai(
                f"Invalid schema for function '{name}': {problem}", f"{where}.parameters"
            )
    return None


def _openai_schema_problem(schema: Any) -> str:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        kind = schema.get("type") if isinstance(schema, dict) else None
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{kind}\"'."
    if any(key in schema for key in OPENAI_TOP_LEVEL):
        return (
            "schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' "
            "at the top level."
        )
    return _nested_problem(schema, ())


def _nested_problem(schema: Any, context: tuple[str, ...]) -> str:
    if not isinstance(schema, dict):
        return ""
    kind = schema.get("type")
    kinds: list[Any] = kind if isinstance(kind, list) else [kind]
    if "object" in kinds and "properties" not in schema and "additionalProperties" not in schema:
        return f"In context={context}, object schema missing properties."
    if "array" in kinds and "items" not in schema:
        return f"In context={context}, array schema missing items."
    for key in ("properties", "$defs", "definitions"):
        for name, inner in (schema.get(key) or {}).items():
            if problem := _nested_problem(inner, (*context, key, name)):
                return problem
    for key in ("items", "additionalProperties", "not"):
        if problem := _nested_problem(schema.get(key), (*context, key)):
            return problem
    for key in ("anyOf", "oneOf", "allOf"):
        for index, inner in enumerate(schema.get(key) or []):
            if problem := _nested_problem(inner, (*context, key, str(index))):
                return problem
    return ""


def _openai(message: str, param: str) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": "invalid_function_parameters",
        }
    }


def anthropic_refusal(tools: list[Any]) -> dict[str, Any] | None:
    names: set[str] = set()
    for index, tool in enumerate(tools):
        tool = tool if isinstance(tool, dict) else {}
        name = tool.get("name", "")
        where = f"tools.{index}.custom"
        if not isinstance(name, str) or not NAME.match(name):
            return _anthropic(
                f"{where}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if name in names:
            return _anthropic("tools: Tool names must be unique.")
        names.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return _anthropic(f"{where}.input_schema.type: Input should be 'object'")
        if any(key in schema for key in ANTHROPIC_TOP_LEVEL):
            return _anthropic(
                f"{where}.input_schema: input_schema does not support oneOf, allOf, or anyOf "
                "at the top level"
            )
        if any(not PROPERTY_KEY.match(key) for key in _property_keys(schema)):
            return _anthropic(
                f"{where}.input_schema.properties: Property keys should match pattern "
                "'^[a-zA-Z0-9_.-]{1,64}$'"
            )
    return None


def _property_keys(schema: Any) -> list[str]:
    """Every key of every ``properties`` in ``schema``, at any depth."""
    if isinstance(schema, list):
        return [key for inner in schema for key in _property_keys(inner)]
    if not isinstance(schema, dict):
        return []
    properties = schema.get("properties")
    keys = [str(key) for key in properties] if isinstance(properties, dict) else []
    for key, inner in schema.items():
        if key in ("properties", "$defs", "definitions", "patternProperties"):
            keys += _property_keys(list((inner or {}).values()) if isinstance(inner, dict) else [])
        elif key in ("items", "additionalProperties", "not", "anyOf", "oneOf", "allOf"):
            keys += _property_keys(inner)
    return keys


def _anthropic(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
