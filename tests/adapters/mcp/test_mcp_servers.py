"""The session's servers before any of them runs: nothing enabled, or no SDK."""

from __future__ import annotations

import pytest

from treadle.adapters.mcp import servers as servers_module
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.domain.values.events import Notice, TurnEvent


async def test_without_an_enabled_server_nothing_starts_and_nothing_is_said() -> None:
    servers = McpServers([McpServerConfig("off", command="x", enabled=False)], workspace=".")
    heard: list[TurnEvent] = []
    await servers.start(heard.append)
    assert servers.tools() == [] and heard == []
    assert [status.state for status in servers.statuses()] == ["disabled"]
    await servers.close()


def test_tools_are_listed_only_once_the_servers_started() -> None:
    servers = McpServers([McpServerConfig("on", command="x")], workspace=".")
    with pytest.raises(RuntimeError, match="must be started"):
        servers.tools()
    assert [status.state for status in servers.statuses()] == ["stopped"]


async def test_without_the_sdk_every_enabled_server_is_reported_and_the_session_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(servers_module, "CONNECTION_MODULE", "treadle_no_such_module")
    configs = [McpServerConfig("a", command="x"), McpServerConfig("b", url="http://h/mcp")]
    servers = McpServers(configs, workspace=".")
    heard: list[TurnEvent] = []
    await servers.start(heard.append)
    assert servers.tools() == []
    texts = [event.text for event in heard if isinstance(event, Notice)]
    assert texts == [
        f"MCP server {name} did not start: the MCP SDK cannot be loaded (No module named "
        "'treadle_no_such_module'). Its tools are not available."
        for name in "ab"
    ]
    assert [status.state for status in servers.statuses()] == ["failed", "failed"]
