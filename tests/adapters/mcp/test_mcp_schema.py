"""Tool names and schemas made acceptable to both providers, as plain values."""

from __future__ import annotations

import hashlib

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
    offered = provider_schema(schema)
    cleaned, dropped = offered.schema, offered.dropped
    assert cleaned == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert offered.renamed == {} and offered.server_arguments({"a": "x"}) == {"a": "x"}
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
    properties = provider_schema(schema).schema["properties"]
    assert properties["tags"] == {"type": "array", "items": {}}
    assert properties["options"] == {"type": "object", "properties": {}}
    assert "properties" not in properties["map"]
    assert properties["nested"]["anyOf"][0]["items"] == {}
    assert properties["default"]["items"] == {}
    assert properties["default"]["default"] == [{"type": "array"}]  # data stays data


def test_whatever_a_server_sends_becomes_an_object_schema() -> None:
    shapes: list[object] = [{}, {"type": "array"}, None, "nonsense", {"properties": []}]
    for schema in shapes:
        cleaned = provider_schema(schema).schema
        assert cleaned["type"] == "object" and cleaned["properties"] == {}


def test_what_comes_out_passes_both_providers_rules() -> None:
    awkward = [
        {"anyOf": [{"required": ["a"]}]},
        {"type": "object"},
        {"type": "object", "properties": {"t": {"type": "array"}}},
        {"oneOf": [], "enum": [1], "not": {}},
        ODATA,
        {"type": "object", "properties": {"a b": True, "a_b": {}, "a+b": {"type": "array"}}},
    ]
    tools = [
        (tool_name("srv", f"t.{index}", set()), provider_schema(s).schema)
        for index, s in enumerate(awkward)
    ]
    openai = [{"type": "function", "function": {"name": n, "parameters": s}} for n, s in tools]
    anthropic = [{"name": n, "input_schema": s} for n, s in tools]
    assert openai_refusal(openai) is None and anthropic_refusal(anthropic) is None


ODATA = {
    "type": "object",
    "properties": {
        "$top": {"type": "integer", "description": "How many."},
        "filter[id]": {"type": "string"},
        "k" * 70: {"type": "string"},
        "": {"type": "string"},
        "options": {
            "type": "object",
            "properties": {"sort by": {"type": "string"}, "$top": {}},
            "required": ["sort by"],
        },
        "rows": {"type": "array", "items": {"properties": {"naïve": {}}}},
        "either": {"anyOf": [{"properties": {"x y": {}}}, {"type": "null"}]},
    },
    "required": ["$top", "options"],
    "$defs": {"ref": {"properties": {"@id": {}}}},
}


def test_property_keys_anthropic_refuses_are_renamed_at_every_depth() -> None:
    offered = provider_schema(ODATA)
    properties = offered.schema["properties"]
    assert list(properties) == [
        "_top",
        "filter_id_",
        "k" * 55 + "_" + hashlib.sha256(b"k" * 70).hexdigest()[:8],
        "_",
        "options",
        "rows",
        "either",
    ]
    assert offered.schema["required"] == ["_top", "options"]
    assert list(properties["options"]["properties"]) == ["sort_by", "_top"]
    assert properties["options"]["required"] == ["sort_by"]
    assert list(properties["rows"]["items"]["properties"]) == ["na_ve"]
    assert list(properties["either"]["anyOf"][0]["properties"]) == ["x_y"]
    assert list(offered.schema["$defs"]["ref"]["properties"]) == ["_id"]
    assert "$top" in ODATA["properties"]  # the server's own schema is left as it was


def test_a_renamed_property_says_the_servers_name_in_its_description() -> None:
    properties = provider_schema(ODATA).schema["properties"]
    assert properties["_top"]["description"] == 'How many. (the server calls it "$top")'
    assert properties["filter_id_"]["description"] == '(the server calls it "filter[id]")'
    assert properties["options"]["properties"]["sort_by"] == {
        "type": "string",
        "description": '(the server calls it "sort by")',
    }


def test_the_models_arguments_go_back_to_the_server_under_its_names() -> None:
    offered = provider_schema(ODATA)
    long = next(name for name in offered.schema["properties"] if name.startswith("kkk"))
    arguments = {
        "_top": 5,
        "filter_id_": "a1",
        long: "x",
        "options": {"sort_by": "name", "_top": 1},
        "rows": [{"na_ve": 1}, {"other": 2}],
        "either": {"x_y": None},
    }
    assert offered.server_arguments(arguments) == {
        "$top": 5,
        "filter[id]": "a1",
        "k" * 70: "x",
        "options": {"sort by": "name", "$top": 1},
        "rows": [{"naïve": 1}, {"other": 2}],
        "either": {"x y": None},
    }
    assert "_top" in arguments  # the model's arguments are left as they were


def test_a_renamed_key_never_takes_a_name_the_schema_already_has() -> None:
    offered = provider_schema(
        {"properties": {"a b": {}, "a+b": {}, "deep": {"properties": {"a_b": {}}}}}
    )
    names = list(offered.schema["properties"])
    assert names[0] != "a_b" and names[1] != "a_b" and names[0] != names[1]
    assert all(name.startswith("a_b_") and len(name) == 12 for name in names[:2])
    assert offered.server_arguments({names[0]: 1, names[1]: 2, "deep": {"a_b": 3}}) == {
        "a b": 1,
        "a+b": 2,
        "deep": {"a_b": 3},
    }
