"""An answer's markdown, rendered for the terminal and word-wrapped to its width.

The answer streams in small pieces; :class:`AnswerRenderer` commits a line once it is
complete (a table once its last row is in, since its columns depend on every row), so
nothing above the live block is ever redrawn. What is not committed yet is
:meth:`AnswerRenderer.pending`, which the live block shows.

The block structure (headings, fences, lists, quotes, tables, rules) is read a line at
a time here, because a stream cannot wait for the whole document; the inline markup of
each line (emphasis, code, links) is parsed by markdown-it-py, and fenced code is
highlighted by Pygments when colour is on. No I/O: lines in, styled lines out.

Example::

    renderer = AnswerRenderer(MarkdownStyles(), width=lambda: 40)
    renderer.feed("## Done\\n- **one** thing")   # ['Done']
    renderer.finish()                            # ['• one thing']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from treadle.adapters.blessed_terminal.screen import cell_width
from treadle.domain.values.text import printable

Style = Callable[[str], str]


def _plain(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class MarkdownStyles:
    """The styles an answer is drawn with; plain ones keep the layout without colour."""

    bold: Style = _plain
    italic: Style = _plain
    underline: Style = _plain
    dim: Style = _plain
    code: Style = _plain
    heading: Style = _plain
    colour: bool = False
    """Whether fenced code is highlighted (Pygments writes its own colours)."""

    @staticmethod
    def of(term: Any) -> MarkdownStyles:
        """blessed's styles, empty strings when it does no styling (``NO_COLOR``)."""
        colour = bool(term.bold("x") != "x")
        return MarkdownStyles(
            term.bold,
            term.italic,
            term.underline,
            term.dim,
            term.cyan,
            lambda text: term.bold(term.magenta(text)),
            colour and int(getattr(term, "number_of_colors", 0) or 0) >= 8,
        )


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:\s+|$)(.*?)(?:\s+#+\s*)?$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:\s*\1){2,}\s*$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(\[[ xX]\]\s+)?(.*)$")
_QUOTE = re.compile(r"^ {0,3}>\s?(.*)$")
_DELIMITER_CELL = re.compile(r"^\s*:?-+:?\s*$")
CODE_GUTTER = "│ "
QUOTE_GUTTER = "▌ "
MIN_WIDTH = 20
"""Below this the terminal is narrower than any layout: lines are wrapped as if it were
this wide, and the terminal breaks them further."""


@dataclass
class AnswerRenderer:
    """Complete lines of an answer in, rendered rows out; see the module's docstring."""

    styles: MarkdownStyles = field(default_factory=MarkdownStyles)
    width: Callable[[], int] = lambda: 80
    _partial: str = ""
    _fence: str = ""
    """The fence that opened the code block we are in ('' outside one)."""
    _lexer: Any = None
    _table: list[str] = field(default_factory=list)
    _held: str | None = None
    """A line with a ``|`` held back: the next line tells whether it heads a table."""
    _blank: bool = True
    """The last row committed was blank (or nothing was): no second blank row."""
    _asked: int = 0
    """The width asked for once for the lines of one piece (each ask is a system call)."""

    def _columns(self) -> int:
        return self._asked or self.width()

    def feed(self, text: str) -> list[str]:
        """Add a piece of the answer; the rows of the lines it completed."""
        if "\n" not in text:
            self._partial += text
            return []
        *complete, self._partial = (self._partial + text).split("\n")
        self._asked = self.width()
        try:
            return [row for line in complete for row in self._line(printable(line))]
        finally:
            self._asked = 0

    def pending(self) -> str:
        """What came after the last complete line (shown live, not yet committed)."""
        held = [*self._table, *([self._held] if self._held is not None else [])]
        return "\n".join([*held, self._partial]) if held else self._partial

    def pending_rows(self, width: int, most: int = 0) -> list[str]:
        """The live block's rows for what is not committed yet: the unfinished line
        rendered as it will be once complete (a list item's hang, a heading's style,
        code behind its gutter, the emphasis closed so far without its marks), so that
        its rows do not move when it is committed; a held table's lines plainly, as its
        columns are not known yet. The last ``most`` rows (0: :data:`PENDING_ROWS`)."""
        most = max(PENDING_ROWS, most)
        if self._table or self._held is not None:
            return pending_rows(self.pending(), width)
        line = printable(self._partial)
        if not line.strip() and not self._fence:
            return []
        if self._fence:
            closing = line.strip()
            if closing and not closing.strip(self._fence[0]):  # the fence closing
                return []
            return list(self._code(line))[-most:]
        if line[0].isalpha() and line.isascii() and not any(mark in line for mark in _MARKS):
            plain = _wrap_plain(line, max(MIN_WIDTH, width - 1))  # most of most answers
            if plain is not None:
                return plain[-most:]
        if _FENCE.match(line):  # a fence opening: nothing to show until its first line
            return []
        probe = AnswerRenderer(self.styles, lambda: width, _blank=self._blank)
        return list(probe._block(line))[-most:]

    def finish(self) -> list[str]:
        """The answer ended: everything not committed yet, rendered."""
        rows = list(self._line(printable(self._partial))) if self._partial else []
        self._partial = ""
        rows += self._end_table()
        if self._held is not None:
            held, self._held = self._held, None
            rows += self._block(held)
        self._fence = ""
        self._lexer = None
        self._blank = True
        return rows

    # Blocks -----------------------------------------------------------------------

    def _line(self, line: str) -> Iterator[str]:
        if self._fence:
            yield from self._code(line)
            return
        if self._table:
            if _is_table_row(line):
                self._table.append(line)
                return
            yield from self._end_table()
        if self._held is not None:
            held, self._held = self._held, None
            if _is_table_row(line) and _is_delimiter(line):
                self._table = [held, line]
                return
            yield from self._block(held)
        if "|" in line and not _FENCE.match(line):
            self._held = line
            return
        yield from self._block(line)

    def _block(self, line: str) -> Iterator[str]:
        s = self.styles
        width = max(MIN_WIDTH, self._columns() - 1)
        if not line.strip():
            if not self._blank:
                self._blank = True
                yield ""
            return
        self._blank = False
        if fence := _FENCE.match(line):
            self._fence = fence.group(1)
            self._lexer = _lexer(fence.group(2)) if s.colour else None
            if fence.group(2):
                yield s.dim(CODE_GUTTER + fence.group(2))
            return
        if heading := _HEADING.match(line):
            yield from (s.heading(row) for row in _wrap(_inline(heading.group(2), s), width))
            return
        if _RULE.match(line):
            yield s.dim("─" * min(width, 40))
            return
        if quote := _QUOTE.match(line):
            gutter = s.dim(QUOTE_GUTTER)
            rows = _wrap(_inline(quote.group(1), s), width - len(QUOTE_GUTTER))
            yield from (gutter + s.italic(row) for row in rows)
            return
        if item := _ITEM.match(line):
            indent, marker, task, text = item.groups()
            bullet = marker if marker[0].isdigit() else "•"
            if task:
                bullet += " ☑" if task[1] in "xX" else " ☐"
            first = " " * len(indent.expandtabs(4)) + bullet + " "
            hang = " " * cell_width(first)
            rows = _wrap(_inline(text, s), width - len(hang))
            yield from ((first if not n else hang) + row for n, row in enumerate(rows))
            return
        yield from _wrap(_inline(line.strip(), s), width)

    def _code(self, line: str) -> Iterator[str]:
        s = self.styles
        stripped = line.strip()
        if stripped.startswith(self._fence[0] * len(self._fence)) and not stripped.strip(
            self._fence[0]
        ):
            self._fence = ""
            self._lexer = None
            self._blank = False
            return
        width = max(MIN_WIDTH, self._columns() - 1) - len(CODE_GUTTER)
        text = line.expandtabs(4)
        pieces = [text[i : i + width] for i in range(0, len(text), width)] or [""]
        for piece in pieces:
            yield s.dim(CODE_GUTTER) + (
                _highlighted(piece, self._lexer) if self._lexer else s.code(piece)
            )

    def _end_table(self) -> list[str]:
        if not self._table:
            return []
        table, self._table = self._table, []
        self._blank = False
        return _table_rows(table, self.styles, max(MIN_WIDTH, self._columns() - 1))


# Inline ------------------------------------------------------------------------------

Span = tuple[str, Style]


@cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("strikethrough")


@lru_cache(maxsize=1024)
def _parsed(text: str) -> Any:
    """markdown-it's inline tokens for ``text``: a pure function of it, kept for the
    lines an answer repeats (list markers, table rows, the same sentence again);
    the tokens are only read."""
    return _parser().parseInline(text)


_MARKS = "*_`[<&\\~"
"""The characters inline markup starts with: a text without them is plain."""


def _inline(text: str, s: MarkdownStyles) -> list[Span]:
    """``text``'s inline markup as spans of text, each with its style."""
    if not any(mark in text for mark in _MARKS):
        return [(text, _plain)]
    tokens = _parsed(text)
    spans: list[Span] = []
    bold = italic = strike = 0
    link = ""
    link_start = 0
    for token in (tokens[0].children or []) if tokens else []:
        kind = token.type
        if kind == "strong_open":
            bold += 1
        elif kind == "strong_close":
            bold -= 1
        elif kind == "em_open":
            italic += 1
        elif kind == "em_close":
            italic -= 1
        elif kind == "s_open":
            strike += 1
        elif kind == "s_close":
            strike -= 1
        elif kind == "link_open":
            link = str(token.attrGet("href") or "")
            spans.append(("", _plain))
            link_start = len(spans)
        elif kind == "link_close":
            shown = "".join(text for text, _ in spans[link_start:])
            if link and link != shown and link.removeprefix("mailto:") != shown:
                spans.append((f" ({link})", s.dim))
            link = ""
        elif kind == "code_inline":
            spans.append((token.content, s.code))
        elif kind in ("softbreak", "hardbreak"):
            spans.append((" ", _plain))
        elif kind == "image":
            spans.append((f"[image: {token.content or token.attrGet('src')}]", s.dim))
        elif kind in ("text", "html_inline"):
            style: Style = _plain
            if bold:
                style = _compose(s.bold, style)
            if italic:
                style = _compose(s.italic, style)
            if link:
                style = _compose(s.underline, style)
            if strike:
                style = _compose(s.dim, style)
            spans.append((token.content, style))
    return spans


def _compose(outer: Style, inner: Style) -> Style:
    if inner is _plain:
        return outer
    return lambda text: outer(inner(text))


def _wrap(spans: list[Span], width: int) -> list[str]:
    """The spans word-wrapped to ``width`` columns, styled; a word wider than a whole
    row is broken. Never an empty list: an empty text is one empty row."""
    width = max(1, width)
    if len(spans) == 1 and spans[0][1] is _plain and spans[0][0].isascii():
        plain = _wrap_plain(spans[0][0], width)  # most lines of most answers
        if plain is not None:
            return plain
    rows: list[str] = []
    row: list[str] = []
    used = 0
    pending_space = False
    for text, style in spans:
        for word in re.split(r"(\s+)", text):
            if not word:
                continue
            if word.isspace():
                pending_space = used > 0
                continue
            size = cell_width(word)
            space = 1 if pending_space else 0
            if used and used + space + size > width:
                rows.append("".join(row))
                row, used, space = [], 0, 0
            elif space:
                row.append(" ")
                used += 1
            pending_space = False
            while size > width:  # a word longer than a row: break it
                head = _head(word, width - used)
                row.append(style(head))
                rows.append("".join(row))
                row, used = [], 0
                word = word[len(head) :]
                size = cell_width(word)
            row.append(style(word))
            used += size
    if row or not rows:
        rows.append("".join(row))
    return rows


def _wrap_plain(text: str, width: int) -> list[str] | None:
    """:func:`_wrap` for one unstyled ASCII text (a column per character), or None when
    a word is wider than a row (the general way breaks it)."""
    words = text.split()
    if not words:
        return [""]
    rows: list[str] = []
    start = 0  # the first word of the row being filled
    used = -1
    for index, word in enumerate(words):
        size = len(word)
        if size > width:
            return None
        if used + 1 + size > width:
            rows.append(" ".join(words[start:index]))
            start, used = index, size
        else:
            used += 1 + size
    rows.append(" ".join(words[start:]))
    return rows


def _head(word: str, width: int) -> str:
    """The longest start of ``word`` within ``width`` columns (one character at least)."""
    used = 0
    for index, char in enumerate(word):
        used += cell_width(char)
        if used > width:
            return word[: max(1, index)]
    return word


# Tables -------------------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    line = line.strip()
    line = line.removeprefix("|")
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)]


def _is_table_row(line: str) -> bool:
    return "|" in line and bool(line.strip())


def _is_delimiter(line: str) -> bool:
    cells = _cells(line)
    return bool(cells) and all(_DELIMITER_CELL.match(cell) for cell in cells)


def _table_rows(lines: list[str], s: MarkdownStyles, width: int) -> list[str]:
    """A table with its columns aligned, each cell wrapped within its column; a table too
    wide for the terminal shares the room out, the widest columns giving up most."""
    header, _, *body = [_cells(line) for line in lines]
    count = len(header)
    rows = [header, *[(row + [""] * count)[:count] for row in body]]
    plain = [[_plain_text(cell) for cell in row] for row in rows]
    natural = [max(cell_width(row[i]) for row in plain) for i in range(count)]
    widths = _share(natural, width - (3 * count + 1))
    bar = s.dim("│")

    def rule(left: str, middle: str, right: str) -> str:
        return s.dim(left + middle.join("─" * (w + 2) for w in widths) + right)

    out = [rule("┌", "┬", "┐")]
    for number, row in enumerate(plain):
        style = s.bold if number == 0 else _plain
        cells = [_wrap([(cell, _plain)], widths[i]) for i, cell in enumerate(row)]
        for line in range(max(len(cell) for cell in cells)):
            parts = []
            for i, cell in enumerate(cells):
                text = cell[line] if line < len(cell) else ""
                pad = " " * max(0, widths[i] - cell_width(text))
                parts.append(" " + (style(text) if text else "") + pad + " ")
            out.append(bar + bar.join(parts) + bar)
        if number == 0:
            out.append(rule("├", "┼", "┤"))
    out.append(rule("└", "┴", "┘"))
    return out


def _plain_text(cell: str) -> str:
    """A cell's text without its inline markup (a table's cells are drawn plain)."""
    return "".join(text for text, _ in _inline(cell, MarkdownStyles()))


def _share(natural: list[int], room: int) -> list[int]:
    """Column widths within ``room``: the natural ones if they fit, else the widest
    columns cut down first, none below 3 (or its natural width)."""
    widths = list(natural)
    while sum(widths) > room:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= 3:
            break
        widths[widest] -= 1
    return [max(1, w) for w in widths]


# Code ---------------------------------------------------------------------------------


@cache
def _lexer(language: str) -> Any:
    """Pygments' lexer for a fence's language, or None (no highlighting) if unknown."""
    if not language:
        return None
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language.lower(), stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@cache
def _formatter() -> Any:
    from pygments.formatters import TerminalFormatter

    return TerminalFormatter()


@lru_cache(maxsize=1024)
def _highlighted(line: str, lexer: Any) -> str:
    """``line`` highlighted by ``lexer`` (line by line, as a fence streams in); a pure
    function of the two, so a line a fence repeats is lexed once."""
    from pygments import highlight

    return str(highlight(line, lexer, _formatter())).rstrip("\n")


PENDING_ROWS = 3
"""Rows of the unfinished line the live block shows (its end, as it grows)."""


def pending_rows(pending: str, width: int) -> list[str]:
    """The end of the answer's unfinished line (or held table), wrapped plainly to
    ``width`` for the live block: it is committed, rendered, once complete."""
    rows = [
        row
        for line in printable(pending).split("\n")
        for row in _wrap([(line, _plain)], max(1, width - 1))
    ]
    return rows[-PENDING_ROWS:]
