"""Text that came from outside (a model, a server, a command line), made safe to keep
and safe to show.

JSON's ``\\ud800`` escapes and a command line's undecodable bytes both give Python
strings with lone UTF-16 surrogates, which no encoder will write: a transcript, a
terminal or a file write would fail on them. Such text is made well-formed where it
comes in, once (:func:`well_formed`). What reaches a screen also loses its control
characters, escape sequences and bidirectional overrides (:func:`printable`), and what
must fit one line is made one (:func:`one_line`).

Example::

    >>> well_formed("ok \\ud800 then")
    'ok \\ufffd then'
    >>> printable("\\x1b[2Jhi\\r\\n")
    'hi\\n'
"""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"

# C0 controls but tab and newline, DEL and the C1 range (8-bit CSI and friends); the
# bidirectional embeddings, overrides and isolates, which can make a line read in an
# order other than the one it runs in (U+202E shows "rm -rf ~ #ls" as something
# harmless), with the marks that reorder too (LRM, RLM, ALM); the line and paragraph
# separators, which some readers take for line breaks; and lone surrogates, which no
# terminal can be sent.
CONTROL_CHARACTERS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
    "\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
# Whole escape sequences go first, so that no "[31m" is left behind: CSI, OSC
# (ended by BEL or ST), the two-character ones, and the 8-bit CSI.
ESCAPE_SEQUENCES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-_])|\x9b[0-?]*[ -/]*[@-~]"
)


def well_formed(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a Python string holds
    astral characters whole, so every surrogate in one is lone)."""
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(REPLACEMENT, text)


def printable(text: str) -> str:
    """``text`` with every escape sequence, control character (but tab and newline),
    bidirectional override and lone surrogate removed."""
    return CONTROL_CHARACTERS.sub("", ESCAPE_SEQUENCES.sub("", text))


_PATH_ESCAPES = {"\n": "\\n", "\t": "\\t", '"': '\\"', "\\": "\\\\"}


def quoted_path(path: str) -> str:
    """A file name as it can be shown and told apart from every other: as it is when it
    is printable on one line, else quoted as git quotes one, with ``\\n``, ``\\t`` and
    ``\\xNN`` (a byte that is not UTF-8, a control character) for what cannot be shown.
    A name holding a quote or a backslash is quoted too: no name reads as another's
    quoted form.

    >>> quoted_path("src/app.py"), quoted_path("new\\nline"), quoted_path("bad\\udcff.txt")
    ('src/app.py', '"new\\\\nline"', '"bad\\\\xff.txt"')
    """
    if path.isprintable() and '"' not in path and "\\" not in path:
        return path
    shown = []
    for character in path:
        code = ord(character)
        if character in _PATH_ESCAPES:
            shown.append(_PATH_ESCAPES[character])
        elif 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
            shown.append(f"\\x{code - 0xDC00:02x}")
        elif CONTROL_CHARACTERS.match(character) or not character.isprintable():
            shown.append(f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")
        else:
            shown.append(character)
    return '"' + "".join(shown) + '"'


def one_line(text: str, width: int = 100) -> str:
    """``text`` printable on one line (runs of white space become one space), cut to
    ``width`` with an ellipsis."""
    line = " ".join(printable(text).split())
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"
