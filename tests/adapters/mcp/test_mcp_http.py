"""MCP over streamable HTTP against the tests' own server (the SDK's server API behind
uvicorn, on a socket the test binds): the same tools, headers and a bearer token."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.adapters.mcp.support import SERVER, Session, events_of, eventually, tool_context
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.domain.values.events import Notice
from treadle.domain.values.tools import ToolResult

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

TOKEN = "test-bearer-token-5f2e9a"
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-http")


@pytest.fixture(scope="module")
def url(folder: Path) -> Iterator[str]:
    """The server's address; it listens before it starts, so no waiting is needed."""
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    with open(folder / "uvicorn.log", "wb") as output:
        fd, events = str(listening.fileno()), str(folder / "web.events")
        server = subprocess.Popen(
            [sys.executable, str(SERVER), "http", "--fd", fd, "--token", TOKEN, "--log", events],
            pass_fds=[listening.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
        )
    listening.close()
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(autouse=True)
def _direct(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def web(url: str, folder: Path) -> AsyncIterator[Session]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WEB_MCP_TOKEN", TOKEN)
        config = McpServerConfig(
            "web",
            url=url,
            headers={"X-Test": "from-the-config"},
            bearer_token_env="WEB_MCP_TOKEN",
            tool_timeout=0.5,
        )
        # The same server under a deadline a loaded machine cannot miss, for a call
        # whose length is not what it tests (2 MB over HTTP took over 0.5 s under load).
        roomy = dataclasses.replace(config, name="roomy", tool_timeout=60.0)
        session = Session(McpServers([config, roomy], workspace=str(folder)))
        await session.start()
    try:
        yield session
    finally:
        await session.servers.close()


def result(outcome: object) -> ToolResult:
    assert isinstance(outcome, ToolResult)
    return outcome


async def test_a_tool_answers_over_http_with_the_configured_headers(web, folder) -> None:
    assert web.notices == []
    outcome = result(await web.call("mcp__web__echo", tool_context(folder), text="over http"))
    assert (outcome.text, outcome.is_error) == ("echo: over http", False)
    assert "http POST from-the-config" in events_of(folder, "web")


async def test_a_tool_that_fails_over_http(web, folder) -> None:
    outcome = result(await web.call("mcp__web__fail", tool_context(folder)))
    assert outcome.is_error and "failed on purpose" in outcome.text


async def test_an_image_over_http(web, folder) -> None:
    outcome = result(await web.call("mcp__web__image", tool_context(folder)))
    assert outcome.text.endswith("[image: image/png, 73 bytes]")


async def test_a_result_over_a_mebibyte_arrives_whole(web, folder) -> None:
    outcome = result(await web.call("mcp__roomy__big", tool_context(folder), size=2_000_000))
    assert not outcome.is_error and "1,970,000 bytes (0 lines) omitted" in outcome.text


async def test_a_call_past_its_deadline_over_http_is_cancelled(web, folder) -> None:
    outcome = result(await web.call("mcp__web__hang", tool_context(folder)))
    assert outcome.status == "deadline 0.5 s"
    assert await eventually(lambda: "hang cancelled" in events_of(folder, "web"))


async def test_esc_cancels_a_call_over_http(web, folder) -> None:
    before = events_of(folder, "web").count("hang cancelled")
    call = asyncio.ensure_future(web.call("mcp__web__hang", tool_context(folder)))
    await eventually(lambda: events_of(folder, "web").count("hang started") > before)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    assert await eventually(lambda: events_of(folder, "web").count("hang cancelled") > before)
    assert (
        result(await web.call("mcp__web__echo", tool_context(folder), text="x")).text == "echo: x"
    )


async def test_a_refused_token_or_a_missing_one_is_reported(url, folder, monkeypatch) -> None:
    monkeypatch.setenv("WRONG_TOKEN", "not-the-token-at-all")
    monkeypatch.delenv("UNSET_TOKEN", raising=False)
    configs = [
        McpServerConfig("refused", url=url, bearer_token_env="WRONG_TOKEN"),
        McpServerConfig("unset", url=url, bearer_token_env="UNSET_TOKEN"),
        McpServerConfig("nobody", url="http://127.0.0.1:9/mcp"),
    ]
    session = await Session(McpServers(configs, workspace=str(folder))).start()
    await session.servers.close()
    texts = [notice.text for notice in session.notices if isinstance(notice, Notice)]
    assert texts[0] == f"MCP server refused did not start: HTTP 401 from {url}. " + (
        "Its tools are not available."
    )
    assert texts[1].startswith("MCP server unset did not start: $UNSET_TOKEN")
    assert texts[2].startswith("MCP server nobody did not start: cannot connect")
    assert session.tools == {}


async def test_a_result_the_sdk_cannot_parse_fails_the_call_at_once_saying_why(web, folder) -> None:
    """A lone surrogate: the SDK's HTTP transport parses the answer itself, refuses it,
    and answers the call with an error (it never waits for the deadline)."""
    outcome = result(await web.call("mcp__web__lone", tool_context(folder)))
    assert (outcome.is_error, outcome.status) == (True, "protocol error")
    assert outcome.text.startswith(
        "Error: the MCP server web sent an answer treadle cannot read (Invalid JSON: lone "
    )
    assert "\n" not in outcome.text and "[type=" not in outcome.text
    assert (
        result(await web.call("mcp__web__echo", tool_context(folder), text="x")).text == "echo: x"
    )
