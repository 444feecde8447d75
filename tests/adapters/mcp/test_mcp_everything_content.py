"""server-everything's resources and prompts: a resource listed and read through
``mcp_resource``, a prompt expanded as ``/mcp__everything__PROMPT`` in a session and by
``treadle --command`` headless, and ``/help`` listing the prompts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.adapters.mcp.everything import everything
from tests.adapters.mcp.support import tool_context
from tests.entrypoints.test_interactive_loop import TypedTasks
from tests.processes import run_treadle, treadle_env
from treadle.adapters.fakes import FakeRunner, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers, PromptProblem
from treadle.adapters.system_clock import SystemClock
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.events import Notice
from treadle.domain.values.tools import ToolResult
from treadle.entrypoints.interactive import run_interactive
from treadle.entrypoints.trust import trust_folder

__all__ = ["everything"]
pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

FEATURES = "demo://resource/static/document/features.md"


@pytest_asyncio.fixture
async def servers(everything: Path, tmp_path: Path) -> AsyncIterator[McpServers]:
    config = McpServerConfig("everything", command="node", args=(str(everything), "stdio"))
    started = McpServers([config], workspace=str(tmp_path), log_dir=str(tmp_path))
    await started.start()
    try:
        yield started
    finally:
        await started.close()


async def test_a_resource_is_listed_and_read_through_one_tool(servers, tmp_path) -> None:
    (tool,) = servers.session_tools()
    assert tool.spec.name == "mcp_resource" and tool.access == "read"
    listed = await tool.run({"action": "list"}, tool_context(tmp_path))
    assert isinstance(listed, ToolResult) and not listed.is_error
    assert FEATURES in listed.text
    assert "demo://resource/dynamic/text/{resourceId} (template)" in listed.text
    read = await tool.run({"action": "read", "uri": FEATURES}, tool_context(tmp_path))
    assert isinstance(read, ToolResult) and not read.is_error
    assert "# Everything Server - Features" in read.text


async def test_a_resource_of_a_template_is_read_from_the_server_that_lists_it(
    servers, tmp_path
) -> None:
    (tool,) = servers.session_tools()
    uri = "demo://resource/dynamic/text/3"
    read = await tool.run({"action": "read", "uri": uri}, tool_context(tmp_path))
    assert isinstance(read, ToolResult) and not read.is_error and read.text


async def test_reading_what_no_server_has_says_so(servers, tmp_path) -> None:
    (tool,) = servers.session_tools()
    read = await tool.run(
        {"action": "read", "uri": "demo://nothing", "server": "everything"},
        tool_context(tmp_path),
    )
    assert isinstance(read, ToolResult) and read.is_error and "MCP error" in read.text


async def test_a_prompt_expands_with_its_arguments(servers) -> None:
    names = [c.name for c in servers.prompt_commands()]
    assert "mcp__everything__args-prompt" in names
    text = await servers.expand_prompt("mcp__everything__args-prompt", "Paris state=TX")
    assert text == "What's weather in Paris, TX?"
    with pytest.raises(PromptProblem, match="missing city"):
        await servers.expand_prompt("mcp__everything__args-prompt", "")


async def test_a_prompt_is_a_slash_command_of_the_session_and_help_lists_it(servers) -> None:
    model = ScriptedModel([R.saying("Sunny.")])
    prompt = TypedTasks("/help", "/mcp__everything__args-prompt 'San Antonio' TX")
    clock = SystemClock()
    ports = TurnPorts(model, clock, FakeRunner(clock), prompt, catalog=servers)
    agent = Agent(ports, TurnSettings(), subagents=False)
    await run_interactive(agent, prompt, mcp=servers)
    ((listing, _),) = prompt.said
    assert any(line.lstrip().startswith("/mcp__everything__args-prompt") for line in listing)
    assert model.requests[0].messages[0].text == "What's weather in San Antonio, TX?"
    said = [e.text for e in prompt.events if isinstance(e, Notice) and e.kind == "command_run"]
    assert said == ["/mcp__everything__args-prompt from MCP server everything"]


async def test_treadle_command_expands_a_prompt_headless(everything: Path, tmp_path: Path) -> None:
    table = {"command": "node", "args": [str(everything), "stdio"]}
    (tmp_path / ".treadle.toml").write_text(
        f"[mcp_servers.everything]\ncommand = {json.dumps(table['command'])}\n"
        f"args = {json.dumps(table['args'])}\n"
    )
    trust_folder(str(tmp_path), {"TREADLE_CONFIG_DIR": str(tmp_path / "config")})
    (tmp_path / "script.json").write_text(json.dumps({"responses": [{"text": "Sunny."}]}))
    env = treadle_env(tmp_path)
    model = f"script:{tmp_path / 'script.json'}"
    ran = run_treadle(
        "--model",
        model,
        "--json",
        "--command",
        "mcp__everything__args-prompt",
        "Paris",
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    started = [json.loads(line) for line in ran.stdout.splitlines()]
    tasks = [event["task"] for event in started if event["type"] == "turn_started"]
    assert tasks == ["What's weather in Paris?"]
    missing = run_treadle(
        "--model",
        model,
        "--print",
        "--command",
        "mcp__everything__args-prompt",
        cwd=tmp_path,
        env=env,
    )
    assert missing.returncode == 2
    assert (
        missing.stderr.strip()
        .splitlines()[-1]
        .startswith("treadle: mcp__everything__args-prompt: missing city")
    )


async def test_treadle_mcp_lists_the_servers_prompts_and_resources(everything: Path) -> None:
    from treadle.entrypoints.project_context import status_lines

    config = McpServerConfig("everything", command="node", args=(str(everything), "stdio"))
    servers = McpServers([config], workspace=".")
    await servers.start()
    try:
        (status,) = servers.statuses()
        lines = status_lines(status)
    finally:
        await servers.close()
    assert ", MCP 2025-11-25, in " in lines[0]
    assert lines[1].startswith("  prompts: /mcp__everything__simple-prompt")
    assert "/mcp__everything__args-prompt" in lines[1]
    assert lines[2] == "  resources: through mcp_resource"
