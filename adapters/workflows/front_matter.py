"""A markdown file's YAML front matter: the ``---`` block at its top, and the rest.

PyYAML parses the block (its C loader where libyaml is built in, the pure one
elsewhere): it is the YAML library everything in this ecosystem writes for, its safe
loader builds only plain values, and a front-matter package (python-frontmatter) would
add nothing but a ten-line split on top of it.

Importing PyYAML takes 14 ms, more than a session may spend on reading 200 skills and
200 commands (issue 23's bench): a block of ``key: text`` lines, which is what nearly
every SKILL.md and command holds, is read by :func:`plain_block` without it. That
reader answers only where YAML's own answer is the same text (no quotes, flow or
block collections, comments, anchors, numbers, booleans or nulls); for anything else
it steps aside and PyYAML, imported then, reads the block.

>>> read_front_matter("---\\nname: pdf\\n---\\nBody\\n")
({'name': 'pdf'}, 'Body\\n')
>>> read_front_matter("No front matter")
({}, 'No front matter')
"""

from __future__ import annotations

import re
from typing import Any

PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
PLAIN_TEXT = re.compile(r"[A-Za-z(/.$][^\t#:`{}\[\]&*!|>%@]*\Z")
"""A value YAML reads as this very text: it starts with a letter (or ``( / . $``) and
holds none of the characters that could make it anything else."""
NOT_TEXT = re.compile(r"(?i:y|yes|n|no|true|false|on|off|null|~|\.inf|\.nan|[-+.]?[0-9].*)\Z")
"""Plain words YAML 1.1 reads as a boolean, a null or a number."""
_WORDS = r"(?i:y|yes|n|no|true|false|on|off|null)"
PLAIN_LINE = re.compile(
    rf"(?!{_WORDS}:)([A-Za-z_][A-Za-z0-9_-]*): +"
    rf"(?!(?:{_WORDS}|(?i:\.inf|\.nan)|[-+.]?[0-9].*) *\Z)"
    r"([A-Za-z(/.$][^\t#:`{}\[\]&*!|>%@]*?) *"
)
"""One ``key: text`` line, all of it, as :data:`PLAIN_KEY`, :data:`PLAIN_TEXT` and
:data:`NOT_TEXT` read it, in one match (issue 23's bench: a pass per line, not four)."""


class FrontMatterError(ValueError):
    """The block is there and is not a YAML mapping."""


def read_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter's mapping ({} when there is none) and the body after it.

    Raises FrontMatterError for a block that is not valid YAML or not a mapping, or
    that never ends.
    """
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        return {}, text
    first, _, rest = text.partition("\n")
    if first.rstrip() != "---":
        return {}, text
    if rest.startswith("---"):  # an empty block
        _, _, body = rest.partition("\n")
        return {}, body
    end = rest.find("\n---")
    if end < 0:
        raise FrontMatterError("its front matter never ends (no closing ---)")
    block = rest[:end]
    after = rest[end + 4 :]
    _, _, body = after.partition("\n")
    plain = plain_block(block)
    if plain is not None:
        return plain, body
    return _yaml_block(block), body


def plain_block(block: str) -> dict[str, Any] | None:
    r"""The mapping of a block of ``key: text`` lines (blank lines allowed), exactly as
    YAML reads it; None when the block holds anything else.

    >>> plain_block("name: pdf\ndescription: Fill forms (PDF) with a script.")
    {'name': 'pdf', 'description': 'Fill forms (PDF) with a script.'}
    >>> plain_block("tools: [Read, Grep]") is None
    True
    """
    found: dict[str, Any] = {}
    for line in block.split("\n"):
        plain = PLAIN_LINE.fullmatch(line)
        if plain is None:
            if line.strip():
                return None
            continue
        key, value = plain.groups()
        if key in found:
            return None
        found[key] = value
    return found


def _yaml_block(block: str) -> dict[str, Any]:
    import yaml  # 14 ms: only for a block the plain reader leaves to it

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        value = yaml.load(block, Loader=loader)  # the safe loader, C or pure
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise FrontMatterError(f"its front matter is not YAML{where}: {problem}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontMatterError("its front matter is not a mapping of keys to values")
    return {str(key): item for key, item in value.items()}
