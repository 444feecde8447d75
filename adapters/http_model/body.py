"""A response body read with bounds: what a hostile server sends cannot exhaust memory.

treadle asks for an uncompressed stream (``accept-encoding: identity``); a server that
compresses anyway is decoded here, piece by piece, so that a small gzip body that
expands to gigabytes is stopped at the limit instead of being inflated whole. Every
byte after decoding counts against the answer's limit.

Example::

    >>> body = BoundedBody("gzip", limit=1 << 20)
    >>> b"".join(body.feed(gzip.compress(b"data: {}\\n\\n")))
    b'data: {}\\n\\n'
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

PIECE = 1 << 20
"""The most a compressed chunk may expand to at once."""
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class BodyTooLarge(Exception):
    """The body went past its limit (a decoded byte count)."""


class UnknownEncoding(Exception):
    """The server compressed the body in a way treadle does not read."""


class BoundedBody:
    """The decoded bytes of a body, fed its raw chunks, at most ``limit`` of them."""

    def __init__(self, content_encoding: str, limit: int) -> None:
        encoding = content_encoding.strip().lower()
        self.limit = limit
        self.received = 0
        self._zlib = None
        if encoding in _WBITS:
            self._zlib = zlib.decompressobj(_WBITS[encoding])
        elif encoding not in ("", "identity"):
            raise UnknownEncoding(encoding)

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``chunk``; raises :class:`BodyTooLarge` past the limit."""
        if self._zlib is None:
            yield self._counted(chunk)
            return
        data = chunk
        while data:
            try:
                piece = self._zlib.decompress(data, PIECE)
            except zlib.error as error:
                raise UnknownEncoding(f"a broken compressed body ({error})") from None
            data = self._zlib.unconsumed_tail
            if piece:
                yield self._counted(piece)

    def _counted(self, piece: bytes) -> bytes:
        self.received += len(piece)
        if self.received > self.limit:
            raise BodyTooLarge(self.received)
        return piece
