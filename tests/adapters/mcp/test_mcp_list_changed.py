"""A server that changes its tools mid-session (``notifications/tools/list_changed``):
the next request offers its new list, and the new tool is called."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.mcp.support import stdio_server
from treadle.adapters.fakes import FakeRunner, RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.system_clock import SystemClock
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.events import Notice
from treadle.domain.values.outcome import OutcomeKind

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]


async def test_a_tool_the_server_adds_mid_session_is_offered_and_called(tmp_path: Path) -> None:
    servers = McpServers(
        [stdio_server("test", tmp_path)], workspace=str(tmp_path), log_dir=str(tmp_path)
    )
    terminal = RecordingTerminal()
    await servers.start(terminal.show)
    try:
        model = ScriptedModel(
            [R.calling("mcp__test__grow"), R.calling("mcp__test__grown"), R.saying("Done.")]
        )
        clock = SystemClock()
        ports = TurnPorts(model, clock, FakeRunner(clock), terminal, catalog=servers)
        outcome = await Agent(ports, TurnSettings(), subagents=False).run_turn("grow")
        assert outcome.kind is OutcomeKind.FINISHED
        first, second = ([s.name for s in r.tools] for r in model.requests[:2])
        assert "mcp__test__grown" not in first and "mcp__test__grown" in second
        results = [m.text for m in model.requests[2].messages if m.role == "tool"]
        assert results[-1] == "grown answered"
        changed = [e.text for e in terminal.of_type(Notice) if e.kind == "mcp_tools_changed"]
        assert changed and changed[0].startswith("MCP server test changed its tools")
    finally:
        await servers.close()
