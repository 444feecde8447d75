"""A markdown file's front matter, read with PyYAML's safe loader."""

from __future__ import annotations

import pytest

from treadle.adapters.workflows.front_matter import FrontMatterError, read_front_matter


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
