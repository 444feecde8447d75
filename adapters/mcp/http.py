"""The streamable HTTP transport: the SDK's, on a client that carries the headers and
the bearer token, remembers the last error status (the SDK's error loses it), and
reads no message over :data:`MAX_MESSAGE`: one server-sent event (the SDK's own
bound) or one JSON body (the SDK would read it whole; it is asked uncompressed, so
that the bytes counted are the bytes kept, and a compressed one is refused)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable

import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client

from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.values import MAX_MESSAGE

OVER_THE_LIMIT = f"exceeded the {MAX_MESSAGE} byte limit"
"""In the SDK's error for a message over :data:`MAX_MESSAGE`, from an event or a body."""


class MissingToken(Exception):
    """The variable that should hold the bearer token is not set."""


class MessageTooLarge(httpx2.StreamError):
    """A body over the limit (a ``StreamError``: the SDK fails the call it answers)."""


class _Capped(httpx2.AsyncByteStream):
    """A response's body, stopped (and closed) past ``limit`` bytes, or at once when
    it is compressed (its size once decoded would be unbounded)."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, *, compressed: bool) -> None:
        self._inner = inner
        self._limit = limit
        self._compressed = compressed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._compressed:
            await self._inner.aclose()
            raise MessageTooLarge("Response body compressed, though it was asked uncompressed.")
        read = 0
        async for chunk in self._inner:
            read += len(chunk)
            if read > self._limit:
                await self._inner.aclose()
                raise MessageTooLarge(f"Response body {OVER_THE_LIMIT}.")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def request_headers(config: McpServerConfig) -> dict[str, str]:
    """The configured headers, with ``Authorization: Bearer`` from ``bearer_token_env``."""
    headers = dict(config.headers)
    if config.bearer_token_env:
        token = os.environ.get(config.bearer_token_env)
        if not token:
            raise MissingToken(f"${config.bearer_token_env} (its bearer_token_env) is not set")
        headers["Authorization"] = f"Bearer {token}"
    return headers


@contextlib.asynccontextmanager
async def http_transport(
    config: McpServerConfig,
    on_error_status: Callable[[int], None],
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[TransportStreams]:
    async def remember(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            on_error_status(response.status_code)

    async def capped(response: httpx2.Response) -> None:
        json = response.headers.get("content-type", "").lower().startswith("application/json")
        if json and isinstance(response.stream, httpx2.AsyncByteStream):
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            compressed = encoding not in ("", "identity")
            response.stream = _Capped(response.stream, MAX_MESSAGE, compressed=compressed)

    client = httpx2.AsyncClient(
        auth=auth,
        headers={"Accept-Encoding": "identity", **request_headers(config)},
        # A call's own deadline bounds its wait; a result may stream for as long.
        timeout=httpx2.Timeout(config.startup_timeout, read=None),
        event_hooks={"response": [remember, capped]},
    )
    async with (
        client,
        # The SDK's default caps one event at 1 MiB: a larger result (an image, a long
        # file) would end the whole connection. The same cap as stdio instead.
        streamable_http_client(
            config.url, http_client=client, max_sse_event_size=MAX_MESSAGE
        ) as streams,
    ):
        yield streams
