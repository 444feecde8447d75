"""MCP tools loaded on demand: past their share of the window, a request carries
``tool_search`` and the tools it loaded instead of every schema."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.history import History
from treadle.domain.rules.tool_offer import (
    LOADED,
    TOOL_SEARCH,
    UNKNOWN_WINDOW,
    loaded_tools,
    offer_tools,
    search_spec,
    search_tools,
    spec_tokens,
)
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.events import Notice
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import Tool, ToolContext

SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for, in plain words."},
        "limit": {"type": "integer", "description": "At most this many results."},
        "cursor": {"type": "string", "description": "Where the previous page ended."},
    },
}


def spec(index: int) -> ToolSpec:
    topic = "weather forecast" if index == 321 else f"records of kind {index}"
    return ToolSpec(f"mcp__big__tool_{index}", f"Look up {topic} in the big service.", SCHEMA)


class ListedTool:
    """One of a server's many tools: it answers with its name."""

    access: Access = "read"

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        self.calls: list[Mapping[str, Any]] = []

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return self.spec.name

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        self.calls.append(arguments)
        return ToolResult(f"{self.spec.name} answered", False, "ok")


class Catalog:
    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = list(tools)

    def catalog_tools(self) -> Sequence[Tool]:
        return self.tools


def test_tools_that_fit_their_share_are_all_offered_and_no_search() -> None:
    specs = [spec(i) for i in range(3)]
    assert offer_tools(specs, (), window=100_000, share=0.1).names == tuple(s.name for s in specs)
    assert not offer_tools(specs, (), window=100_000, share=0.1).search


def test_past_their_share_only_the_loaded_tools_are_offered_with_the_search() -> None:
    specs = [spec(i) for i in range(500)]
    offer = offer_tools(specs, ("mcp__big__tool_7", "mcp__big__gone"), window=128_000, share=0.1)
    assert offer == offer_tools(specs, ("mcp__big__tool_7",), window=128_000, share=0.1)
    assert offer.names == ("mcp__big__tool_7",) and offer.search


def test_loaded_tools_that_outgrow_the_share_drop_the_earliest_loaded() -> None:
    specs = [spec(i) for i in range(500)]
    each = spec_tokens(specs[0])
    window = (spec_tokens(search_spec()) + 2 * each) * 10  # room for two of them
    loaded = ("mcp__big__tool_1", "mcp__big__tool_2", "mcp__big__tool_3")
    assert offer_tools(specs, loaded, window=window, share=0.1).names == (
        "mcp__big__tool_2",
        "mcp__big__tool_3",
    )


def test_a_search_finds_by_words_of_the_description_and_exact_names() -> None:
    specs = [spec(i) for i in range(500)]
    assert search_tools("weather", specs) == ("mcp__big__tool_321",)
    assert search_tools("mcp__big__tool_9,mcp__big__tool_8", specs) == (
        "mcp__big__tool_9",
        "mcp__big__tool_8",
    )
    assert search_tools("nothing-like-it", specs) == ()


def test_what_was_loaded_is_read_back_from_the_conversation() -> None:
    call = ToolCall("c1", TOOL_SEARCH, "{}")
    other = ToolCall("c2", "bash", "{}")
    messages = [
        Message.assistant("", (call, other)),
        Message.tool("c1", LOADED + "mcp__a__x, mcp__a__y\n- mcp__a__x: …"),
        Message.tool("c2", LOADED + "mcp__not__a_search"),
    ]
    assert loaded_tools(messages) == ("mcp__a__x", "mcp__a__y")


def test_500_tools_over_the_budget_are_found_loaded_and_called() -> None:
    tools = [ListedTool(spec(i)) for i in range(500)]
    model = ScriptedModel(
        [
            R.calling(TOOL_SEARCH, query="weather forecast"),
            R.calling("mcp__big__tool_321", query="Paris"),
            R.saying("It is sunny."),
        ]
    )
    clock = FakeClock()
    terminal = RecordingTerminal()
    ports = TurnPorts(model, clock, FakeRunner(clock), terminal, catalog=Catalog(tools))
    agent = Agent(ports, TurnSettings(), subagents=False)
    outcome = asyncio.run(agent.run_turn("what is the weather?"))
    assert outcome.kind is OutcomeKind.FINISHED
    first, second, third = (list(r.tools) for r in model.requests)
    assert TOOL_SEARCH in [s.name for s in first]
    assert not [s for s in first if s.name.startswith("mcp__")]  # no MCP schema at all
    assert "mcp__big__tool_321" in [s.name for s in second]
    assert tools[321].calls == [{"query": "Paris"}]
    results = [m.text for m in model.requests[2].messages if m.role == "tool"]
    assert results[-1] == "mcp__big__tool_321 answered"
    budget = UNKNOWN_WINDOW * TurnSettings().mcp_tool_budget
    for offered in (first, second, third):
        outside = [s for s in offered if s.name.startswith("mcp__") or s.name == TOOL_SEARCH]
        assert sum(spec_tokens(s) for s in outside) <= budget
    assert sum(spec_tokens(t.spec) for t in tools) > budget  # all of them would not fit
    loaded = [n for n in terminal.of_type(Notice) if n.kind == "mcp_tools_loaded"]
    assert loaded and "mcp__big__tool_321" in loaded[0].text  # the transcript records it

    # A resumed (or replayed) conversation offers what was loaded in it.
    again = Agent(ports, TurnSettings(), subagents=False, history=History(agent.history.messages))
    assert "mcp__big__tool_321" in [s.name for s in again.offered_specs()]


def test_tools_within_the_budget_are_offered_whole_without_the_search() -> None:
    tools = [ListedTool(spec(i)) for i in range(3)]
    model = ScriptedModel([R.saying("Fine.")])
    clock = FakeClock()
    ports = TurnPorts(model, clock, FakeRunner(clock), RecordingTerminal(), catalog=Catalog(tools))
    asyncio.run(Agent(ports, TurnSettings(), subagents=False).run_turn("hi"))
    names = [s.name for s in model.requests[0].tools]
    assert TOOL_SEARCH not in names and {t.spec.name for t in tools} <= set(names)


def test_a_tool_a_server_adds_mid_session_is_offered_from_the_next_request() -> None:
    catalog = Catalog([ListedTool(spec(1))])
    model = ScriptedModel([R.calling("bash", command="true"), R.saying("Done.")])
    clock = FakeClock()
    ports = TurnPorts(model, clock, FakeRunner(clock), RecordingTerminal(), catalog=catalog)
    agent = Agent(ports, TurnSettings(), subagents=False)
    first = [s.name for s in agent.offered_specs()]
    catalog.tools.append(ListedTool(spec(2)))  # notifications/tools/list_changed
    assert "mcp__big__tool_2" not in first
    assert "mcp__big__tool_2" in [s.name for s in agent.offered_specs()]
