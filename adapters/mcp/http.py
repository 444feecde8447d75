"""The streamable HTTP transport: the SDK's, on a client that carries the headers and
the bearer token, and remembers the last error status (the SDK's error loses it)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable

import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client

from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.values import MAX_MESSAGE


class MissingToken(Exception):
    """The variable that should hold the bearer token is not set."""


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
    config: McpServerConfig, on_error_status: Callable[[int], None]
) -> AsyncIterator[TransportStreams]:
    async def remember(response: httpx2.Response) -> None:
        if response.status_code >= 400:
            on_error_status(response.status_code)

    client = httpx2.AsyncClient(
        headers=request_headers(config),
        # A call's own deadline bounds its wait; a result may stream for as long.
        timeout=httpx2.Timeout(config.startup_timeout, read=None),
        event_hooks={"response": [remember]},
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
