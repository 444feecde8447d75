"""The log's own lines (notices, a sub-agent's lines, the totals, the greeting) broken
between words to the window's width, as the answer's rows are.

A line the terminal wrapped by itself would break a word at the last column (``req``
/ ``uests``) and start its next row at column 0, under its marker. Here a line wider
than the row breaks at a space; its next rows hang under its text (after its indent,
and after a marker such as ``•``, ``✓``, ``↻`` or a diff's ``+``); a word wider than a
whole row is cut where the row ends. A line may carry styles (SGR sequences): they
take no columns, and a style running at a break is ended on its row and started
again on the next, so that a row never colours what follows it. No I/O.

Example::

    wrap_rows(["↻ retrying in 1 s — connection reset by peer"], 24)
    # ['↻ retrying in 1 s —', '  connection reset by', '  peer']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from treadle.adapters.terminal.word_wrap import width_of as cell_width

_ESCAPE = re.compile(r"\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]")
_RESET = re.compile(r"\x1b\[0*m")
_SPACES = re.compile(r"( +)")
_MARKER = re.compile(r"(?:[•✓✗■?↻…▸✔○✻▌│›→]|[-*]|\d{1,9}[.)]|\[[^\]\s]{1,40}\]) |[+-]")
"""What a line's text hangs after: a list's or a call's mark and its space, a
sub-agent's ``[name]``, or a diff's ``+`` or ``-`` (after an indent)."""
RESET = "\x1b[m"
_GLUED = re.compile(r"(?<=\d) (?=m?s\b)| · (?=\S)")
"""Spaces no row breaks at: between a number and its unit (``1.0 s``), and after a
``·`` (a row starts with it, never ends with it)."""
_HELD = "\u00a0"


def wrap_rows(lines: Sequence[str], width: int, *, margin: int = 1) -> list[str]:
    """``lines`` as rows of at most ``width - margin`` columns (the full screen leaves
    its last column free, ``--print`` does not), each broken between words."""
    room = width - margin
    if room < 10:  # narrower than any word: the terminal breaks what it must
        return list(lines)
    rows: list[str] = []
    for line in lines:
        if len(line) <= room:  # the usual line: styles only make it look longer
            rows.append(line)
        else:
            rows += _wrap(line, room)
    return rows


def _visible(text: str) -> str:
    return _ESCAPE.sub("", text) if "\x1b" in text else text


def _hang(visible: str, room: int) -> int:
    """The columns the rows after the first start at."""
    text = visible.lstrip(" ")
    indent = len(visible) - len(text)
    marker = _MARKER.match(text)
    if marker and (marker.group() not in "+-" or indent >= 2):
        indent += cell_width(marker.group())
    return indent if indent <= room // 2 else 0


def _wrap(line: str, room: int) -> list[str]:
    visible = _visible(line)
    if cell_width(visible) <= room:
        return [line]
    held = _GLUED.sub(lambda glue: _HELD if glue.group() == " " else " ·" + _HELD, line)
    if held == line or _HELD in line:
        return _wrap_words(line, room, visible)
    return [row.replace(_HELD, " ") for row in _wrap_words(held, room, visible)]


def _wrap_words(line: str, room: int, visible: str) -> list[str]:
    hang = _hang(visible, room)
    rows: list[str] = []
    row: list[str] = []
    used = 0
    active: list[str] = []  # the styles set since the last reset, at the end of ``row``
    spaces = ""

    def break_row() -> None:
        nonlocal row, used
        rows.append("".join(row) + (RESET if active else ""))
        row, used = [" " * hang, *active], hang

    first = True
    for chunk in _SPACES.split(line):
        if not chunk:
            continue
        if chunk[0] == " ":
            spaces = chunk
            continue
        size = cell_width(_visible(chunk))
        gap = len(spaces)
        if first:  # the line's own indent stays, however wide
            row.append(spaces)
            used += gap
        elif used + gap + size > room:
            break_row()
        else:
            row.append(spaces)
            used += gap
        first, spaces = False, ""
        while used + size > room:  # wider than what is left of a row: cut it there
            head, chunk = _cut(chunk, room - used, active)
            row.append(head)
            break_row()
            size = cell_width(_visible(chunk))
        row.append(chunk)
        used += size
        _follow(chunk, active)
    if used > hang or not rows:
        rows.append("".join(row))
    return rows


def _follow(text: str, active: list[str]) -> None:
    """Keep ``active`` as the styles in force after ``text``."""
    if "\x1b" not in text:
        return
    for escape in _ESCAPE.findall(text):
        if _RESET.fullmatch(escape):
            active.clear()
        elif escape.startswith("\x1b["):
            active.append(escape)


def _cut(chunk: str, room: int, active: list[str]) -> tuple[str, str]:
    """The start of ``chunk`` that fits in ``room`` columns (a character at least, when
    the row is empty), and the rest; ``active`` follows the start's styles."""
    used = 0
    index = 0
    while index < len(chunk):
        escape = _ESCAPE.match(chunk, index) if chunk[index] == "\x1b" else None
        if escape:
            _follow(escape.group(), active)
            index = escape.end()
            continue
        size = cell_width(chunk[index])
        if used + size > room and (used or room <= 0):
            break
        used += size
        index += 1
    return chunk[:index], chunk[index:]
