"""Streamed text word-wrapped to a width: ``--print`` on a terminal.

The answer comes in pieces; a word is written once it is whole (a space or a line's
end follows it), on the row it fits in, else at the start of the next one. A row
that breaks keeps the indentation its line began with, and a list item's text hangs
under its first word, not under its marker. A word wider than the row is cut where
the row ends. Nothing else changes: the text's own line breaks stay, and only the
spaces where a row breaks are dropped. No I/O: text in, text out.

Example::

    wrap = WordWrap(lambda: 10)
    wrap.feed("- one two three")   # '- one two'
    wrap.flush()                   # '\\n  three'
"""

from __future__ import annotations

import re
from collections.abc import Callable

from wcwidth import wcwidth

_MARKER = re.compile(r"[-*+•]|\d{1,9}[.)]")
"""A list item's marker: its text hangs after it."""
TAB = 8


def width_of(text: str) -> int:
    """The columns ``text`` takes on a terminal (a wide character two, a mark none)."""
    if text.isascii():
        return len(text)
    return sum(max(0, wcwidth(character)) for character in text)


class WordWrap:
    """Pieces of text in, the same text out with its long rows broken between words.

    ``width`` is asked at the start of each row, so a resize applies from the next.
    """

    def __init__(self, width: Callable[[], int]) -> None:
        self._width = width
        self._row = max(1, width())
        self._column = 0
        self._indent = 0
        self._spaces = ""  # white space after the last word written, not written yet
        self._word = ""  # the word being read
        self._first = True  # no word of this line written yet

    @property
    def mid_line(self) -> bool:
        """Whether the last row has text on it (written, or held back)."""
        return bool(self._column or self._word or self._spaces)

    def feed(self, text: str) -> str:
        """What can be written of ``text`` now (a word still being read waits)."""
        out: list[str] = []
        for character in text:
            if character == "\n":
                out.append(self._take_word())
                out.append("\n")
                self._new_line()
            elif character in " \t":
                out.append(self._take_word())
                self._spaces += character
            else:
                self._word += character
                if width_of(self._word) >= self._row - self._indent:
                    out.append(self._take_word())  # wider than any row: cut at its end
        return "".join(out)

    def flush(self) -> str:
        """The word held back, written: the text stops here for now (other lines
        follow); spaces after it are dropped."""
        written = self._take_word()
        self._spaces = ""
        return written

    def _new_line(self) -> None:
        self._row = max(1, self._width())
        self._column = self._indent = 0
        self._spaces, self._first = "", True

    def _take_word(self) -> str:
        word, self._word = self._word, ""
        if not word:
            return ""
        spaces = self._spaces.replace("\t", " " * (TAB - self._column % TAB))
        self._spaces = ""
        out = ""
        if self._first:
            out, self._column = spaces, width_of(spaces)
            self._indent = self._column
            if _MARKER.fullmatch(word):
                self._indent += width_of(word) + 1
            if self._indent >= self._row // 2:
                self._indent = 0  # deep indents would leave no room: rows start at 0
            self._first = False
        elif self._column + width_of(spaces) + width_of(word) > self._row:
            out, self._column = self._break(), self._indent
        else:
            out, self._column = spaces, self._column + width_of(spaces)
        while self._column + width_of(word) > self._row:  # a word wider than a row
            room = self._row - self._column
            head = _head(word, room) if room > 0 else ""
            if not head:
                out += self._break()
                self._column = self._indent
                head = _head(word, self._row - self._column) or word[0]
            out += head
            word = word[len(head) :]
            out += self._break()
            self._column = self._indent
        self._column += width_of(word)
        return out + word

    def _break(self) -> str:
        self._row = max(1, self._width())
        return "\n" + " " * self._indent


def _head(word: str, room: int) -> str:
    """The longest start of ``word`` that fits in ``room`` columns."""
    used = 0
    for index, character in enumerate(word):
        used += max(0, wcwidth(character))
        if used > room:
            return word[:index]
    return word
