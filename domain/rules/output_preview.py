"""What a command printed, as a person is shown it: its last lines while it runs, and
a preview of its head and tail once it has ended.

:class:`OutputWatch` is fed the output as it arrives, chunk by chunk, and keeps only
what the screen can show: the first lines, the last ones, and a count of them all, so
it costs the same for a megabyte as for a line. Every line it gives is made printable
(escape sequences and control characters gone, as in a model's text), keeps what a
terminal would show of it after a carriage return (a progress bar's last state), has
its tabs made spaces, and is cut to :data:`LINE_CHARS`.

Example::

    >>> watch = OutputWatch()
    >>> watch.feed(b"".join(b"line %d\\n" % n for n in range(1, 21)))
    >>> watch.live_lines()
    ('line 16', 'line 17', 'line 18', 'line 19', 'line 20')
    >>> watch.preview().split("\\n")[4:7]
    ['line 5', '… 10 more lines', 'line 16']
"""

from __future__ import annotations

from treadle.domain.values.text import printable

LIVE_LINES = 5
"""Lines of a running command shown under its line, newest at the bottom."""
PREVIEW_HEAD = 5
PREVIEW_TAIL = 5
"""Lines of a finished command's output kept on the screen: its head and its tail."""
LINE_CHARS = 400
"""A line longer than this is cut (the screen cuts it again to its width)."""
KEPT_BYTES = 64 * 1024
"""The most of a stream's end (and of its start) kept to find its lines: a line longer
than that shows only its part within it."""
TAB_STOP = 8


def screen_line(raw: str, width: int = LINE_CHARS) -> str:
    """One line of output as the screen shows it.

    >>> screen_line("\\x1b[31mred\\x1b[0m\\tok"), screen_line("10%\\r50%\\r\\n")
    ('red     ok', '50%')
    """
    raw = raw.removesuffix("\n").removesuffix("\r")
    if "\r" in raw:
        raw = raw.rsplit("\r", 1)[-1]
    line = printable(raw).expandtabs(TAB_STOP)
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def more_lines(count: int) -> str:
    """The line that stands for the lines a preview leaves out."""
    return f"… {count:,} more line{'' if count == 1 else 's'}"


def preview_lines(
    head: list[str],
    tail: list[str],
    total: int,
    head_size: int = PREVIEW_HEAD,
    tail_size: int = PREVIEW_TAIL,
) -> list[str]:
    """The preview of ``total`` lines whose first are ``head`` and last are ``tail``:
    all of them when they are few (no marker stands for a single line), else
    ``head_size`` of the head, a line saying how many are left out, and ``tail_size``
    of the tail.

    >>> preview_lines(["a", "b"], ["b"], 2)
    ['a', 'b']
    >>> preview_lines(["1", "2"], ["8", "9", "10"], 10, head_size=2, tail_size=2)
    ['1', '2', '… 6 more lines', '9', '10']
    """
    head = head[: min(head_size, total)]
    first_of_tail = total - len(tail) + 1  # the tail's lines are the stream's last
    rest = [line for number, line in enumerate(tail, first_of_tail) if number > len(head)]
    if len(head) + len(rest) == total and len(rest) <= tail_size + 1:
        return head + rest
    rest = rest[-tail_size:] if tail_size else []
    return [*head, more_lines(total - len(head) - len(rest)), *rest]


class OutputWatch:
    """The first and last lines of a stream, and how many lines it had.

    A line is what ends with a newline, and the unfinished end of the stream (a prompt
    without one, a progress bar) is its last line.
    """

    __slots__ = ("_head", "_head_done", "_newlines", "_tail", "_tail_lines", "total_bytes")

    def __init__(self, tail_lines: int = max(LIVE_LINES, PREVIEW_TAIL + 1)) -> None:
        self._head = bytearray()
        self._head_done = False
        self._tail = bytearray()
        self._tail_lines = tail_lines
        self._newlines = 0
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        """The next piece of the output, as it was read."""
        if not chunk:
            return
        self.total_bytes += len(chunk)
        self._newlines += chunk.count(b"\n")
        if not self._head_done:
            self._head += chunk[: KEPT_BYTES - len(self._head)]
            self._head_done = (
                len(self._head) >= KEPT_BYTES or self._head.count(b"\n") >= PREVIEW_HEAD + 1
            )
        tail = self._tail
        if len(chunk) >= KEPT_BYTES:
            tail[:] = chunk[-KEPT_BYTES:]
        else:
            tail += chunk
        # Only the last lines are kept: cut before the newline that begins them.
        end = len(tail)
        if tail.endswith(b"\n"):
            end -= 1
        for _ in range(self._tail_lines):
            end = tail.rfind(b"\n", 0, end)
            if end < 0:
                break
        if end >= 0:
            del tail[: end + 1]
        elif len(tail) > KEPT_BYTES:
            del tail[: len(tail) - KEPT_BYTES]

    @property
    def line_count(self) -> int:
        """Lines so far: those ended by a newline, and an unfinished last one."""
        unfinished = 1 if self._tail and not self._tail.endswith(b"\n") else 0
        return self._newlines + unfinished

    def live_lines(self, count: int = LIVE_LINES) -> tuple[str, ...]:
        """The last ``count`` lines, for the screen, oldest first."""
        return tuple(_lines(self._tail)[-count:]) if count > 0 else ()

    def preview(self) -> str:
        """Head and tail of the whole output, lines joined by newlines ("" for none)."""
        total = self.line_count
        if not total:
            return ""
        head = _lines(self._head)[:PREVIEW_HEAD]
        tail = _lines(self._tail)[-(PREVIEW_TAIL + 1) :]
        return "\n".join(preview_lines(head, tail, total))


def _lines(data: bytes | bytearray) -> list[str]:
    """``data``'s lines for the screen (a trailing newline ends the last, adds none)."""
    if not data:
        return []
    text = bytes(data).decode("utf-8", errors="replace")
    return [screen_line(raw) for raw in text.removesuffix("\n").split("\n")]
