"""One HTTP attempt, and the model at a server that makes them: a key, and one new
connection per attempt. A protocol says only what it posts (a :class:`Post`: its
path, its headers, its body and its reader); :meth:`HttpModel.stream` makes it an
:class:`Attempt` (the URL, every header) and :func:`exchange` makes the attempt: the
POST on a new connection, the stream read, each event handed to the protocol's
reader, every failure a value. The seed's retries are the loop's (``Responder``), for
every protocol alike.

The readers (:mod:`openai_chat_reader`, :mod:`anthropic_reader`…) are pure state
machines, so everything that is about a wire format is tested without sockets; this
module is the only place where bytes meet them. How an attempt connects and what a
failure means are :mod:`.transport`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol, cast

import httpx
from returns.result import Failure, Result, Success

from treadle.adapters.http_model.body import BodyTooLarge, BoundedBody, UnknownEncoding
from treadle.adapters.http_model.server_facts import ProbeTarget, server_facts
from treadle.adapters.http_model.sse import EventTooLong, SseEvent, SseParser
from treadle.adapters.http_model.transport import (
    Connection,
    StreamLimits,
    broken,
    checked_base_url,
    open_client,
    redact_error,
    status_failure,
    transport_failure,
)
from treadle.domain.values.model import (
    CredentialsRejected,
    MalformedStream,
    ModelError,
    ModelRequest,
    ReasoningText,
    ServerFacts,
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


OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """What a session asks of its model beyond each request; a protocol takes what it
    knows of them.

    ``effort`` is the reasoning effort (``low``, ``high``…; "" sends none). ``session``
    is the session's id, OpenAI's ``prompt_cache_key`` on its own API. ``prompt_cache``
    puts Anthropic's ``cache_control`` breakpoints in. ``reasoning_echo`` sends
    ``reasoning_content`` back on Chat Completions messages that called tools (DeepSeek
    refuses a tool loop without it; a server that refuses the field can be spared it).
    """

    effort: str = ""
    session: str = ""
    prompt_cache: bool = True
    reasoning_echo: bool = True


class HttpModel:
    """The Model port over HTTP, streamed; one attempt per :meth:`stream` call, each on a
    new connection (the turn loop decides about retries). ``options`` are the
    session's wishes beyond each request (:class:`ModelOptions`).

    ``api_key`` is the key itself (the caller reads it from ``key_env``, which is only
    named here to say what to set). The hosted API (``HOSTED_URL``) needs one; a server
    at another ``base_url`` gets one only if it is given. ``transport`` is for tests and
    benchmarks: the adapter then uses it as lent, and never closes it.
    """

    HOSTED_URL: ClassVar[str]
    KEY_ENV: ClassVar[str]

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None,
        base_url: str | None = None,
        key_env: str | None = None,
        connect_timeout: float = 10,
        read_timeout: float = 120,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: StreamLimits | None = None,
        options: ModelOptions | None = None,
    ) -> None:
        self.model = model
        self.options = options or ModelOptions()
        self.base_url = self.normalized_base_url(checked_base_url(base_url or self.HOSTED_URL))
        self.key_env = key_env or self.KEY_ENV
        self.hosted = self.base_url == self.HOSTED_URL
        self._key = api_key or None
        self._connection = Connection(
            connect_timeout, read_timeout, transport, limits or StreamLimits()
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def normalized_base_url(self, base_url: str) -> str:
        return base_url

    async def facts(self) -> ServerFacts:
        """The ModelServer port: what the server says of its window (a hosted API is not
        asked; the table of known models answers for it)."""
        return await server_facts(
            self.probe_target(),
            hosted=self.hosted,
            connect_timeout=self._connection.connect_timeout,
        )

    def probe_target(self) -> ProbeTarget:
        """Where the server is asked about the model, with the protocol's key headers."""
        base = self.base_url
        return ProbeTarget(
            root=base.removesuffix("/v1"),
            models_url=f"{base}/models",
            model=self.model,
            headers=self.key_headers(self._key),
        )

    def key_headers(self, key: str | None) -> dict[str, str]:
        """The headers that carry ``key`` (none without one)."""
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        if self._key is None and self.hosted:
            return failing(CredentialsRejected(f"no API key: set {self.key_env}"))
        post = self.protocol(request, self._key)
        attempt = Attempt(
            f"{self.base_url}{post.path}",
            {
                "content-type": "application/json",
                "accept": "text/event-stream",
                # An uncompressed stream: one that expands is bounded (body.py), but
                # there is nothing to gain from it either.
                "accept-encoding": "identity",
                **post.headers,
            },
            post.body,
            post.reader,
            self._key,
            self.key_env,
        )
        return exchange(attempt, self._connection)

    def protocol(self, request: ModelRequest, key: str | None) -> Post:
        """What the protocol posts for ``request``: its path, its own headers, the
        body's bytes and a new reader of its stream."""
        raise NotImplementedError


class OpenAIModel(HttpModel):
    """The base of OpenAI's two protocols (Chat Completions and Responses): its hosted
    API, its key variable and its bearer key; a server at another URL needs no key."""

    HOSTED_URL = OPENAI_BASE_URL
    KEY_ENV = "OPENAI_API_KEY"

    def key_headers(self, key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"} if key is not None else {}


# The attempt ----------------------------------------------------------------------


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
            yield Failure(broken(e, connection, where, attempt.secret))
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
