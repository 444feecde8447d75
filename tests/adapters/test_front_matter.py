"""A markdown file's front matter, read with PyYAML's safe loader."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from treadle.adapters.workflows.front_matter import (
    FrontMatterError,
    plain_block,
    read_front_matter,
)


def test_the_block_and_the_body_are_split() -> None:
    front, body = read_front_matter("---\nname: a\ntools: [Read, Grep]\n---\n# Title\nText\n")
    assert front == {"name": "a", "tools": ["Read", "Grep"]} and body == "# Title\nText\n"


def test_no_block_and_an_empty_block_have_no_fields() -> None:
    assert read_front_matter("# Title\n") == ({}, "# Title\n")
    assert read_front_matter("---\n---\nBody") == ({}, "Body")
    assert read_front_matter("\ufeff---\nname: a\n---\n") == ({"name": "a"}, "")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("---\nname: [a\n---\n", "not YAML (line"),
        ("---\n- a\n- b\n---\n", "not a mapping"),
        ("---\nname: a\n", "never ends"),
        ("---\n!!python/object:os.system x\n---\n", "not YAML"),
    ],
)
def test_a_broken_block_is_said_in_one_line(text: str, why: str) -> None:
    with pytest.raises(FrontMatterError, match=r"^.*$") as raised:
        read_front_matter(text)
    assert why in str(raised.value) and "\n" not in str(raised.value)


def test_plain_blocks_are_read_without_yaml_and_the_rest_with_it() -> None:
    assert plain_block("name: pdf\n\ndescription: Fill forms, then check (twice).") == {
        "name": "pdf",
        "description": "Fill forms, then check (twice).",
    }
    for block in (
        "tools: [Read, Grep]",
        "description: >\n  folded",
        "tools:\n  - Read",
        'description: "quoted"',
        "on: x",
        "count: 3",
        "flag: true",
        "empty:",
        "url: https://example.com",
        "d: a # comment",
        "name: a\nname: b",
    ):
        assert plain_block(block) is None, block
    front, _ = read_front_matter("---\ntools: [Read, Grep]\ncount: 3\non: x\n---\n")
    assert front == {"tools": ["Read", "Grep"], "count": 3, "True": "x"}


KEYS = st.sampled_from(["name", "description", "on", "yes", "null", "model", "a-b", "x_1", "3"])
VALUES = (
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")),
        max_size=20,
    )
    | st.from_regex(r"[A-Za-z(][A-Za-z0-9 ,.()/-]{0,15}", fullmatch=True)
    | st.sampled_from(["true", "No", "~", "1.5", "0x1f", ".inf", "-", "a: b", "[x]", "x #y", "é"])
)


@given(st.lists(st.tuples(KEYS, VALUES), max_size=5))
@settings(max_examples=400, deadline=None)
def test_the_plain_reader_answers_only_as_yaml_would(pairs: list[tuple[str, str]]) -> None:
    block = "\n".join(f"{key}: {value}" for key, value in pairs)
    plain = plain_block(block)
    if plain is None:
        return
    assert plain == {str(k): v for k, v in (yaml.safe_load(block) or {}).items()}
