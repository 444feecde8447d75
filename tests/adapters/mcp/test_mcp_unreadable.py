"""A server whose answers the SDK cannot read as they are, over stdio: strings made
well-formed, an answer that is not JSON-RPC failing its call at once (never a wait for
the deadline), and a malformed tool in its list mended or left out, with a notice."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.adapters.mcp.support import Session, tool_context
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.mcp.values import MAX_MESSAGE
from treadle.domain.values.events import Notice
from treadle.domain.values.tools import ToolResult

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

RAW_SERVER = Path(__file__).with_name("raw_server.py")
DEADLINE = 20.0
"""Long enough that a call which waits for it cannot pass for one that failed at once."""


def raw_server(name: str, *options: str) -> McpServerConfig:
    return McpServerConfig(
        name, command=sys.executable, args=(str(RAW_SERVER), *options), tool_timeout=DEADLINE
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-unreadable")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def raw(folder: Path) -> AsyncIterator[Session]:
    servers = McpServers(
        [raw_server("raw"), raw_server("broken", "--broken-list")],
        workspace=str(folder),
        log_dir=str(folder),
        grace=0.2,
    )
    session = Session(servers)
    try:
        yield await session.start()
    finally:
        await servers.close()


async def called(raw: Session, folder: Path, tool: str) -> ToolResult:
    outcome = await raw.call(f"mcp__raw__{tool}", tool_context(folder), text="hi")
    assert isinstance(outcome, ToolResult)
    return outcome


async def test_a_lone_surrogate_in_a_result_arrives_as_a_replacement_character(raw, folder) -> None:
    outcome = await called(raw, folder, "lone")
    assert (outcome.text, outcome.is_error) == ("bad \ufffd text", False)
    outcome = await called(raw, folder, "bytes")
    assert (outcome.text, outcome.is_error) == ("bad \ufffd text", False)


async def test_an_answer_that_is_not_json_rpc_fails_its_call_at_once(raw, folder) -> None:
    outcome = await called(raw, folder, "shapeless")
    assert (outcome.is_error, outcome.status) == (True, "protocol error")
    assert outcome.text == (
        "Error: the MCP server raw sent an answer treadle cannot read "
        "(not JSON-RPC: result: Input should be a valid dictionary)"
    )


async def test_a_result_that_is_not_a_tools_result_fails_its_call_at_once(raw, folder) -> None:
    outcome = await called(raw, folder, "wrong")
    assert (outcome.is_error, outcome.status) == (True, "protocol error")
    assert outcome.text.startswith(
        "Error: the MCP server raw sent a result treadle cannot use (content.0"
    )
    assert "\n" not in outcome.text
    # The server is still there for the next call.
    assert (await called(raw, folder, "echo")).text == "echo: hi"


async def test_a_tool_listed_without_an_input_schema_takes_no_arguments_and_is_said(
    raw,
) -> None:
    assert {"mcp__raw__echo", "mcp__raw__null", "mcp__raw__listed"} <= set(raw.tools)
    assert raw.tools["mcp__raw__null"].spec.parameters == {"type": "object", "properties": {}}
    texts = [n.text for n in raw.notices if n.kind == "mcp_tool_list_repaired"]
    assert texts == [
        'MCP server raw: tool "null": its inputSchema is null; it is offered taking no arguments.',
        'MCP server raw: tool "listed": its inputSchema is a list; '
        "it is offered taking no arguments.",
        'MCP server raw: tool "#8" cannot be read (name: Field required); it is left out.',
    ]
    [raw_status] = [s for s in raw.servers.statuses() if s.config.name == "raw"]
    assert 'tool "null": its inputSchema is null' in raw_status.detail


async def test_a_tool_list_the_sdk_cannot_read_fails_the_start_saying_what_is_wrong(
    raw,
) -> None:
    [failed] = [n for n in raw.notices if isinstance(n, Notice) and n.kind == "mcp_server_failed"]
    assert failed.text == (
        "MCP server broken did not start: its answer to tools/list is not valid MCP "
        "(tools: Input should be a valid list). Its tools are not available."
    )


async def test_a_name_the_providers_accept_is_kept_and_a_name_listed_twice_offered_once(
    folder,
) -> None:
    servers = McpServers(
        [raw_server("clash", "--clashing-names")], workspace=str(folder), grace=0.2
    )
    session = await Session(servers).start()
    try:
        [rewritten] = set(session.tools) - {"mcp__clash__a_b", "mcp__clash__ok"}
        assert rewritten.startswith("mcp__clash__a_b_") and len(session.tools) == 3
        for name, tool in [
            ("mcp__clash__a_b", "a_b"),
            (rewritten, "a/b"),
            ("mcp__clash__ok", "ok"),
        ]:
            outcome = await session.call(name, tool_context(folder), text="hi")
            assert isinstance(outcome, ToolResult) and outcome.text == f"called {tool}"
        assert [n.text for n in session.notices if isinstance(n, Notice)] == [
            'MCP server clash: tool "ok" is listed more than once; it is offered once.'
        ]
    finally:
        await servers.close()


async def test_a_result_over_the_message_limit_stops_the_server_saying_why(folder) -> None:
    servers = McpServers([raw_server("evil")], workspace=str(folder), log_dir=str(folder))
    session = await Session(servers).start()
    tracemalloc.start()
    try:
        outcome = await session.call("mcp__evil__huge", tool_context(folder))
        _, peak = tracemalloc.get_traced_memory()
        assert isinstance(outcome, ToolResult)
        assert (outcome.is_error, outcome.status) == (True, "server gone")
        assert outcome.text == (
            "Error: the MCP server evil sent a message over the 32 MiB limit; treadle stopped it"
        )
        assert [
            n.text
            for n in session.notices
            if isinstance(n, Notice) and n.kind == "mcp_server_stopped"
        ] == [
            "MCP server evil stopped: treadle stopped it for a message over the 32 MiB limit. "
            "Its tools now fail."
        ]
        # Never more held than the limit and the chunk being read (of 100 MB sent).
        assert peak < MAX_MESSAGE * 1.25
    finally:
        tracemalloc.stop()
        await servers.close()
