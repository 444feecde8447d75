"""The HTTP side every protocol shares: how an attempt connects (its timeouts and
limits, its client, its TLS), what a failed connection or a broken stream means, and
reading an error answer without ever handing back the key. The attempt itself, on a
new connection, is :mod:`.endpoint`'s; what is here returns before the POST is sent,
or says what went wrong.

Example::

    >>> redact("bad key sk-abc123456789 for sk-abc123456789", "sk-abc123456789")
    'bad key [redacted] for [redacted]'
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import json
import re
import ssl
from dataclasses import dataclass

import httpx

from treadle.adapters.context_refusals import context_refusal
from treadle.adapters.http_model.body import BodyTooLarge, UnknownEncoding
from treadle.adapters.http_model.sse import EventTooLong
from treadle.domain.values.model import (
    CredentialsRejected,
    HttpStatusError,
    MalformedStream,
    ModelError,
    TransportError,
    TransportKind,
)

# The seed's transient failures are named by what the socket saw; errno is the only
# reliable witness, since httpx wraps the OSError two or three levels deep.
_KIND_BY_ERRNO: dict[int, TransportKind] = {
    errno.ECONNREFUSED: "connection_refused",
    errno.ENETUNREACH: "network_unreachable",
    errno.EHOSTUNREACH: "network_unreachable",
    errno.ENETDOWN: "network_unreachable",
    errno.ECONNRESET: "connection_reset",
    errno.ECONNABORTED: "connection_reset",
    errno.EPIPE: "broken_pipe",
    errno.ETIMEDOUT: "timeout",
}

_ERROR_BODY_LIMIT = 64 * 1024
_DETAIL_LIMIT = 500
# Providers echo a masked key in some messages ("Incorrect API key provided: sk-ab***yz");
# anything shaped like a key goes, not only the exact value we sent.
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_\-*]{6,}|(?i:bearer)\s+\S+")
REDACTED = "[redacted]"
_SHORTEST_SECRET = 4


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How much one answer may be: its decoded body and one event, in bytes. Generous:
    a 32k-token answer is a few MiB of events; a hostile server is stopped at these."""

    answer_bytes: int = 64 << 20
    event_bytes: int = 16 << 20


@dataclass(frozen=True, slots=True)
class Connection:
    """How one attempt connects: its timeouts and limits, and a transport lent by a test
    or a benchmark (the lender owns it and its connection policy; it is never closed)."""

    connect_timeout: float
    read_timeout: float
    transport: httpx.AsyncBaseTransport | None = None
    limits: StreamLimits = StreamLimits()


def checked_base_url(base_url: str) -> str:
    """The base URL without a trailing slash; anything but http(s) is a setup mistake."""
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as error:
        raise ValueError(f"base URL {base_url!r} cannot be used: {error}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"base URL must be http:// or https://, got {base_url!r}")
    return base_url.rstrip("/")


def transport_failure(
    exc: httpx.HTTPError, connection: Connection, where: str, secret: str | None
) -> TransportError:
    """What a failed connection means: a kind for the retry rules, a detail for people."""
    kind = _kind_of(exc)
    match kind:
        case "connection_refused":
            detail = f"connection refused by {where}: is the server running?"
        case "network_unreachable":
            detail = f"network unreachable on the way to {where}"
        case "connection_reset":
            detail = f"connection reset by {where}"
        case "broken_pipe":
            detail = f"broken pipe while sending to {where}"
        case "timeout" if isinstance(exc, httpx.ConnectTimeout):
            detail = f"could not connect to {where} within {connection.connect_timeout:g} s"
        case "timeout" if isinstance(exc, httpx.ReadTimeout):
            detail = f"no data from {where} for {connection.read_timeout:g} s"
        case "timeout":
            detail = f"timed out talking to {where}"
        case "connection_closed":
            detail = f"{where} closed the connection" + (f" ({exc})" if str(exc) else "")
        case _:
            detail = f"{type(exc).__name__} talking to {where}" + (f": {exc}" if str(exc) else "")
    return TransportError(kind, redact(detail, secret))


def _kind_of(exc: httpx.HTTPError) -> TransportKind:
    for code in _errnos(exc):
        if code in _KIND_BY_ERRNO:
            return _KIND_BY_ERRNO[code]
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    # A peer that hangs up without a word: before the headers, mid-body (an incomplete
    # chunked read), or a read/write on a socket already gone with no errno to say how.
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return "connection_closed"
    return "other"


def _errnos(exc: BaseException) -> list[int]:
    """The errno of every OSError in the exception's causes, nearest first."""
    found: list[int] = []
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and isinstance(current.errno, int):
            found.append(current.errno)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return found


async def status_failure(
    response: httpx.Response, *, secret: str | None, key_env: str
) -> ModelError:
    """An error status as the port's error; the server's message comes along, redacted.

    401 and 403 say which variable to fix and nothing of the server's text, which for
    a bad key quotes part of that key. A refusal for length, in any provider's words,
    is :class:`ContextExceeded`, whatever its status.
    """
    status = response.status_code
    if status in (401, 403):
        return CredentialsRejected(f"credentials rejected (HTTP {status}): set a valid {key_env}")
    body = await _read_bounded(response)
    refusal = context_refusal(body)
    if refusal is not None:
        return redact_error(refusal, secret)
    message = error_message(body, response.headers.get("content-type", ""))
    if not message:
        message = response.reason_phrase
    if status == 404:
        url = response.request.url.copy_with(userinfo=b"", query=None)
        message += f" ({response.request.method} {url}: check the base URL)"
    return HttpStatusError(status, redact(message, secret)[:_DETAIL_LIMIT])


async def _read_bounded(response: httpx.Response) -> bytes:
    """At most ``_ERROR_BODY_LIMIT`` bytes: an error page is read for its message only."""
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            parts.append(chunk)
            size += len(chunk)
            if size >= _ERROR_BODY_LIMIT:
                break
    except httpx.HTTPError:
        pass  # the status alone still says what went wrong
    return b"".join(parts)[:_ERROR_BODY_LIMIT]


def error_message(body: bytes, content_type: str) -> str:
    """The message in an error body: OpenAI's and Anthropic's ``error.message``, the
    ``error`` string of Ollama, the ``detail`` of FastAPI servers, or plain text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict):
            message, kind = error.get("message"), error.get("type")
            if isinstance(message, str) and message:
                return f"{kind}: {message}" if isinstance(kind, str) and kind else message
        for value in (error, parsed.get("message"), parsed.get("detail")):
            if isinstance(value, str) and value:
                return value
        return ""
    if "html" in content_type:
        return ""  # a proxy's error page: its markup helps nobody
    return " ".join(text.split())[:_DETAIL_LIMIT]


def redact_error(error: ModelError, secret: str | None) -> ModelError:
    """``error`` with its text redacted (see :func:`redact`)."""
    match error:
        case CredentialsRejected(needed=needed):
            return CredentialsRejected(redact(needed, secret))
        case _:
            return dataclasses.replace(error, detail=redact(error.detail, secret))


def redact(text: str, secret: str | None) -> str:
    """``text`` without ``secret`` and without anything shaped like an API key."""
    # A key of a few characters is no secret, and replacing it would shred the message.
    if secret and len(secret) >= _SHORTEST_SECRET:
        text = text.replace(secret, REDACTED)
    return _KEY_SHAPED.sub(REDACTED, text)


def open_client(connection: Connection, url: httpx.URL) -> httpx.AsyncClient:
    """A client of its own for one attempt, so the attempt opens a new TCP connection.

    A pooled connection could be the very one that just failed; the seed asks for a
    fresh one every time. No keep-alive either, so nothing outlives the attempt.
    """
    timeout = httpx.Timeout(connection.read_timeout, connect=connection.connect_timeout)
    if connection.transport is not None:
        return httpx.AsyncClient(transport=BorrowedTransport(connection.transport), timeout=timeout)
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


class BorrowedTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Left to the lender: closing it here would break its next attempt."""


def broken(
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
            return past_limit(problem, where, connection.limits)
    raise TypeError(problem)  # pragma: no cover - only the exceptions caught above


def past_limit(
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
