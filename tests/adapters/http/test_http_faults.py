"""Failures on a real socket: error statuses, resets, closes, stalls, refusals — each
comes back as the port's error value, after whatever text was already streamed; and
every call goes out on a connection of its own."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.adapters.http.server import Fault, FaultKind, Reply, ScriptedServer
from tests.adapters.http.support import KEY, Heard, a_request, listen, stream_file
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.domain.values.model import (
    CredentialsRejected,
    HttpStatusError,
    ModelError,
    StreamEnd,
    TextDelta,
    TransportError,
)

HttpModel = AnthropicModel | OpenAIChatModel
ModelFactory = Callable[..., HttpModel]

BODIES = {
    "anthropic": stream_file("anthropic/basic_response.sse"),
    "openai": stream_file("openai-chat/text_with_usage.sse"),
}
# How many events it takes to reach the first text: message_start, content_block_start,
# ping, "Hello"; or the role chunk, then "I'm".
FIRST_TEXT_AFTER = {"anthropic": 4, "openai": 2}
# An error body in each provider's own shape.
ERROR_BODIES = {
    "anthropic": lambda message: {
        "type": "error",
        "error": {"type": "api_error", "message": message},
    },
    "openai": lambda message: {"error": {"message": message, "type": "server_error", "code": None}},
}


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make(provider: str, server: ScriptedServer) -> ModelFactory:
    def build(**options: Any) -> HttpModel:
        settings: dict[str, Any] = {"base_url": server.base_url, "api_key": KEY} | options
        if provider == "anthropic":
            return AnthropicModel(model="claude-test", **settings)
        return OpenAIChatModel(model="gpt-test", **settings)

    return build


async def _one(make: ModelFactory, **options: Any) -> Heard:
    return await listen(make(**options).stream(a_request()))


def _transport(error: ModelError | None) -> str:
    assert isinstance(error, TransportError), error
    return error.kind


@pytest.mark.parametrize("status", [400, 404, 408, 409, 429, 500, 502, 503, 504, 529])
async def test_an_error_status_comes_back_with_the_servers_message(
    server: ScriptedServer, make: ModelFactory, provider: str, status: int
) -> None:
    server.add(Reply.error(status, ERROR_BODIES[provider](f"status {status} here")))
    heard = await _one(make)
    assert isinstance(heard.failure, HttpStatusError)
    assert heard.failure.status == status
    assert f"status {status} here" in heard.failure.detail
    assert heard.items == [heard.items[-1]]  # nothing before the failure


async def test_a_404_says_which_url_to_check(server: ScriptedServer, make: ModelFactory) -> None:
    server.add(Reply(404, (b"404 page not found",), "text/plain"))
    heard = await _one(make)
    assert isinstance(heard.failure, HttpStatusError)
    assert "404 page not found" in heard.failure.detail
    assert server.base_url in heard.failure.detail
    assert "check the base URL" in heard.failure.detail


async def test_an_html_error_page_is_summed_up_by_its_status(
    server: ScriptedServer, make: ModelFactory
) -> None:
    server.add(Reply(502, (b"<html><body><h1>502 Bad Gateway</h1></body></html>",), "text/html"))
    heard = await _one(make)
    assert heard.failure == HttpStatusError(502, "Bad Gateway")


@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_credentials_name_the_variable_to_set(
    server: ScriptedServer, make: ModelFactory, provider: str, status: int
) -> None:
    server.add(Reply.error(status, ERROR_BODIES[provider](f"Incorrect API key provided: {KEY}")))
    heard = await _one(make)
    variable = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    assert heard.failure == CredentialsRejected(
        f"credentials rejected (HTTP {status}): set a valid {variable}"
    )


async def test_a_reset_before_the_headers_is_a_reset(
    server: ScriptedServer, make: ModelFactory
) -> None:
    server.add(Reply.sse(b"", fault=Fault("reset")))
    assert _transport((await _one(make)).failure) == "connection_reset"


async def test_a_close_before_the_headers_is_a_closed_connection(
    server: ScriptedServer, make: ModelFactory
) -> None:
    server.add(Reply.sse(b"", fault=Fault("close")))
    assert _transport((await _one(make)).failure) == "connection_closed"


async def test_a_close_mid_stream_before_any_text(
    server: ScriptedServer, make: ModelFactory, provider: str
) -> None:
    # One event only: message_start, or OpenAI's role chunk with empty content.
    server.add(Reply.sse(BODIES[provider], fault=Fault("close", after_chunks=1)))
    heard = await _one(make)
    assert heard.text == ""
    assert _transport(heard.failure) == "connection_closed"
    assert heard.failure is not None
    assert "incomplete chunked read" in heard.failure.describe()


@pytest.mark.parametrize("fault", ["close", "reset"])
async def test_a_failure_after_some_text_comes_after_that_text(
    server: ScriptedServer, make: ModelFactory, provider: str, fault: FaultKind
) -> None:
    server.add(
        Reply.sse(BODIES[provider], fault=Fault(fault, after_chunks=FIRST_TEXT_AFTER[provider]))
    )
    heard = await _one(make)
    assert heard.text and heard.end is None
    assert all(isinstance(item.unwrap(), TextDelta) for item in heard.items[:-1])
    expected = "connection_closed" if fault == "close" else "connection_reset"
    assert _transport(heard.failure) == expected


async def test_a_server_that_goes_quiet_times_out(
    server: ScriptedServer, make: ModelFactory
) -> None:
    server.add(Reply.sse(b"", fault=Fault("stall")))
    heard = await _one(make, read_timeout=0.3)
    assert heard.failure == TransportError(
        "timeout", f"no data from {server.base_url[7:]} for 0.3 s"
    )


async def test_a_stall_mid_stream_times_out_after_the_text(
    server: ScriptedServer, make: ModelFactory, provider: str
) -> None:
    server.add(
        Reply.sse(BODIES[provider], fault=Fault("stall", after_chunks=FIRST_TEXT_AFTER[provider]))
    )
    heard = await _one(make, read_timeout=0.3)
    assert heard.text
    assert _transport(heard.failure) == "timeout"


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port that is bound but not listening: nothing can take it while the test runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def test_nothing_listening_is_a_refused_connection(
    make: ModelFactory, closed_port: int
) -> None:
    heard = await _one(make, base_url=f"http://127.0.0.1:{closed_port}")
    assert heard.failure == TransportError(
        "connection_refused",
        f"connection refused by 127.0.0.1:{closed_port}: is the server running?",
    )


async def test_every_call_opens_a_new_connection(
    server: ScriptedServer, make: ModelFactory, provider: str
) -> None:
    model = make()
    server.add(*[Reply.sse(BODIES[provider])] * 3)
    for _ in range(3):
        assert (await listen(model.stream(a_request()))).end is not None
    ports = [seen.client_port for seen in server.requests]
    assert len(set(ports)) == 3
    assert server.connections == 3


async def test_the_server_would_show_a_reused_connection(server: ScriptedServer) -> None:
    """The check above can fail: a pooled client is seen coming back on one port."""
    server.add(*[Reply.sse(BODIES["openai"])] * 2)
    async with httpx.AsyncClient(base_url=server.base_url) as client:
        for _ in range(2):
            await client.post("/v1/chat/completions", content=b"{}")
    assert len({seen.client_port for seen in server.requests}) == 1
    assert server.connections == 1


async def test_closing_the_stream_early_hangs_up_the_connection(
    server: ScriptedServer, make: ModelFactory, provider: str
) -> None:
    server.add(
        Reply.sse(BODIES[provider], fault=Fault("stall", after_chunks=FIRST_TEXT_AFTER[provider]))
    )
    stream = make().stream(a_request())
    async for item in stream:
        if isinstance(item.unwrap(), TextDelta):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.wait_for(server.hung_up.wait(), timeout=5)
    assert server.hangups == 1


async def test_cancelling_the_reader_hangs_up_the_connection(
    server: ScriptedServer, make: ModelFactory, provider: str
) -> None:
    server.add(
        Reply.sse(BODIES[provider], fault=Fault("stall", after_chunks=FIRST_TEXT_AFTER[provider]))
    )
    first_text = asyncio.Event()

    async def read() -> None:
        async for item in make().stream(a_request()):
            if isinstance(item.unwrap(), TextDelta):
                first_text.set()

    reading = asyncio.create_task(read())
    await asyncio.wait_for(first_text.wait(), timeout=5)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    await asyncio.wait_for(server.hung_up.wait(), timeout=5)


async def test_a_complete_answer_ignores_what_follows_its_end(
    server: ScriptedServer, make: ModelFactory, provider: str
) -> None:
    server.add(Reply.sse(BODIES[provider] + b"\n\ndata: {not json\n\n"))
    heard = await _one(make)
    assert heard.failure is None
    assert isinstance(heard.end, StreamEnd)
