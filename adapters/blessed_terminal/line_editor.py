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

from treadle.adapters.blessed_terminal.screen import cell_width, fit, fit_tail
from treadle.domain.rules import keys

Ending = Literal["submit", "eof", "cancel"]


LINE_BREAK = "⏎"


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
    CTRL_D: Final = "<ctrl-d>"
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

    def take(self) -> str:
        """The submitted line, kept in the history; the editor starts a new line."""
        line = self.text
        if line.strip() and (not self.history or self.history[-1] != line):
            self.history.append(line)
        self.text, self.cursor, self._draft = "", 0, ""
        self._recalled = len(self.history)
        return line

    def view(self, width: int) -> tuple[str, int]:
        """What fits in ``width`` columns around the cursor, and the cursor's column in it.

        Line breaks show as ⏎: the prompt stays one row.
        """
        shown_text = self.text.replace("\n", LINE_BREAK)
        before, after = shown_text[: self.cursor], shown_text[self.cursor :]
        if cell_width(before) <= width - 2:
            return fit(shown_text, width - 1), cell_width(before)
        shown, used = fit_tail(before, width - 3)
        return "…" + shown + fit(after, max(1, width - 2 - used)), used + 1

    def _set(self, text: str, cursor: int) -> None:
        self.text, self.cursor = text, cursor
