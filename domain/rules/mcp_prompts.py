"""A server's prompt as a slash command: what its arguments are, from the words typed
after its name.

Words are ``name=value`` pairs, or plain words given to the arguments in the prompt's
order (the last one takes the rest of the line); quotes group words as in a shell.

>>> prompt_arguments([("city", True), ("state", False)], "Paris")
({'city': 'Paris'}, '')
>>> prompt_arguments([("city", True), ("state", False)], "state=TX city='San Antonio'")
({'state': 'TX', 'city': 'San Antonio'}, '')
>>> prompt_arguments([("city", True)], "")
({}, 'missing city (its arguments: city)')
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def prompt_arguments(
    arguments: Sequence[tuple[str, bool]], text: str
) -> tuple[dict[str, str], str]:
    """The values of a prompt's ``(name, required)`` arguments, or why they do not read."""
    names = [name for name, _ in arguments]
    listed = f"(its arguments: {', '.join(names) or 'none'})"
    try:
        words = shlex.split(text)
    except ValueError as error:
        return {}, f"cannot read the arguments: {error}"
    values: dict[str, str] = {}
    plain: list[str] = []
    for word in words:
        name, equals, value = word.partition("=")
        if equals and name in names:
            values[name] = value
        else:
            plain.append(word)
    free = [name for name in names if name not in values]
    if plain and not free:
        return {}, f"more words than arguments {listed}"
    for index, name in enumerate(free):
        if index >= len(plain):
            break
        last = index == len(free) - 1
        values[name] = " ".join(plain[index:]) if last else plain[index]
    missing = [name for name, required in arguments if required and name not in values]
    if missing:
        return {}, f"missing {', '.join(missing)} {listed}"
    return values, ""
