"""An MCP tool in the turn loop, on a caller that answers at once: approvals, results,
failures, and sub-agents that get the same tools. (The real servers are in the
test_mcp_stdio and test_mcp_http tests.)"""

from __future__ import annotations

from typing import Any

import pytest
from returns.result import Failure, Result, Success

from tests.adapters.mcp.support import tool_context
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.mcp.tool import McpTool, is_allowed
from treadle.adapters.mcp.values import ListedTool, McpAnswer, McpCallFailure
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent
from treadle.domain.values.events import ToolFinished, ToolStarted
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.tools import ToolResult


class FakeServer:
    """A caller that answers from a table and remembers what it was asked."""

    def __init__(self, answers: dict[str, Result[McpAnswer, McpCallFailure]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any], float]] = []

    async def call(
        self, tool: str, arguments: dict[str, Any], timeout: float, context: object = None
    ) -> Result[McpAnswer, McpCallFailure]:
        self.calls.append((tool, arguments, timeout))
        return self.answers[tool]


SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def mcp_tool(server: FakeServer, name: str, *, read_only: bool = False, **options: Any) -> McpTool:
    listed = ListedTool(name, f"The {name} tool.", SCHEMA, read_only)
    return McpTool("files", listed, f"mcp__files__{name}", server, **options)


@pytest.fixture
def server() -> FakeServer:
    return FakeServer(
        {
            "read": Success(McpAnswer("contents")),
            "write": Success(McpAnswer("written")),
            "broken": Success(McpAnswer("disk full", is_error=True)),
            "slow": Failure(McpCallFailure("deadline", "no result within 3 s")),
        }
    )


def test_the_spec_names_the_server_and_keeps_the_schema(server) -> None:
    tool = mcp_tool(server, "read")
    assert tool.spec.name == "mcp__files__read"
    assert tool.spec.description == "The read tool. (MCP server files)"
    assert tool.spec.parameters == SCHEMA
    assert tool.describe({"path": "a.txt"}) == 'files: read {"path": "a.txt"}'
    assert len(tool.describe({"path": "x" * 500})) == 200


def test_the_configured_allow_list_takes_names_and_patterns() -> None:
    assert is_allowed("mcp__files__write", ["mcp__files__write"])
    assert is_allowed("mcp__files__write", ["mcp__files__*"])
    assert not is_allowed("mcp__files__write", ["mcp__other__*", "mcp__files__read"])


@pytest.mark.parametrize(
    ("policy", "name", "options", "ran"),
    [
        ("read-only", "read", {"read_only": True}, True),
        ("read-only", "write", {}, False),
        ("read-only", "write", {"allowed": True}, True),
        ("auto", "write", {}, True),
    ],
)
async def test_the_approval_policy_treats_mcp_tools_as_writing_unless_they_only_read(
    rig, server, policy, name, options, ran
) -> None:
    tool = mcp_tool(server, name, **options)
    run = rig(
        [R.calling(f"mcp__files__{name}", path="a.txt"), R.saying("Done.")],
        settings=TurnSettings(approval=policy),
    )
    agent = Agent(run.agent.ports, run.agent.settings, [tool])
    outcome = await agent.run_turn("go")
    assert outcome.kind is OutcomeKind.FINISHED
    assert bool(server.calls) is ran
    [finished] = [event for event in run.terminal.events if isinstance(event, ToolFinished)]
    assert (finished.status == "refused") is not ran


async def test_under_ask_a_headless_turn_is_blocked_by_a_writing_tool(rig, server) -> None:
    run = rig([R.calling("mcp__files__write", path="a.txt")], settings=TurnSettings(approval="ask"))
    agent = Agent(run.agent.ports, run.agent.settings, [mcp_tool(server, "write")])
    outcome = await agent.run_turn("go")
    assert outcome.kind is OutcomeKind.BLOCKED and "mcp__files__write" in outcome.screen_line
    assert server.calls == []


async def test_an_error_result_is_a_failed_call_and_a_missing_one_says_why(
    tmp_path, server
) -> None:
    broken = await mcp_tool(server, "broken").run({"path": "a"}, tool_context(tmp_path))
    assert isinstance(broken, ToolResult) and broken.status.startswith("tool error")
    assert (broken.text, broken.is_error) == ("The tool reported an error:\ndisk full", True)
    slow = await mcp_tool(server, "slow", timeout=3).run({"path": "a"}, tool_context(tmp_path))
    assert slow == ToolResult("Error: no result within 3 s", True, "deadline 3 s")
    assert server.calls[-1][2] == 3


async def test_without_its_own_deadline_a_tool_gets_the_configured_one(tmp_path, server) -> None:
    await mcp_tool(server, "read").run({"path": "a"}, tool_context(tmp_path))
    assert server.calls == [("read", {"path": "a"}, 10)]


async def test_a_sub_agent_gets_the_same_mcp_tools(rig, server) -> None:
    script = {
        "*": [R.calling("agent", task="read a.txt"), R.saying("The sub-agent read it.")],
        "read a.txt": [R.calling("mcp__files__read", path="a.txt"), R.saying("It says contents.")],
    }
    run = rig(script, settings=TurnSettings(approval="auto"))
    agent = Agent(run.agent.ports, run.agent.settings, [mcp_tool(server, "read")])
    outcome = await agent.run_turn("go")
    assert outcome.kind is OutcomeKind.FINISHED
    started = [e for e in run.terminal.events if isinstance(e, ToolStarted)]
    assert [(e.agent, e.call.name) for e in started] == [
        ("", "agent"),
        ("agent-1", "mcp__files__read"),
    ]
    assert server.calls == [("read", {"path": "a.txt"}, 120.0)]


async def test_the_model_calls_with_the_offered_names_and_the_server_gets_its_own(
    rig, server
) -> None:
    schema = {
        "type": "object",
        "properties": {"$top": {"type": "integer"}, "filter[id]": {"type": "string"}},
        "required": ["$top"],
    }
    tool = McpTool("files", ListedTool("read", "", schema, True), "mcp__files__read", server)
    assert list(tool.spec.parameters["properties"]) == ["_top", "filter_id_"]
    run = rig([R.calling("mcp__files__read", _top=2, filter_id_="a1"), R.saying("Done.")])
    agent = Agent(run.agent.ports, run.agent.settings, [tool])
    assert (await agent.run_turn("go")).kind is OutcomeKind.FINISHED
    assert server.calls == [("read", {"$top": 2, "filter[id]": "a1"}, 120.0)]
    [started] = [event for event in run.terminal.events if isinstance(event, ToolStarted)]
    assert started.summary == 'files: read {"$top": 2, "filter[id]": "a1"}'
