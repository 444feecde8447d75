"""Tool names and schemas made acceptable to both providers, as plain values."""

from __future__ import annotations

from tests.adapters.http.provider_rules import anthropic_refusal, openai_refusal
from treadle.adapters.mcp.schema import described, provider_schema, tool_name


def test_a_name_keeps_its_server_and_tool_with_other_characters_replaced() -> None:
    assert tool_name("github", "search_code", set()) == "mcp__github__search_code"
    assert tool_name("my server", "files.read/all", set()) == "mcp__my_server__files_read_all"


def test_a_name_too_long_is_cut_and_made_unique_with_a_hash() -> None:
    taken: set[str] = set()
    long = tool_name("server", "x" * 80, taken)
    other = tool_name("server", "x" * 81, taken)
    assert len(long) == len(other) == 64 and long != other
    assert long.startswith("mcp__server__xxx")


def test_names_that_collide_once_cleaned_stay_apart() -> None:
    taken: set[str] = set()
    first, second = tool_name("s", "a.b", taken), tool_name("s", "a_b", taken)
    assert first == "mcp__s__a_b" and second != first and second.startswith("mcp__s__a_b_")


def test_a_top_level_anyof_is_dropped_and_told_in_the_description() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    cleaned, dropped = provider_schema(schema)
    assert cleaned == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert dropped == {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert described("Looks up.", dropped).endswith(
        'must also satisfy: {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}'
    )
    assert described("Looks up.", {}) == "Looks up."
    assert "anyOf" in schema  # the server's own schema is left as it was


def test_objects_get_properties_and_arrays_items_at_every_depth() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array"},
            "options": {"type": "object"},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "nested": {"anyOf": [{"type": ["array", "null"]}, {"type": "string"}]},
            "default": {"type": "array", "default": [{"type": "array"}]},
        },
    }
    cleaned, _ = provider_schema(schema)
    properties = cleaned["properties"]
    assert properties["tags"] == {"type": "array", "items": {}}
    assert properties["options"] == {"type": "object", "properties": {}}
    assert "properties" not in properties["map"]
    assert properties["nested"]["anyOf"][0]["items"] == {}
    assert properties["default"]["items"] == {}
    assert properties["default"]["default"] == [{"type": "array"}]  # data stays data


def test_whatever_a_server_sends_becomes_an_object_schema() -> None:
    shapes: list[object] = [{}, {"type": "array"}, None, "nonsense", {"properties": []}]
    for schema in shapes:
        cleaned, _ = provider_schema(schema)
        assert cleaned["type"] == "object" and cleaned["properties"] == {}


def test_what_comes_out_passes_both_providers_rules() -> None:
    awkward = [
        {"anyOf": [{"required": ["a"]}]},
        {"type": "object"},
        {"type": "object", "properties": {"t": {"type": "array"}}},
        {"oneOf": [], "enum": [1], "not": {}},
    ]
    tools = [
        (tool_name("srv", f"t.{index}", set()), provider_schema(s)[0])
        for index, s in enumerate(awkward)
    ]
    openai = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in tools]
    anthropic = [{"name": n, "input_schema": s} for n, s in tools]
    assert openai_refusal(openai) is None and anthropic_refusal(anthropic) is None
