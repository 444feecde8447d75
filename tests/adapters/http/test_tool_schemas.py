"""The tool list with MCP tools passes both providers' rules: the real HTTP test server
answers a request as OpenAI or Anthropic would, 400 for a tool they refuse."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.adapters.http.server import Reply, ScriptedServer
from tests.adapters.http.support import KEY, a_request, listen, stream_file
from tests.adapters.mcp.support import REFERENCE_SERVER, stdio_server
from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.mcp.tool import McpTool
from treadle.domain.values.model import HttpStatusError, ToolSpec
from treadle.entrypoints.container import build_tools

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mcp_tools(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[list[McpTool]]:
    folder = tmp_path_factory.mktemp("schemas")
    servers = McpServers(
        [
            stdio_server("test", folder),
            McpServerConfig(
                "time", command=str(REFERENCE_SERVER), args=("--local-timezone", "UTC")
            ),
        ],
        workspace=str(folder),
    )
    await servers.start()
    try:
        tools = [tool for tool in servers.tools() if isinstance(tool, McpTool)]
        assert len(tools) > 10
        yield tools
    finally:
        await servers.close()


def openai(server: ScriptedServer) -> OpenAIChatModel:
    return OpenAIChatModel(model="gpt-test", base_url=f"{server.base_url}/v1", api_key=KEY)


def anthropic(server: ScriptedServer) -> AnthropicModel:
    return AnthropicModel(model="claude-test", base_url=server.base_url, api_key=KEY)


@pytest.mark.parametrize(
    ("adapter", "reply"),
    [(openai, "openai-chat/text_with_usage.sse"), (anthropic, "anthropic/basic_response.sse")],
)
async def test_the_whole_tool_list_with_mcp_tools_is_accepted(mcp_tools, adapter, reply) -> None:
    async with ScriptedServer.running([Reply.sse(stream_file(reply))]) as server:
        specs = [tool.spec for tool in build_tools()] + [tool.spec for tool in mcp_tools]
        heard = await listen(adapter(server).stream(a_request(tools=specs)))
    assert heard.failure is None and server.refused == 0
    sent = server.requests[0].json()["tools"]
    assert len(sent) == len(specs)


@pytest.mark.parametrize("adapter", [openai, anthropic])
async def test_the_servers_own_names_and_schemas_would_be_refused(mcp_tools, adapter) -> None:
    """What the servers list, offered as is: the checker refuses it, as the providers do."""
    as_listed = [
        ToolSpec(tool.listed.name, tool.listed.description, tool.listed.input_schema)
        for tool in mcp_tools
    ]
    async with ScriptedServer.running() as server:
        heard = await listen(adapter(server).stream(a_request(tools=as_listed)))
    assert isinstance(heard.failure, HttpStatusError) and heard.failure.status == 400
    assert server.refused == 1


@pytest.mark.parametrize(
    ("name", "schema", "refused_by"),
    [
        ("files.read", {"type": "object", "properties": {}}, {"openai", "anthropic"}),
        ("pick", {"type": "object", "properties": {}, "anyOf": []}, {"openai", "anthropic"}),
        ("nothing", {"type": "object"}, {"openai"}),
        ("tag", {"type": "object", "properties": {"t": {"type": "array"}}}, {"openai"}),
        ("x" * 65, {"type": "object", "properties": {}}, {"openai", "anthropic"}),
        ("query", {"type": "object", "properties": {"user name": {}}}, {"anthropic"}),
        ("deep", {"type": "object", "properties": {"o": {"properties": {"$": {}}}}}, {"anthropic"}),
        ("long", {"type": "object", "properties": {"k" * 65: {}}}, {"anthropic"}),
        ("fine", {"type": "object", "properties": {"a.b-c_1": {}, "k" * 64: {}}}, set()),
    ],
)
async def test_each_rule_of_the_checker_refuses_what_its_provider_does(
    name, schema, refused_by
) -> None:
    tools = [ToolSpec(name, "", schema)]
    refused = set()
    for provider, adapter in (("openai", openai), ("anthropic", anthropic)):
        async with ScriptedServer.running(
            [Reply.sse(stream_file("openai-chat/text_with_usage.sse"))]
        ) as server:
            await listen(adapter(server).stream(a_request(tools=tools)))
        if server.refused:
            refused.add(provider)
    assert refused == refused_by
