"""One attempt: open a new connection, send the request, read the event stream, hand
each event to the protocol's reader, and turn every failure into a value.

The readers (:mod:`openai_chat_reader`, :mod:`anthropic_reader`) are pure state
machines, so everything that is about a wire format is tested without sockets; this
module is the only place where bytes meet them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, cast

import httpx
from returns.result import Failure, Result, Success

from treadle.adapters.http_model.body import BodyTooLarge, BoundedBody, UnknownEncoding
from treadle.adapters.http_model.sse import EventTooLong, SseEvent, SseParser
from treadle.adapters.http_model.transport import (
    Connection,
    StreamLimits,
    redact_error,
    status_failure,
    transport_failure,
)
from treadle.domain.values.model import (
    MalformedStream,
    ModelError,
    ReasoningText,
    StreamEvent,
    TextDelta,
    TransportError,
    UsageReported,
)

StreamItem = Result[StreamEvent, ModelError]


class EventReader(Protocol):
    """Turns one protocol's events into stream items; knows when the answer is over.

    ``ended`` turns true with the ``read`` whose last item is the ``StreamEnd`` or the
    ``Failure`` that ends the stream; no event is read after that.
    """

    ended: bool
    buffered: int
    """Characters of the answer taken in but not yet made an item (a call's arguments
    are one item, at their end): the stream is not idle while this grows."""

    def read(self, event: SseEvent) -> list[StreamItem]:
        """The items this event completes."""
        ...

    def end_of_body(self) -> list[StreamItem]:
        """The body ended cleanly before the protocol's final event: the end it still
        makes, or the cut stream it is (a ``TransportError``, retried like a lost
        connection while no answer text was shown)."""
        ...


@dataclass(frozen=True, slots=True)
class Post:
    """What a protocol sends for one request: the path under the base URL, its own
    headers (the key's among them), the body's bytes, and the reader of its stream.
    Each protocol makes one per request (``HttpModel.protocol``); the reader is new
    each time, the rest is plain data."""

    path: str
    headers: Mapping[str, str]
    body: bytes
    reader: EventReader


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt, whole: the URL, every header, the body and the reader. ``secret``
    is the key, kept to redact it from messages; ``key_env`` names where it is set."""

    url: str
    headers: Mapping[str, str]
    body: bytes
    reader: EventReader
    secret: str | None
    key_env: str


def open_client(connection: Connection, url: httpx.URL) -> httpx.AsyncClient:
    """A client of its own for one attempt, so the attempt opens a new TCP connection.

    A pooled connection could be the very one that just failed; the seed asks for a
    fresh one every time. No keep-alive either, so nothing outlives the attempt.
    """
    timeout = httpx.Timeout(connection.read_timeout, connect=connection.connect_timeout)
    if connection.transport is not None:
        return httpx.AsyncClient(
            transport=_BorrowedTransport(connection.transport), timeout=timeout
        )
    return httpx.AsyncClient(
        timeout=timeout,
        verify=ssl_context_for(url),
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def ssl_context_for(url: httpx.URL) -> ssl.SSLContext:
    """The TLS settings for ``url``: the CA bundle for https://, none needed for http://."""
    return _tls_context() if url.scheme == "https" else _plain_context()


@functools.cache
def _tls_context() -> ssl.SSLContext:
    # Loading the CA bundle takes milliseconds; share the context, never the connection.
    return httpx.create_ssl_context()


@functools.cache
def _plain_context() -> ssl.SSLContext:
    """For a server at http://, which never needs TLS: loading the CA bundle there
    would cost a fifth of a local session's start. It still verifies, against no
    authority at all, so it could never accept a certificate."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class _BorrowedTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Left to the lender: closing it here would break its next attempt."""


async def failing(error: ModelError) -> AsyncIterator[StreamItem]:
    """A stream that fails at once, before anything is sent."""
    yield Failure(error)


async def exchange(attempt: Attempt, connection: Connection) -> AsyncIterator[StreamItem]:
    """The items of one attempt, ending with a ``StreamEnd`` or one ``Failure``.

    Closing the generator early (the caller stopped, or was cancelled) closes the
    response and the client, and with them the connection.
    """
    url = httpx.URL(attempt.url)
    where = f"{url.host}:{url.port}" if url.port else url.host
    async with contextlib.AsyncExitStack() as hang_up:
        sent = await _send(attempt, connection, url, where, hang_up)
        if isinstance(sent, Failure):
            yield sent
            return
        answer = _answer(attempt, connection, sent.unwrap(), where, hang_up)
        async with contextlib.aclosing(answer):  # closed first when the caller stops
            async for item in answer:
                yield item


async def _send(
    attempt: Attempt,
    connection: Connection,
    url: httpx.URL,
    where: str,
    hang_up: contextlib.AsyncExitStack,
) -> Result[httpx.Response, ModelError]:
    """The POST on a new connection, and its answer if it is a stream of events."""
    client = open_client(connection, url)
    hang_up.push_async_callback(_quietly, client.aclose)
    try:
        response = await client.send(
            client.build_request("POST", url, headers=attempt.headers, content=attempt.body),
            stream=True,
        )
    except httpx.HTTPError as exc:
        return Failure(transport_failure(exc, connection, where, attempt.secret))
    hang_up.push_async_callback(_quietly, response.aclose)
    if not response.is_success:
        return Failure(
            await status_failure(response, secret=attempt.secret, key_env=attempt.key_env)
        )
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        # A whole JSON answer where a stream was asked for: the server ignored
        # "stream": true, and reading it as events would only say "malformed".
        return Failure(
            MalformedStream(
                f"{where} answered with one JSON document, not an event stream: "
                "the server does not stream this endpoint"
            )
        )
    return Success(response)


async def _answer(
    attempt: Attempt,
    connection: Connection,
    response: httpx.Response,
    where: str,
    hang_up: contextlib.AsyncExitStack,
) -> AsyncGenerator[StreamItem, None]:
    """The stream's items, read as they come, each chunk within the read timeout."""
    limits, reader = connection.limits, attempt.reader
    # A body a lent transport gave whole is already read, and decoded by httpx.
    whole = response.is_stream_consumed
    encoding = "" if whole else response.headers.get("content-encoding", "")
    try:
        body = BoundedBody(encoding, limits.answer_bytes)
    except UnknownEncoding:
        yield Failure(MalformedStream(f"{where} sent a body encoded as {encoding!r}"))
        return
    chunks = cast(
        AsyncGenerator[bytes, None], _once(response.content) if whole else response.aiter_raw()
    )
    hang_up.push_async_callback(_quietly, chunks.aclose)
    parser = SseParser(max_event=limits.event_bytes)
    loop = asyncio.get_running_loop()
    # Idle means nothing of the answer: keep-alive comments, pings and empty chunks
    # do not keep a silent server's answer open past the read timeout.
    idle_until = loop.time() + connection.read_timeout
    while not reader.ended:
        try:
            async with asyncio.timeout_at(idle_until):
                chunk = await anext(chunks)
            events = [event for piece in body.feed(chunk) for event in parser.feed(piece)]
        except StopAsyncIteration:
            break
        except (TimeoutError, httpx.HTTPError, BodyTooLarge, EventTooLong, UnknownEncoding) as e:
            # After the items already yielded: the caller knows what was shown.
            yield Failure(_broken(e, connection, where, attempt.secret))
            return
        taken = reader.buffered
        items = _read(reader, events, attempt.secret)
        if reader.buffered != taken or any(_is_answer(item) for item in items):
            idle_until = loop.time() + connection.read_timeout
        for item in items:
            yield item
    if not reader.ended:
        for item in _at_end_of_body(reader, parser, response, whole, where, attempt.secret):
            yield item


def _broken(
    problem: Exception, connection: Connection, where: str, secret: str | None
) -> ModelError:
    """What a failure while the answer streamed means: a silence past the read timeout,
    a broken connection, or a body past its limits."""
    match problem:
        case TimeoutError():
            silence = f"nothing of the answer from {where} for {connection.read_timeout:g} s"
            return TransportError("timeout", silence)
        case httpx.HTTPError():
            return transport_failure(problem, connection, where, secret)
        case BodyTooLarge() | EventTooLong() | UnknownEncoding():
            return _past_limit(problem, where, connection.limits)
    raise TypeError(problem)  # pragma: no cover - only the exceptions caught above


def _at_end_of_body(
    reader: EventReader,
    parser: SseParser,
    response: httpx.Response,
    whole: bool,
    where: str,
    secret: str | None,
) -> list[StreamItem]:
    """The body ended before the protocol's last event: what the parser still held,
    then the end the reader makes of it, or a cut connection."""
    items = _read(reader, parser.finish(), secret)
    if reader.ended:
        return items
    ending = reader.end_of_body()
    if not whole and _closed_early(response, ending):
        # A body that ends when the connection does: the peer hung up before the
        # answer's end, as a reset would have (retried).
        ending = [
            Failure(
                TransportError(
                    "connection_closed",
                    f"{where} closed the connection before the answer ended",
                )
            )
        ]
    return [*items, *ending]


def _closed_early(response: httpx.Response, ending: list[StreamItem]) -> bool:
    """Whether a body that stopped short was cut by the connection's close: no length,
    no chunks, so its end is the connection's (a chunked body cut short is an error
    httpx reports itself)."""
    headers = response.headers
    delimited = (
        "content-length" in headers or "chunked" in headers.get("transfer-encoding", "").lower()
    )
    return not delimited and any(isinstance(item, Failure) for item in ending)


def _is_answer(item: StreamItem) -> bool:
    """Whether an item is part of the answer, not only of its bookkeeping."""
    match item:
        case Success(UsageReported()):
            return False
        case Success(TextDelta(text=text)) | Success(ReasoningText(text=text)):
            return bool(text)
    return True


async def _once(content: bytes) -> AsyncIterator[bytes]:
    yield content


def _past_limit(
    problem: BodyTooLarge | EventTooLong | UnknownEncoding, where: str, limits: StreamLimits
) -> MalformedStream:
    match problem:
        case BodyTooLarge():
            return MalformedStream(
                f"{where} sent more than {_mib(limits.answer_bytes)} for one answer "
                "(the limit is answer_limit)"
            )
        case EventTooLong():
            return MalformedStream(
                f"{where} sent an event longer than {_mib(limits.event_bytes)} "
                "(the limit is event_limit)"
            )
        case UnknownEncoding():
            return MalformedStream(f"{where} sent {problem}")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


async def _quietly(close: Callable[[], Awaitable[None]]) -> None:
    # A failure while hanging up changes nothing for the answer already read.
    with contextlib.suppress(httpx.HTTPError):
        await close()


def _read(reader: EventReader, events: list[SseEvent], secret: str | None) -> list[StreamItem]:
    """The items of ``events``, up to and including the one that ends the stream."""
    items: list[StreamItem] = []
    for event in events:
        items += reader.read(event)
        if reader.ended:
            last = items[-1]
            if isinstance(last, Failure):
                # An error event quotes the server, and the server may quote the key.
                items[-1] = Failure(redact_error(last.failure(), secret))
            break
    return items
