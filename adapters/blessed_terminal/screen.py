"""A scrolling log with a live block redrawn in place under it.

Everything written goes into the terminal's own scrollback like ordinary output; only
the few rows of the live block (running tools, the status line, a prompt) are redrawn,
below the end of the log. The log's last line may be unfinished (an answer streaming
in): the live block then starts on the row after it, and the cursor always goes back
to the end of the log, so the next piece of answer lands where the last one stopped.

Only VT100 controls are used (save and restore the cursor, index and reverse index,
erase to the end of the line and of the screen), which every terminal emulator and
tmux know; no full-screen mode, no scroll region, no query to the terminal.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import TextIO

from wcwidth import wcwidth

SAVE_CURSOR = "\x1b7"
RESTORE_CURSOR = "\x1b8"
# Index and reverse index move one row down or up without leaving the column,
# scrolling at the bottom: together they make room under the cursor.
INDEX = "\x1bD"
REVERSE_INDEX = "\x1bM"
CLEAR_TO_END_OF_LINE = "\x1b[K"
CLEAR_TO_END_OF_SCREEN = "\x1b[J"
HIDE_CURSOR = "\x1b[?25l"
SHOW_CURSOR = "\x1b[?25h"

TAB_STOP = 8
# Home, erase the first row, then the rest from the second: an erase of the whole
# window (ED 2, or ED 0 from home) is pushed into the scrollback by tmux
# (scroll-on-clear), which would then hold each resize's rows twice.
CLEAR_WINDOW = "\x1b[H\x1b[2K\x1b[2;1H\x1b[J\x1b[H"
TAIL_LINES = 300
"""Lines of log kept to paint the window again after a resize (more than any window)."""
LIVE_ROOM = 8
"""Rows a repaint leaves for the live block under the log."""
_SGR = re.compile(r"\x1b\[[0-9;:?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[78=>DEHM]")


_NOT_ASCII = re.compile(r"[^\x00-\x7f]")
_CHAR_WIDTHS: dict[str, int] = {}


def cell_width(text: str) -> int:
    """How many columns ``text`` takes (wide characters two, combining marks none).

    The ASCII characters count one each; only the others are looked up, once each: a
    status line holds a handful of them (``·``, a spinner) among many ASCII ones.
    """
    if text.isascii():
        return len(text)
    others = _NOT_ASCII.findall(text)
    widths = _CHAR_WIDTHS
    extra = 0
    for char in others:
        width = widths.get(char)
        if width is None:
            width = widths[char] = max(0, wcwidth(char))
        extra += width
    return len(text) - len(others) + extra


def fit(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` columns, with ``…`` where it was cut."""
    if cell_width(text) <= width:
        return text
    if width <= 0:
        return ""
    kept: list[str] = []
    used = 0
    for char in text:
        size = max(0, wcwidth(char))
        if used + size > width - 1:
            break
        kept.append(char)
        used += size
    return "".join(kept) + "…"


def fit_head(text: str, width: int) -> tuple[str, int]:
    """The start of ``text`` that fits in ``width`` columns (a character at least), and
    the columns it takes."""
    if text.isascii():
        head = text[: max(1, width)]
        return head, len(head)
    used = 0
    for index, char in enumerate(text):
        size = max(0, wcwidth(char))
        if used + size > width and index:
            return text[:index], used
        used += size
    return text, used


def fit_tail(text: str, width: int) -> tuple[str, int]:
    """The end of ``text`` that fits in ``width`` columns, and the columns it takes."""
    kept: list[str] = []
    used = 0
    for char in reversed(text):
        size = max(0, wcwidth(char)) if not char.isascii() else 1
        if used + size > width:
            break
        kept.append(char)
        used += size
    return "".join(reversed(kept)), used


class Screen:
    """The log and the live block, on a text stream.

    ``live`` is False for a terminal that cannot move its cursor (``TERM=dumb``): the
    live block is then never drawn, and the log alone is written.

    Writes are gathered and sent with :meth:`flush`, one ``write`` per update, so the
    terminal never shows a half-drawn block.
    """

    def __init__(
        self,
        out: TextIO,
        width: Callable[[], int],
        height: Callable[[], int],
        *,
        live: bool = True,
    ) -> None:
        self._out = out
        self._width = width
        self._height = height
        self.live = live
        self.column = 0  # where the log ends on its last row; 0: at the start of a row
        self.live_rows = 0  # rows of the live block on the screen now
        self.shown: tuple[str, ...] = ()  # what they show
        self.cursor_in_live = False  # a prompt holds the cursor inside the live block
        self._pending: list[str] = []
        self._last_width = 0
        self._cursor: tuple[int | None, int] = (None, 0)
        # Asking the terminal its size is a system call; answer text, which comes in
        # thousands of small pieces, uses the width last asked for (every redraw asks).
        self._known_width = 0
        self._bare_prompt = 0  # columns of a prompt drawn without cursor controls
        # The log's last lines as written (unwrapped), to paint the window again when
        # its width changes: a terminal that reflows its rows moves them under a live
        # block drawn for the old width, and only a clean window is sure to be true.
        self._tail: deque[str] = deque([""], maxlen=TAIL_LINES)

    @property
    def width(self) -> int:
        """The window's width now (asked of the terminal: the window may have changed)."""
        self._known_width = max(2, self._width())
        return self._known_width

    # The log -------------------------------------------------------------------

    def write_text(self, text: str) -> bool:
        """Add text to the log (an answer streaming in). Newlines end rows.

        Returns True when the live block had to be taken off to make room: it is
        drawn again by the next :meth:`draw_live`. This is the path every piece of
        a streamed answer takes, so it does as little as it can.
        """
        if not text:
            return False
        if "\t" in text:
            text = _expand_tabs(text, self.column)
        width = self._known_width or self.width
        newline = text.rfind("\n")
        if newline < 0:
            column = self.column + (len(text) if text.isascii() else cell_width(text))
            touches = self.column == 0 or column >= width
        else:
            tail = text[newline + 1 :]
            column = len(tail) if tail.isascii() else cell_width(tail)
            touches = True
        hid = False
        if self.cursor_in_live or (touches and self.live_rows):
            self.hide_live()
            hid = True
        if self._pending:
            self._pending.append(text)
        else:
            self._out.write(text)  # nothing waits before it: skip the gathering
        self._remember(text)
        # A row filled exactly to its end counts as ``width``: the terminal waits for
        # the next character before it wraps.
        self.column = column if column <= width else (column - 1) % width + 1
        return hid

    def write_lines(self, lines: Sequence[str]) -> None:
        """Add whole lines to the log, after ending an unfinished last row."""
        if not lines:
            return
        self.hide_live()
        if self.column:
            self._pending.append("\n")
            self._tail.append("")
        text = "\n".join(lines) + "\n"
        self._pending.append(text)
        self._remember(text)
        self.column = 0

    def end_row(self) -> None:
        """Finish the log's last row if text was left on it."""
        if self.column:
            self.hide_live()
            self._pending.append("\n")
            self._tail.append("")
            self.column = 0

    # The live block --------------------------------------------------------------

    def hide_live(self) -> None:
        """Take the live block off the screen; the cursor is at the end of the log."""
        if self._bare_prompt:
            self._pending.append("\r" + " " * self._bare_prompt + "\r")
            self._bare_prompt = 0
        if self.cursor_in_live:
            self._pending.append(RESTORE_CURSOR)
            self.cursor_in_live = False
        if self.live_rows:
            self._pending.append(CLEAR_TO_END_OF_SCREEN)
            self.live_rows = 0
            self.shown = ()

    def draw_live(
        self,
        rows: Sequence[str],
        cursor: int | None = None,
        *,
        size: tuple[int, int] | None = None,
        cursor_up: int = 0,
    ) -> None:
        """Show ``rows`` (already cut to fit) under the log, replacing what was there.

        With ``cursor``, the cursor is left at that column on the last row, or
        ``cursor_up`` rows above it (a prompt of several rows); otherwise it goes back
        to the end of the log. Unchanged rows are not redrawn.
        ``size`` is the window's (width, height) when the caller has just asked for it.
        """
        if not self.live:
            self._draw_bare_prompt(rows[-1] if rows and cursor is not None else None, cursor)
            return
        width, height = size if size is not None else (self.width, self._height())
        if width != self._last_width:
            self._resized(width)
        rows = tuple(rows[-max(1, height - 2) :]) if rows else ()
        if rows and rows == self.shown and (cursor, cursor_up) == self._cursor:
            return
        if not rows:
            self.hide_live()
            return
        if self.cursor_in_live:
            self._pending.append(RESTORE_CURSOR)
            self.cursor_in_live = False
        if self.column >= width:
            # A row filled to its last column waits to wrap; start the next one ourselves
            # so moving the cursor cannot lose that pending wrap.
            self._pending.append("\n")
            self.column = 0
        below = 1 if self.column else 0
        room = below + len(rows) - 1
        parts = [INDEX * room, REVERSE_INDEX * room, SAVE_CURSOR]
        for number, row in enumerate(rows):
            if number or below:
                parts.append("\n")
            parts.append("\r" + row + CLEAR_TO_END_OF_LINE)
        parts.append(CLEAR_TO_END_OF_SCREEN)
        if cursor is None:
            parts.append(RESTORE_CURSOR)
        else:
            up = min(cursor_up, len(rows) - 1)
            parts.append("\r" + (f"\x1b[{up}A" if up > 0 else ""))
            parts.append(f"\x1b[{cursor}C" if cursor > 0 else "")
            self.cursor_in_live = True
        self._pending.append("".join(parts))
        self.live_rows = len(rows)
        self.shown = rows
        self._cursor = (cursor, cursor_up)

    def _draw_bare_prompt(self, row: str | None, cursor: int | None) -> None:
        """A prompt on a terminal without cursor controls: carriage return and backspace."""
        if row is None or cursor is None:
            self.hide_live()
            return
        if self.column:
            self._pending.append("\n")
            self.column = 0
        size = cell_width(row)
        blank = " " * max(0, self._bare_prompt - size)
        self._pending.append("\r" + row + blank + "\b" * (len(blank) + size - cursor))
        self._bare_prompt = max(size, self._bare_prompt)

    def _resized(self, width: int) -> None:
        """The window changed width. A terminal that reflows (tmux, VTE, kitty) has
        rewrapped every row, the live block's too, and moved them; one that does not
        has cut them. Either way the rows under the cursor are no longer the block we
        drew, so the window is cleared and its last rows of log painted again at the new
        width, and the block is drawn fresh under them."""
        if self._last_width:
            self.cursor_in_live = False
            self.live_rows = 0
            self.shown = ()
            self._pending.append(CLEAR_WINDOW + self._repaint(width))
        elif self.column > width:
            self.column = (self.column - 1) % width + 1
        self._last_width = width

    def _remember(self, text: str) -> None:
        rows = text.split("\n")
        tail = self._tail
        tail[-1] += rows[0]
        tail.extend(rows[1:])

    def _repaint(self, width: int) -> str:
        """The end of the log that fits in the window above a block of a few rows."""
        room = max(1, self._height() - LIVE_ROOM)
        kept: list[str] = []
        used = 0
        last = self._tail[-1]
        for line in reversed(list(self._tail)[:-1]):
            rows = max(1, -(-cell_width(_SGR.sub("", line)) // width))
            if used + rows > room:
                break
            kept.append(line)
            used += rows
        text = "".join(line + "\n" for line in reversed(kept)) + last
        self.column = cell_width(_SGR.sub("", last)) if last else 0
        if self.column > width:
            self.column = (self.column - 1) % width + 1
        return text

    # Output ------------------------------------------------------------------------

    def write_raw(self, control: str) -> None:
        """A control that changes no row (show or hide the cursor); none without controls."""
        if self.live:
            self._pending.append(control)

    def flush(self) -> None:
        pending = self._pending
        if pending:
            self._out.write(pending[0] if len(pending) == 1 else "".join(pending))
            pending.clear()
        self._out.flush()


def _expand_tabs(text: str, column: int) -> str:
    rows = text.split("\n")
    first = ("x" * column + rows[0]).expandtabs(TAB_STOP)[column:]
    return "\n".join([first, *(row.expandtabs(TAB_STOP) for row in rows[1:])])
