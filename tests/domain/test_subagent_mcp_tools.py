"""A named sub-agent whose definition lists its tools gets only the MCP tools the list
names (by their offered names, ``mcp__server__tool``); a list that names none of them
gives it none, not even ``tool_search``; a definition without a list gets them all."""

from __future__ import annotations

import asyncio

from tests.domain.test_tool_offer import Catalog, ListedTool, spec
from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.events import Notice
from treadle.domain.values.model import ModelRequest
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.workflows import AgentDefinition


def helper(tools: tuple[str, ...] | None) -> AgentDefinition:
    return AgentDefinition("helper", "Helps.", "/agents/helper.md", "user", "Help.", tools)


def sub_agent_request(
    tools: tuple[str, ...] | None, how_many: int = 3, *, call: str = ""
) -> tuple[ModelRequest, RecordingTerminal, list[ListedTool]]:
    """The first request the named sub-agent makes, with a catalog of ``how_many`` MCP
    tools; it calls ``call`` when given."""
    listed = [ListedTool(spec(i)) for i in range(how_many)]
    first = [R.calling(call, query="q")] if call else []
    model = ScriptedModel(
        {
            "*": [R.calling("agent", task="sub", agent="helper"), R.saying("Done.")],
            "sub": [*first, R.saying("Sub done.")],
        }
    )
    clock = FakeClock()
    terminal = RecordingTerminal()
    ports = TurnPorts(model, clock, FakeRunner(clock), terminal, catalog=Catalog(listed))
    agent = Agent(ports, TurnSettings(agents=(helper(tools),)))
    outcome = asyncio.run(agent.run_turn("main"))
    assert outcome.kind is OutcomeKind.FINISHED
    asked = [r for r in model.requests if r.messages and r.messages[0].text == "sub"]
    return asked[0], terminal, listed


def names(request: ModelRequest) -> set[str]:
    return {s.name for s in request.tools}


def test_a_list_naming_one_mcp_tool_gives_only_that_one() -> None:
    request, terminal, listed = sub_agent_request(
        ("bash", "mcp__big__tool_1"), call="mcp__big__tool_1"
    )
    assert names(request) == {"bash", "mcp__big__tool_1"}
    assert listed[1].calls == [{"query": "q"}]
    said = [n.text for n in terminal.of_type(Notice) if n.kind == "agent_named"]
    assert said and said[0].endswith("tools: bash, mcp__big__tool_1")


def test_a_tool_not_on_the_list_cannot_be_called_by_its_name() -> None:
    request, _, listed = sub_agent_request(("bash",), call="mcp__big__tool_2")
    assert names(request) == {"bash"}  # no MCP tool and no tool_search
    assert listed[2].calls == []


def test_the_budget_counts_only_the_listed_tools() -> None:
    request, _, listed = sub_agent_request(
        ("mcp__big__tool_7", "mcp__big__tool_9"), how_many=500, call="mcp__big__tool_8"
    )
    # 500 would need tool_search; the two it may have fit and are offered whole.
    assert names(request) == {"mcp__big__tool_7", "mcp__big__tool_9"}
    assert listed[8].calls == []


def test_a_definition_without_a_list_gets_every_mcp_tool() -> None:
    request, _, _ = sub_agent_request(None)
    assert {"mcp__big__tool_0", "mcp__big__tool_1", "mcp__big__tool_2", "bash"} <= names(request)


def test_a_sub_agent_the_named_one_starts_has_no_more_mcp_tools_than_it() -> None:
    listed = [ListedTool(spec(i)) for i in range(3)]
    model = ScriptedModel(
        {
            "*": [R.calling("agent", task="sub", agent="helper"), R.saying("Done.")],
            "sub": [R.calling("agent", task="inner"), R.saying("Sub done.")],
            "inner": [R.saying("Inner done.")],
        }
    )
    clock = FakeClock()
    ports = TurnPorts(model, clock, FakeRunner(clock), RecordingTerminal(), catalog=Catalog(listed))
    agent = Agent(ports, TurnSettings(agents=(helper(("agent", "mcp__big__tool_1")),)))
    assert asyncio.run(agent.run_turn("main")).kind is OutcomeKind.FINISHED
    inner = next(r for r in model.requests if r.messages and r.messages[0].text == "inner")
    assert {n for n in names(inner) if n.startswith("mcp__")} == {"mcp__big__tool_1"}
