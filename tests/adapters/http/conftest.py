"""A real HTTP server on 127.0.0.1 for every test that asks for ``server``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.adapters.http.server import ScriptedServer

_PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The adapters honour proxy variables; the test server must be reached directly."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    async with ScriptedServer.running() as running:
        yield running
