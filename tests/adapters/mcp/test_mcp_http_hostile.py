"""MCP over streamable HTTP against servers that misbehave: a hand-written one that
answers 100 MB (as one JSON body, and as one event), and the tests' own server
killed in the middle of a call."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.mcp.support import SERVER, Session, events_of, eventually, tool_context
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.mcp.values import MAX_MESSAGE
from treadle.domain.values.events import Notice
from treadle.domain.values.tools import ToolResult

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

RAW_HTTP_SERVER = Path(__file__).with_name("raw_http_server.py")
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _direct(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)


def serve(*argv: str) -> tuple[subprocess.Popen[bytes], str]:
    """A server on a socket bound here: it listens before it starts, no waiting needed."""
    listening = socket.create_server(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = subprocess.Popen(
        [*argv, "--fd", str(listening.fileno())],
        pass_fds=[listening.fileno()],
        stdin=subprocess.DEVNULL,
    )
    listening.close()
    return server, f"http://127.0.0.1:{port}/mcp"


def stop(server: subprocess.Popen[bytes]) -> None:
    server.kill()
    server.wait()


@pytest.fixture(scope="module")
def raw_url() -> Iterator[str]:
    server, url = serve(sys.executable, str(RAW_HTTP_SERVER))
    try:
        yield url
    finally:
        stop(server)


@pytest.mark.parametrize("tool", ["huge_json", "huge_sse"])
async def test_a_result_over_the_message_limit_closes_the_connection_saying_why(
    raw_url: str, tmp_path: Path, tool: str
) -> None:
    servers = McpServers([McpServerConfig("evil", url=raw_url)], workspace=str(tmp_path))
    session = await Session(servers).start()
    tracemalloc.start()
    try:
        outcome = await session.call(f"mcp__evil__{tool}", tool_context(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
        assert isinstance(outcome, ToolResult)
        assert (outcome.is_error, outcome.status) == (True, "server gone")
        assert outcome.text == (
            "Error: the MCP server evil sent a message over the 32 MiB limit; "
            "treadle closed its connection"
        )
        assert [n.text for n in session.notices if isinstance(n, Notice)] == [
            "MCP server evil stopped: treadle closed its connection for a message over the "
            "32 MiB limit. Its tools now fail."
        ]
        later = await session.call("mcp__evil__echo", tool_context(tmp_path))
        assert isinstance(later, ToolResult) and later.status == "not running"
        # Never more held than the limit and what is being read (of 100 MB sent).
        assert peak < MAX_MESSAGE * 1.25
    finally:
        tracemalloc.stop()
        await servers.close()


async def test_a_server_killed_mid_call_fails_the_call_at_once_saying_so(tmp_path: Path) -> None:
    events = tmp_path / "killed.events"
    server, url = serve(sys.executable, str(SERVER), "http", "--log", str(events))
    servers = McpServers(
        [McpServerConfig("killed", url=url, tool_timeout=60)], workspace=str(tmp_path)
    )
    session = await Session(servers).start()
    try:
        call = asyncio.ensure_future(session.call("mcp__killed__hang", tool_context(tmp_path)))
        assert await eventually(lambda: "hang started" in events_of(tmp_path, "killed"))
        stop(server)  # SIGKILL, in the middle of the call
        killed = time.monotonic()
        outcome = await asyncio.wait_for(call, 30)
        assert time.monotonic() - killed < 3
        assert isinstance(outcome, ToolResult)
        assert (outcome.is_error, outcome.status) == (True, "server gone")
        assert outcome.text == (
            "Error: the MCP server killed dropped the connection during the call"
        )
        later = await session.call("mcp__killed__echo", tool_context(tmp_path), text="anyone?")
        assert isinstance(later, ToolResult) and later.is_error
        assert [n.text for n in session.notices if isinstance(n, Notice)] == [
            "MCP server killed stopped: it dropped the connection during a call, "
            "and cannot be reached. Its tools now fail."
        ]
    finally:
        stop(server)
        await servers.close()


async def test_a_call_to_a_server_killed_between_calls_fails_at_once_saying_so(
    tmp_path: Path,
) -> None:
    server, url = serve(sys.executable, str(SERVER), "http")
    servers = McpServers(
        [McpServerConfig("gone", url=url, tool_timeout=60)], workspace=str(tmp_path)
    )
    session = await Session(servers).start()
    try:
        stop(server)
        killed = time.monotonic()
        outcome = await session.call("mcp__gone__echo", tool_context(tmp_path), text="anyone?")
        assert time.monotonic() - killed < 3
        assert isinstance(outcome, ToolResult) and outcome.status == "server gone"
        assert outcome.text == (
            "Error: the MCP server gone went away during the call: "
            "cannot connect: connection refused"
        )
        assert [n.text for n in session.notices if isinstance(n, Notice)] == [
            "MCP server gone stopped: cannot connect: connection refused. Its tools now fail."
        ]
    finally:
        await servers.close()
