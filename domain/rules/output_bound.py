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
        "_cached_cuts",
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
        self._cached_cuts: tuple[int, int, int, int] | None = None

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
        """Whether the text leaves anything out: bytes dropped while reading, or bytes
        that did not fit the limit once decoded (a bad byte becomes a three-byte U+FFFD)."""
        return self.kept < self._total

    @property
    def kept(self) -> int:
        head_end, tail_start = self._cuts()
        return head_end + len(self._tail) - tail_start

    @property
    def omitted(self) -> int:
        return self._total - self.kept

    @property
    def omitted_lines(self) -> int:
        """Newlines among the omitted bytes."""
        head_end, tail_start = self._cuts()
        return (
            self._dropped_lines
            + self._head.count(b"\n", head_end)
            + self._tail.count(b"\n", 0, tail_start)
        )

    def feed(self, chunk: bytes) -> None:
        """Take the next piece of output; only what the bound keeps is stored."""
        self._cached_cuts = None
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

    def shown(self) -> tuple[bytes, bytes]:
        """The raw bytes the text shows: its head, and its tail after the marker."""
        head_end, tail_start = self._cuts()
        return bytes(self._head[:head_end]), bytes(self._tail[tail_start:])

    def text(self, note: str = "") -> str:
        """Head and tail decoded, with a marker line between them when something was cut.

        ``note`` is added inside the marker, e.g. where the full output was saved.
        """
        head_end, tail_start = self._cuts()
        if head_end + len(self._tail) - tail_start == self._total:
            return self.content().decode("utf-8", errors="replace")
        head_text = self._head[:head_end].decode("utf-8", errors="replace")
        tail_text = self._tail[tail_start:].decode("utf-8", errors="replace")
        separator = "" if not head_text or head_text.endswith("\n") else "\n"
        return f"{head_text}{separator}{self.marker(note)}\n{tail_text}"

    def marker(self, note: str = "") -> str:
        """The line that stands for what was left out."""
        lines = self.omitted_lines
        what = f"{self.omitted:,} bytes ({lines:,} line{'' if lines == 1 else 's'}) omitted"
        return f"[... {what}{'; ' + note if note else ''} ...]"

    def _drop_count(self, size: int, newlines: int) -> None:
        self._dropped += size
        self._dropped_lines += newlines

    def _cuts(self) -> tuple[int, int]:
        """Where the kept head ends and the kept tail starts.

        What is kept must fit the limit once decoded: bytes that are not UTF-8 each
        become a three-byte U+FFFD, so such output keeps fewer of its bytes.
        """
        cached = self._cached_cuts
        if cached is not None and cached[:2] == (self._total, len(self._tail)):
            return cached[2], cached[3]
        if self._dropped == 0 and _decoded_size(self.content()) <= self._limit:
            cuts = len(self._head), 0
        else:
            # A cut in the middle of a UTF-8 sequence would show as a replacement
            # character that was never in the output; the cuts are on boundaries.
            cuts = (
                _fitting_head(self._head, self._head_limit),
                _fitting_tail(self._tail, self._tail_limit),
            )
        self._cached_cuts = (self._total, len(self._tail), *cuts)
        return cuts


def _decoded_size(data: bytes | bytearray) -> int:
    """Bytes of ``data`` once decoded (bad bytes replaced) and encoded again."""
    return len(data.decode("utf-8", errors="replace").encode("utf-8"))


def _fitting_head(data: bytearray, budget: int) -> int:
    """The longest prefix of ``data``, ending on a boundary, that fits ``budget`` decoded."""
    end = _complete_prefix(data)
    if 3 * end <= budget or _decoded_size(data[:end]) <= budget:
        return end
    low, high = 0, end  # the answer lies in [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        if _decoded_size(data[:middle]) <= budget:
            low = middle
        else:
            high = middle
    return _complete_prefix(data[:low])


def _fitting_tail(data: bytearray, budget: int) -> int:
    """Where the shortest suffix of ``data`` that fits ``budget`` decoded begins."""
    start = _first_boundary(data)
    if 3 * (len(data) - start) <= budget or _decoded_size(data[start:]) <= budget:
        return start
    low, high = start, len(data)  # the answer lies in (low, high]
    while high - low > 1:
        middle = (low + high) // 2
        if _decoded_size(data[middle:]) <= budget:
            high = middle
        else:
            low = middle
    return high + _first_boundary(data[high:])


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
