"""One line of input, edited key by key: a state machine with no I/O.

Keys are strings: a typed character is itself (one character long); every other
key is a name in angle brackets, such as ``"<enter>"`` or ``"<ctrl-d>"`` (see
:class:`Key`). The prompt of an interactive session, and the answer to a question,
are read with a :class:`LineEditor`.

Example::

    editor = LineEditor(history=["ls"])
    for key in ("<up>", "x", "<enter>"):
        ending = editor.press(key)
    assert ending == "submit" and editor.text == "lsx"
"""

from __future__ import annotations

from typing import Final, Literal

from treadle.adapters.blessed_terminal.screen import cell_width
from treadle.domain.rules import keys

Ending = Literal["submit", "eof", "cancel"]


class Key:
    """The names of the keys that are not characters."""

    ENTER: Final = "<enter>"
    NEWLINE: Final = "<newline>"
    """A line break inside the text: an Enter that arrives in the middle of a paste."""
    ESC: Final = keys.ESC
    BACKSPACE: Final = "<backspace>"
    DELETE: Final = "<delete>"
    LEFT: Final = "<left>"
    RIGHT: Final = "<right>"
    UP: Final = "<up>"
    DOWN: Final = "<down>"
    HOME: Final = "<home>"
    END: Final = "<end>"
    CTRL_C: Final = keys.CTRL_C
    CTRL_D: Final = keys.CTRL_D
    CTRL_K: Final = "<ctrl-k>"
    CTRL_O: Final = keys.CTRL_O
    """Shows the model's reasoning in full (the display's key; no editing)."""
    CTRL_U: Final = "<ctrl-u>"
    CTRL_W: Final = "<ctrl-w>"


class LineEditor:
    """The text being typed, its cursor, and the history it can recall with Up and Down.

    ``press`` returns how the line ended (``submit`` on Enter, ``eof`` on Ctrl-D on an
    empty line, ``cancel`` on Ctrl-C) or None while it goes on. Esc clears the line.
    """

    def __init__(self, history: list[str] | None = None) -> None:
        self.history = history if history is not None else []
        self.text = ""
        self.cursor = 0
        self._recalled = len(self.history)
        self._draft = ""

    def press(self, key: str) -> Ending | None:
        if len(key) == 1:
            if key.isprintable():
                self._set(
                    self.text[: self.cursor] + key + self.text[self.cursor :], self.cursor + 1
                )
            return None
        match key:
            case Key.ENTER:
                return "submit"
            case Key.NEWLINE:
                self._set(
                    self.text[: self.cursor] + "\n" + self.text[self.cursor :], self.cursor + 1
                )
            case Key.CTRL_C:
                return "cancel"
            case Key.CTRL_D if not self.text:
                return "eof"
            case Key.CTRL_D | Key.DELETE:
                self._set(self.text[: self.cursor] + self.text[self.cursor + 1 :], self.cursor)
            case Key.BACKSPACE if self.cursor:
                self._set(self.text[: self.cursor - 1] + self.text[self.cursor :], self.cursor - 1)
            case Key.LEFT:
                self.cursor = max(0, self.cursor - 1)
            case Key.RIGHT:
                self.cursor = min(len(self.text), self.cursor + 1)
            case Key.HOME:
                self.cursor = 0
            case Key.END:
                self.cursor = len(self.text)
            case Key.CTRL_U | Key.ESC:
                self._set(self.text[self.cursor :] if key == Key.CTRL_U else "", 0)
            case Key.CTRL_K:
                self._set(self.text[: self.cursor], self.cursor)
            case Key.CTRL_W:
                start = len(self.text[: self.cursor].rstrip())
                start = self.text.rfind(" ", 0, start) + 1
                self._set(self.text[:start] + self.text[self.cursor :], start)
            case Key.UP if self._recalled > 0:
                if self._recalled == len(self.history):
                    self._draft = self.text
                self._recalled -= 1
                self._set(self.history[self._recalled], len(self.history[self._recalled]))
            case Key.DOWN if self._recalled < len(self.history):
                self._recalled += 1
                recalled = (
                    self.history[self._recalled]
                    if self._recalled < len(self.history)
                    else self._draft
                )
                self._set(recalled, len(recalled))
        return None

    def put(self, text: str) -> None:
        """Start the line again with ``text``, the cursor at its end."""
        self._set(text, len(text))

    def take(self) -> str:
        """The submitted line, kept in the history; the editor starts a new line."""
        line = self.text
        if line.strip() and (not self.history or self.history[-1] != line):
            self.history.append(line)
        self.text, self.cursor, self._draft = "", 0, ""
        self._recalled = len(self.history)
        return line

    def layout(self, room: int, most: int = 1_000) -> tuple[list[str], int, int]:
        """The text wrapped into rows of ``room`` columns, and the row and column of the
        cursor in them. Rows break after a space, as an answer's words do (a word longer
        than a row is broken); a line break in the text starts a row, and a cursor past
        a full row starts one. At most ``most`` rows, the cursor's among them.

        >>> editor = LineEditor(); editor.text, editor.cursor = "ab cd ef", 8
        >>> editor.layout(6)
        (['ab cd ', 'ef'], 1, 2)
        """
        room = max(1, room)
        text = self.text
        spans = _rows(text, room)
        cursor = min(self.cursor, len(text))
        row, column = len(spans) - 1, 0
        for number, (start, end, hard) in enumerate(spans):
            last = number == len(spans) - 1
            if start <= cursor < end or (cursor == end and (hard or last)):
                row, column = number, _width(text[start:cursor])
                break
        # A space that hangs past the end of its row is not shown (the cursor may be).
        shown = [_fitted(text[start:end], room) for start, end, _ in spans]
        if row == len(shown) - 1 and column >= room:  # the cursor after a full last row
            shown.append("")
            row, column = row + 1, 0
        most = max(1, most)
        if len(shown) > most:
            first = min(max(0, row - most + 1), len(shown) - most)
            shown, row = shown[first : first + most], row - first
        return shown, row, column

    def _set(self, text: str, cursor: int) -> None:
        self.text, self.cursor = text, cursor


def _width(text: str) -> int:
    return len(text) if text.isascii() else cell_width(text)


def _fitted(row: str, room: int) -> str:
    return row[:-1] if row.endswith(" ") and _width(row) > room else row


def _rows(text: str, room: int) -> list[tuple[int, int, bool]]:
    """Where each row of ``text`` starts and ends in ``room`` columns, and whether a line
    break ends it (the break itself is on no row)."""
    rows: list[tuple[int, int, bool]] = []
    start = column = 0
    space = -1  # the last space on the row: a row that fills up breaks after it
    for index, char in enumerate(text):
        if char == "\n":
            rows.append((start, index, True))
            start, column, space = index + 1, 0, -1
            continue
        size = 1 if char.isascii() else cell_width(char)
        if column + size > room:
            if char == " ":  # it hangs at the end of the row
                rows.append((start, index + 1, False))
                start, column, space = index + 1, 0, -1
                continue
            if space >= start:
                rows.append((start, space + 1, False))
                start, space = space + 1, -1
                column = _width(text[start:index])
            if column + size > room:
                rows.append((start, index, False))
                start, column, space = index, 0, -1
        if char == " ":
            space = index
        column += size
    rows.append((start, len(text), False))
    return rows
