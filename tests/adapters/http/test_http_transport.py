"""What a failed connection means, found in the errno httpx buries two or three
exceptions deep; what an error body says; and what is redacted from it. Failures a
loopback socket cannot produce (an unreachable network, a broken pipe) are raised by
a transport that fails on cue."""

from __future__ import annotations

import errno
import socket
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.adapters.http.support import KEY, a_request, listen, stream_file
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.adapters.http_model.transport import error_message, redact
from treadle.domain.values.model import TransportError, TransportKind


def _os_error(code: int) -> OSError:
    return OSError(code, errno.errorcode.get(code, "?"))


def _wrapped(outer: httpx.HTTPError, cause: BaseException) -> httpx.HTTPError:
    """As httpx raises it: its error, from httpcore's, from the OSError."""
    inner = Exception(str(cause))
    inner.__cause__ = cause
    outer.__cause__ = inner
    return outer


class FailingTransport(httpx.AsyncBaseTransport):
    def __init__(self, error: httpx.HTTPError) -> None:
        self.error = error
        self.closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise self.error

    async def aclose(self) -> None:
        self.closed = True


def _refused_twice() -> httpx.HTTPError:
    # Both addresses of "localhost" refused: anyio groups the two errors.
    group = ExceptionGroup(
        "multiple connection attempts failed", [_os_error(errno.ECONNREFUSED)] * 2
    )
    failed = OSError("All connection attempts failed")
    failed.__cause__ = group
    return _wrapped(httpx.ConnectError("All connection attempts failed"), failed)


CASES: list[tuple[str, httpx.HTTPError, TransportKind]] = [
    (
        "ENETUNREACH",
        _wrapped(httpx.ConnectError(""), _os_error(errno.ENETUNREACH)),
        "network_unreachable",
    ),
    (
        "EHOSTUNREACH",
        _wrapped(httpx.ConnectError(""), _os_error(errno.EHOSTUNREACH)),
        "network_unreachable",
    ),
    (
        "ECONNREFUSED",
        _wrapped(httpx.ConnectError(""), _os_error(errno.ECONNREFUSED)),
        "connection_refused",
    ),
    ("refused-group", _refused_twice(), "connection_refused"),
    ("ECONNRESET", _wrapped(httpx.ReadError(""), _os_error(errno.ECONNRESET)), "connection_reset"),
    ("EPIPE", _wrapped(httpx.WriteError(""), _os_error(errno.EPIPE)), "broken_pipe"),
    ("connect-timeout", httpx.ConnectTimeout(""), "timeout"),
    ("read-timeout", httpx.ReadTimeout(""), "timeout"),
    ("write-timeout", httpx.WriteTimeout(""), "timeout"),
    ("pool-timeout", httpx.PoolTimeout(""), "timeout"),
    ("server-disconnected", httpx.RemoteProtocolError("Server disconnected"), "connection_closed"),
    ("read-error-no-errno", httpx.ReadError(""), "connection_closed"),
    (
        "dns",
        _wrapped(
            httpx.ConnectError("Name or service not known"),
            socket.gaierror(-2, "Name or service not known"),
        ),
        "other",
    ),
    ("proxy", httpx.ProxyError("407 Proxy Authentication Required"), "other"),
]


@pytest.mark.parametrize(
    ("error", "kind"), [case[1:] for case in CASES], ids=[case[0] for case in CASES]
)
async def test_a_connection_failure_is_named_by_what_the_socket_saw(
    error: httpx.HTTPError, kind: TransportKind
) -> None:
    model = OpenAIChatModel(model="gpt-test", api_key=KEY, transport=FailingTransport(error))
    heard = await listen(model.stream(a_request()))
    assert isinstance(heard.failure, TransportError)
    assert heard.failure.kind == kind
    assert "api.openai.com" in heard.failure.detail


@pytest.mark.parametrize(
    ("error", "detail"),
    [
        (httpx.ConnectTimeout(""), "could not connect to api.anthropic.com within 3 s"),
        (httpx.ReadTimeout(""), "no data from api.anthropic.com for 7.5 s"),
        (
            _wrapped(httpx.ConnectError(""), _os_error(errno.ENETUNREACH)),
            "network unreachable on the way to api.anthropic.com",
        ),
    ],
)
async def test_a_transport_failure_says_where_and_how_long(
    error: httpx.HTTPError, detail: str
) -> None:
    model = AnthropicModel(
        model="claude-test",
        api_key=KEY,
        connect_timeout=3,
        read_timeout=7.5,
        transport=FailingTransport(error),
    )
    heard = await listen(model.stream(a_request()))
    assert heard.failure is not None
    assert heard.failure.describe() == detail


class CutStream(httpx.AsyncByteStream):
    """Some of a body, then a reset."""

    def __init__(self, head: bytes) -> None:
        self.head = head

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        raise _wrapped(httpx.ReadError(""), _os_error(errno.ECONNRESET))


async def test_a_reset_mid_body_comes_after_the_text_read_so_far() -> None:
    head = stream_file("openai-chat/text_with_usage.sse")[:900]

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=CutStream(head)
        )

    model = OpenAIChatModel(model="gpt-test", api_key=KEY, transport=httpx.MockTransport(respond))
    heard = await listen(model.stream(a_request()))
    assert heard.text == "I'm unable"
    assert isinstance(heard.failure, TransportError)
    assert heard.failure.kind == "connection_reset"


async def test_a_lent_transport_is_left_open_for_its_owner() -> None:
    transport = FailingTransport(httpx.ConnectTimeout(""))
    model = OpenAIChatModel(model="gpt-test", api_key=KEY, transport=transport)
    await listen(model.stream(a_request()))
    await listen(model.stream(a_request()))
    assert not transport.closed


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (
            b'{"error": {"message": "Model gone", "type": "invalid_request_error"}}',
            "application/json",
            "invalid_request_error: Model gone",
        ),
        (
            b'{"type": "error", "error": {"type": "not_found_error", "message": "model: x"}}',
            "application/json",
            "not_found_error: model: x",
        ),
        (
            b'{"error": "model \\"llama9\\" not found, try pulling it first"}',
            "application/json",
            'model "llama9" not found, try pulling it first',
        ),
        (b'{"detail": "Not Found"}', "application/json", "Not Found"),
        (b'{"object": "error", "message": "bad"}', "application/json", "bad"),
        (b'{"unrelated": 1}', "application/json", ""),
        (
            b"upstream   connect error\n or disconnect",
            "text/plain",
            "upstream connect error or disconnect",
        ),
        (b"<html><h1>502</h1></html>", "text/html; charset=utf-8", ""),
        (b"", "", ""),
    ],
)
def test_the_message_of_an_error_body(body: bytes, content_type: str, message: str) -> None:
    assert error_message(body, content_type) == message


@pytest.mark.parametrize(
    ("text", "secret", "expected"),
    [
        (f"key {KEY} refused", KEY, "key [redacted] refused"),
        (
            "Incorrect API key provided: sk-proj-ab***wxyz.",
            "other-key-value",
            "Incorrect API key provided: [redacted].",
        ),
        ("header was Bearer abc.def", None, "header was [redacted]"),
        ("ollama says hello", "ollama", "[redacted] says hello"),
        ("a k in every word", "k", "a k in every word"),  # too short to be a secret
        ("skill-based sk-12", None, "skill-based sk-12"),
    ],
)
def test_redaction(text: str, secret: str | None, expected: str) -> None:
    assert redact(text, secret) == expected
