"""A tiny VT100 screen for tests: what a terminal would show after some output.

It knows exactly the controls the blessed terminal adapter writes (save and restore
the cursor, index, reverse index, erase line and screen, cursor right and column,
show and hide cursor, backspace) and ignores colours. ``"\\n"`` moves to the start of the next
row, as a terminal's ONLCR output mode makes it. Every character is one column wide.
"""

from __future__ import annotations

import re

_CSI = re.compile(r"\x1b\[([0-9;?]*)([@-~])")


class VirtualScreen:
    def __init__(self, width: int = 60, height: int = 20) -> None:
        self.width = width
        self.height = height
        self.rows = [[" "] * width for _ in range(height)]
        self.scrollback: list[str] = []
        self.x = 0
        self.y = 0
        self.pending_wrap = False
        self.saved = (0, 0, False)
        self.cursor_visible = True

    def feed(self, data: str) -> VirtualScreen:
        i = 0
        while i < len(data):
            char = data[i]
            if char == "\x1b":
                i = self._escape(data, i)
                continue
            if char == "\n":
                self.x = 0
                self.pending_wrap = False
                self._index()
            elif char == "\r":
                self.x = 0
                self.pending_wrap = False
            elif char == "\b":
                self.x = max(0, self.x - 1)
                self.pending_wrap = False
            elif char >= " ":
                self._put(char)
            i += 1
        return self

    def _escape(self, data: str, i: int) -> int:
        follower = data[i + 1]
        if follower == "[":
            match = _CSI.match(data, i)
            assert match, f"unknown control at {data[i : i + 12]!r}"
            self._csi(match.group(1), match.group(2))
            return match.end()
        if follower == "7":
            self.saved = (self.x, self.y, self.pending_wrap)
        elif follower == "8":
            self.x, self.y, self.pending_wrap = self.saved
        elif follower == "D":
            self._index()
        elif follower == "M":
            self._reverse_index()
        else:
            raise AssertionError(f"unknown escape {data[i : i + 4]!r}")
        return i + 2

    def _csi(self, params: str, final: str) -> None:
        number = int(params) if params.isdigit() else 0
        if final == "m" or params.startswith("?"):
            if params == "?25":
                self.cursor_visible = final == "h"
            return
        if final == "K":
            self.rows[self.y][self.x :] = [" "] * (self.width - self.x)
        elif final == "J" and params == "2":
            self.rows = [[" "] * self.width for _ in range(self.height)]
        elif final == "J":
            self.rows[self.y][self.x :] = [" "] * (self.width - self.x)
            for row in range(self.y + 1, self.height):
                self.rows[row] = [" "] * self.width
        elif final == "H":
            top, _, left = params.partition(";")
            self.y = min(self.height - 1, max(1, int(top or 1)) - 1)
            self.x = min(self.width - 1, max(1, int(left or 1)) - 1)
        elif final == "C":
            self.x = min(self.width - 1, self.x + max(1, number))
        elif final == "A":
            self.y = max(0, self.y - max(1, number))
        elif final == "G":
            self.x = min(self.width - 1, max(1, number) - 1)
        else:
            raise AssertionError(f"unknown CSI {params}{final}")
        self.pending_wrap = False

    def _put(self, char: str) -> None:
        if self.pending_wrap:
            self.x = 0
            self._index()
            self.pending_wrap = False
        self.rows[self.y][self.x] = char
        if self.x == self.width - 1:
            self.pending_wrap = True
        else:
            self.x += 1

    def _index(self) -> None:
        if self.y == self.height - 1:
            self.scrollback.append("".join(self.rows.pop(0)).rstrip())
            self.rows.append([" "] * self.width)
        else:
            self.y += 1

    def _reverse_index(self) -> None:
        if self.y == 0:
            self.rows.insert(0, [" "] * self.width)
            self.rows.pop()
        else:
            self.y -= 1

    @property
    def lines(self) -> list[str]:
        """Every row ever shown (scrollback, then the screen), without trailing blank rows."""
        rows = self.scrollback + ["".join(row).rstrip() for row in self.rows]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    @property
    def cursor_row(self) -> str:
        return "".join(self.rows[self.y]).rstrip()
