"""Tool names and schemas made acceptable to both providers, as plain values."""

from __future__ import annotations

import hashlib
from itertools import permutations

from tests.adapters.http.provider_rules import anthropic_refusal, openai_refusal
from treadle.adapters.mcp.schema import TOOL_NAME, described, provider_schema, tool_names


def test_a_name_that_fits_keeps_its_server_and_tool() -> None:
    assert tool_names([("github", "search_code")]) == {
        ("github", "search_code"): "mcp__github__search_code"
    }


def test_a_name_that_does_not_fit_has_other_characters_replaced() -> None:
    names = tool_names([("my-server", "files.read/all")])
    assert names == {("my-server", "files.read/all"): "mcp__my-server__files_read_all"}


def test_a_fitting_name_is_never_taken_by_a_rewrite_whatever_the_order() -> None:
    for tools in permutations([("s", "a/b"), ("s", "a_b"), ("s", "ok")]):
        names = tool_names(tools)
        assert names["s", "a_b"] == "mcp__s__a_b"
        assert names["s", "ok"] == "mcp__s__ok"
        assert names["s", "a/b"] == f"mcp__s__a_b_{digest('s', 'a/b')}"


def test_rewrites_that_collide_stay_apart_the_same_way_in_any_order() -> None:
    tools = [("s", "a/b"), ("s", "a.b"), ("s", "a b"), ("t", "x")]
    seen = {tuple(sorted(tool_names(order).items())) for order in permutations(tools)}
    assert len(seen) == 1
    names = dict(seen.pop())
    assert len(set(names.values())) == len(tools)
    assert names["s", "a b"] == "mcp__s__a_b"  # the first of them in sorted order


def test_a_rewrite_avoids_a_fitting_name_that_looks_like_its_hashed_form() -> None:
    lookalike = f"a_b_{digest('s', 'a/b')}"
    names = tool_names([("s", "a/b"), ("s", "a_b"), ("s", lookalike)])
    assert names["s", lookalike] == f"mcp__s__{lookalike}"
    assert names["s", "a_b"] == "mcp__s__a_b"
    assert len(set(names.values())) == 3


def test_two_fitting_names_that_are_the_same_stay_apart() -> None:
    # Server "a" with tool "b__c", server "a__b" with tool "c": both mcp__a__b__c.
    for tools in permutations([("a", "b__c"), ("a__b", "c")]):
        names = tool_names(tools)
        assert names["a", "b__c"] == "mcp__a__b__c"
        assert names["a__b", "c"].startswith("mcp__a__b__c_")


def test_names_fit_the_providers_limit_of_64() -> None:
    exactly = "x" * (64 - len("mcp__s__"))
    tools = [("s", exactly), ("s", exactly + "x"), ("s", exactly + "xx"), ("s", ""), ("s", "é")]
    names = tool_names(tools)
    assert names["s", exactly] == f"mcp__s__{exactly}"
    assert all(TOOL_NAME.match(name) for name in names.values())
    assert len(names[("s", exactly + "x")]) == 64
    assert len(set(names.values())) == len(tools)
    assert names["s", exactly + "x"].startswith("mcp__s__xxx")


def digest(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]


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
    names = tool_names(("srv", f"t.{index}") for index in range(len(awkward)))
    tools = [
        (names["srv", f"t.{index}"], provider_schema(s).schema) for index, s in enumerate(awkward)
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
