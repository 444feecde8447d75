"""A markdown file's YAML front matter: the ``---`` block at its top, and the rest.

PyYAML parses the block (its C loader where libyaml is built in, the pure one
elsewhere): it is the YAML library everything in this ecosystem writes for, its safe
loader builds only plain values, and a front-matter package (python-frontmatter) would
add nothing but a ten-line split on top of it.

>>> read_front_matter("---\\nname: pdf\\n---\\nBody\\n")
({'name': 'pdf'}, 'Body\\n')
>>> read_front_matter("No front matter")
({}, 'No front matter')
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
    try:
        value = yaml.load(block, Loader=_LOADER)  # the safe loader, C or pure
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise FrontMatterError(f"its front matter is not YAML{where}: {problem}") from None
    if value is None:
        return {}, body
    if not isinstance(value, dict):
        raise FrontMatterError("its front matter is not a mapping of keys to values")
    return {str(key): item for key, item in value.items()}, body
