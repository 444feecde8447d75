"""Words bash would read otherwise than they are written.

``shlex`` undoes quotes as bash does, but not what bash expands: a command's words
are only what they look like when nothing in it expands into other words.

Example::

    >>> unread_spelling("find . -name '*.py'")
    ''
    >>> unread_spelling("find . $'\\x2dexec' rm {} +")
    'it has an expansion treadle cannot read'
"""

from __future__ import annotations

import re

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PLAIN_PARAMETER = re.compile(rf"\$(?:{_NAME}|\{{{_NAME}\}}|[0-9#?$!@*-])")


def unread_spelling(command: str) -> str:
    """Why bash could make other words of ``command`` than they read: '' when none.

    ``$'\\x2dexec'`` and ``${X:-exec}`` spell any word; ``{-exec,x}`` is two words;
    an unquoted pattern in a word that could start with ``-`` could expand to an
    option (a file named ``-exec``). Plain ``$NAME`` takes its value from treadle's
    environment, which the command does not set.
    """
    quote = ""
    first = ""  # the current word's first character as written; "" between words
    i = 0
    while i < len(command):
        c = command[i]
        if quote == "'":
            quote = "" if c == "'" else quote
            i += 1
            continue
        if c in " \t" and not quote:
            first = ""
            i += 1
            continue
        first = first or c
        if c == "\\":
            i += 2
            continue
        if c == "$":
            plain = _PLAIN_PARAMETER.match(command, i)
            if plain is None:
                return "it has an expansion treadle cannot read"
            i = plain.end()
            continue
        if quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c in "*?[" and first in _COULD_BE_A_DASH:
            return "it has a pattern that could expand to an option"
        elif c == "{" and _is_brace_expansion(command, i):
            return "it has a brace expansion, which makes other words"
        i += 1
    return ""


_COULD_BE_A_DASH = frozenset("-'\"\\$*?[")


def _is_brace_expansion(command: str, i: int) -> bool:
    end = command.find("}", i)
    inner = command[i + 1 : end] if end > 0 else ""
    return "," in inner or ".." in inner
