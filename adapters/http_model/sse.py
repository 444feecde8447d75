"""Server-Sent Events framing: bytes in, ``(event, data)`` pairs out, with no I/O.

Follows the WHATWG event-stream rules (lines end in LF, CRLF or CR; a blank line
dispatches; ``:`` starts a comment; one space after the colon is dropped), with one
chosen difference: at the end of the body, a pending event that was never followed by
a blank line is dispatched too (``flush_at_eof=True``, the default). A body that ends
cleanly is the server's own end, and several public recordings end that way (see
``tests/fixtures/streams/SOURCES.md``); its JSON is still checked like any other event,
so a half-written last event fails there instead of passing silently.

Example::

    >>> parser = SseParser()
    >>> parser.feed(b"event: ping\\ndata: {}\\n\\ndata: [DO")
    [SseEvent(name='ping', data='{}')]
    >>> parser.feed(b"NE]")
    []
    >>> parser.finish()
    [SseEvent(name='', data='[DONE]')]

Bytes are decoded only once their event is whole, so a UTF-8 character split across
two network chunks is never cut, and a body of many small events costs one decode and
one split per chunk plus a test or two per event.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

_BOM = b"\xef\xbb\xbf"


class SseEvent(NamedTuple):
    """One dispatched event: its ``event:`` name (``""`` when absent) and joined data.

    A named tuple rather than a dataclass: a stream makes one per event, and a tuple
    is the cheapest value Python builds.
    """

    name: str
    data: str


class EventTooLong(Exception):
    """One event (or one unterminated line) went past the parser's ``max_event`` bytes."""


class SseParser:
    """Incremental event-stream parser. ``id:`` and ``retry:`` are read past: every
    attempt is a new request, so there is nothing to resume with them.

    Bytes wait until the blank line that ends their event has arrived; then whole
    events are cut out with one ``split`` and read with a fast path for the two shapes
    model servers send (``data: …`` and ``event: …`` + ``data: …``), falling back to
    the general line rules for anything else.
    """

    def __init__(self, *, flush_at_eof: bool = True, max_event: int | None = None) -> None:
        self.flush_at_eof = flush_at_eof
        self.max_event = max_event
        # Bytes of events not yet complete, kept as pieces: a long event arriving in
        # many chunks is joined once, when its blank line comes, not once per chunk.
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._cr_pending = False
        self._started = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events completed by ``chunk``."""
        if not self._started:
            if not chunk:
                return []
            self._started = True
            chunk = chunk.removeprefix(_BOM)
        if self._cr_pending:
            chunk = b"\r" + chunk
            self._cr_pending = False
        # A CR at the end may be the first half of a CRLF: wait for the next chunk.
        if chunk.endswith(b"\r"):
            self._cr_pending = True
            chunk = chunk[:-1]
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not chunk:
            return []
        ends_event = b"\n\n" in chunk or (
            chunk.startswith(b"\n") and bool(self._pending) and self._pending[-1].endswith(b"\n")
        )
        self._pending.append(chunk)
        self._pending_size += len(chunk)
        if not ends_event:
            self._bounded()
            return []
        buffered = b"".join(self._pending)
        end = buffered.rfind(b"\n\n")
        rest = buffered[end + 2 :]
        self._pending = [rest] if rest else []
        self._pending_size = len(rest)
        self._bounded()
        return self._events(buffered[:end])

    def _bounded(self) -> None:
        """An event (or a line) still growing past ``max_event`` is never kept whole."""
        if self.max_event is not None and self._pending_size > self.max_event:
            raise EventTooLong(self._pending_size)

    def finish(self) -> list[SseEvent]:
        """The end of the body: what is still pending, if ``flush_at_eof`` says so."""
        buffered = b"".join(self._pending) + (b"\n" if self._cr_pending else b"")
        self._pending = []
        self._pending_size = 0
        self._cr_pending = False
        if not self.flush_at_eof:
            return []
        return self._events(buffered.rstrip(b"\n"))

    def _events(self, region: bytes) -> list[SseEvent]:
        """The events of ``region``, which ends where an event ended.

        The hot path of every stream: one decode and one split for the whole region
        (it ends at a blank line, so no character is cut), a test or two per event,
        and the events built in one pass at the end.
        """
        pairs: list[tuple[str, str]] = []
        for block in region.decode("utf-8", "replace").split("\n\n"):
            if block.startswith("data: ") and "\n" not in block:
                pairs.append(("", block[6:]))
                continue
            head, _, data = block.partition("\n")
            if head.startswith("event: ") and data.startswith("data: ") and "\n" not in data:
                pairs.append((head[7:], data[6:]))
                continue
            pair = _event_by_lines(block)
            if pair is not None:
                pairs.append(pair)
        return list(map(_as_event, pairs))


_as_event = functools.partial(tuple.__new__, SseEvent)


def _event_by_lines(block: str) -> tuple[str, str] | None:
    """One event read by the general line rules; None if it holds no data."""
    name, data = "", list[str]()
    for line in block.split("\n"):
        if not line:
            # Blocks are cut at blank lines, so a blank line here comes before the
            # event's first field: it ends an event with nothing in it.
            name, data = "", []
        elif line[0] != ":":  # ":" starts a comment, used by servers as a keep-alive
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "event":
                name = value
    return (name, "\n".join(data)) if data else None
