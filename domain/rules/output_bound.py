"""Bounding what a program prints: keep the head and the tail, count what falls between.

The bound is fed incrementally, so memory stays flat however much is printed; the
text the model gets names how much was left out.

Example::

    >>> bound = OutputBound(limit=8)
    >>> bound.feed(b"0123456789\\n" * 3)
    >>> bound.omitted, bound.truncated
    (25, True)
    >>> bound.text()
    '0123\\n[... 25 bytes (2 lines) omitted ...]\\n789\\n'
"""

from __future__ import annotations

_CONTINUATION_MASK = 0xC0
_CONTINUATION = 0x80


class OutputBound:
    """The first ``limit // 2`` and the last ``limit - limit // 2`` bytes of a stream.

    ``total`` counts every byte fed; ``kept`` the bytes the text shows; ``omitted``
    the rest. Until the stream grows past ``limit`` nothing is dropped and ``text()``
    is the decoded stream (invalid UTF-8 replaced).
    """

    __slots__ = (
        "_dropped",
        "_dropped_lines",
        "_head",
        "_head_limit",
        "_limit",
        "_tail",
        "_tail_limit",
        "_total",
    )

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError("output bound: limit cannot be negative")
        self._limit = limit
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self._dropped = 0
        self._dropped_lines = 0

    @classmethod
    def of(cls, data: bytes, limit: int) -> OutputBound:
        """The bound of a whole output at once (for fakes and finished programs)."""
        bound = cls(limit)
        bound.feed(data)
        return bound

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def total(self) -> int:
        return self._total

    @property
    def truncated(self) -> bool:
        return self._dropped > 0

    @property
    def kept(self) -> int:
        head_end, tail_start = self._cuts()
        return head_end + len(self._tail) - tail_start

    @property
    def omitted(self) -> int:
        return self._total - self.kept

    @property
    def omitted_lines(self) -> int:
        """Newlines among the omitted bytes.

        The few bytes moved out by UTF-8 alignment are never newlines, so this is exact.
        """
        return self._dropped_lines

    def feed(self, chunk: bytes) -> None:
        """Take the next piece of output; only what the bound keeps is stored."""
        size = len(chunk)
        self._total += size
        start = min(size, max(0, self._head_limit - len(self._head)))
        if start:
            self._head += chunk[:start]
        if start == size:
            return
        if size - start > self._tail_limit:
            # The chunk alone outgrows the tail: all the tail held goes, and so
            # does the front of the chunk, counted in place rather than copied.
            cut = size - self._tail_limit
            self._drop_count(len(self._tail), self._tail.count(b"\n"))
            self._drop_count(cut - start, chunk.count(b"\n", start, cut))
            self._tail = bytearray(chunk[cut:])
            return
        self._tail += chunk[start:] if start else chunk
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            self._drop_count(excess, self._tail.count(b"\n", 0, excess))
            del self._tail[:excess]

    def content(self) -> bytes:
        """The raw bytes kept; the whole stream while nothing has been dropped."""
        return bytes(self._head) + bytes(self._tail)

    def text(self, note: str = "") -> str:
        """Head and tail decoded, with a marker line between them when something was cut.

        ``note`` is added inside the marker, e.g. where the full output was saved.
        """
        if not self.truncated:
            return self.content().decode("utf-8", errors="replace")
        head_end, tail_start = self._cuts()
        head_text = self._head[:head_end].decode("utf-8", errors="replace")
        tail_text = self._tail[tail_start:].decode("utf-8", errors="replace")
        separator = "" if not head_text or head_text.endswith("\n") else "\n"
        return f"{head_text}{separator}{self.marker(note)}\n{tail_text}"

    def marker(self, note: str = "") -> str:
        """The line that stands for what was left out."""
        lines = self._dropped_lines
        what = f"{self.omitted:,} bytes ({lines:,} line{'' if lines == 1 else 's'}) omitted"
        return f"[... {what}{'; ' + note if note else ''} ...]"

    def _drop_count(self, size: int, newlines: int) -> None:
        self._dropped += size
        self._dropped_lines += newlines

    def _cuts(self) -> tuple[int, int]:
        """Where the kept head ends and the kept tail starts."""
        if not self.truncated:
            return len(self._head), 0
        # A cut in the middle of a UTF-8 sequence would show as a replacement
        # character that was never in the output; move the cut to a boundary.
        return _complete_prefix(self._head), _first_boundary(self._tail)


def _complete_prefix(data: bytearray) -> int:
    """Length of ``data`` without a trailing, incomplete UTF-8 sequence."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & _CONTINUATION_MASK != _CONTINUATION:
            needed = _sequence_length(byte)
            return len(data) - back if needed > back else len(data)
    return len(data)


def _first_boundary(data: bytearray) -> int:
    """Index of the first byte that does not continue a sequence begun before ``data``."""
    for index in range(min(3, len(data))):
        if data[index] & _CONTINUATION_MASK != _CONTINUATION:
            return index
    return min(3, len(data))


def _sequence_length(lead: int) -> int:
    if lead < 0xC0:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4
