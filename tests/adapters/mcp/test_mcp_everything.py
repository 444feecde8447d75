"""Against the protocol's own test server (server-everything, from npm): its questions
reach the person (or are declined headless), its requests for a completion reach the
session's model once approved, over stdio and streamable HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_asyncio

from tests.adapters.mcp.everything import everything, everything_over_http
from treadle.adapters.fakes import FakeRunner, RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.system_clock import SystemClock
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.approval import ApprovalPolicy
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import TurnEnded
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.tools import ApprovalAnswer

__all__ = ["everything"]
pytestmark = [pytest.mark.slow, pytest.mark.asyncio]

ELICIT = "mcp__everything__trigger-elicitation-request"
SAMPLE = "mcp__everything__trigger-sampling-request"


def stdio(entry: Path) -> McpServerConfig:
    return McpServerConfig("everything", command="node", args=(str(entry), "stdio"))


@pytest_asyncio.fixture
async def servers(everything: Path, tmp_path: Path) -> AsyncIterator[McpServers]:
    started = McpServers([stdio(everything)], workspace=str(tmp_path), log_dir=str(tmp_path))
    await started.start()
    try:
        yield started
    finally:
        await started.close()


def agent_on(
    servers: McpServers,
    model: ScriptedModel,
    terminal: RecordingTerminal,
    approval: ApprovalPolicy = "ask",
) -> Agent:
    clock = SystemClock()
    ports = TurnPorts(model, clock, FakeRunner(clock), terminal)
    tools = [*core_tools(), *servers.tools()]
    return Agent(ports, TurnSettings(approval=approval), tools, subagents=False)


def person(approvals: Sequence[ApprovalAnswer], answers: Sequence[str]) -> RecordingTerminal:
    return RecordingTerminal(approvals=approvals, answers=answers)


async def test_the_servers_form_is_asked_of_the_person_and_gets_their_answers(servers) -> None:
    model = ScriptedModel([R.calling(ELICIT), R.saying("Thanks.")])
    # Yes to the call; yes to the form; a name, a yes to the terms, the defaults after.
    terminal = person(["yes"], ["y", "Ada Lovelace", "yes", *[""] * 20])
    outcome = await agent_on(servers, model, terminal).run_turn("fill in the form")
    assert outcome.kind is OutcomeKind.FINISHED
    text = _tool_text(model)
    assert "User provided the requested information" in text
    assert "- Name: Ada Lovelace" in text and "- Agreed to terms: true" in text
    assert "- Favorite Integer: 42" in text  # a default taken with Enter
    assert terminal.questions[0].startswith("MCP server everything asks: Please provide")
    assert terminal.questions[1].startswith("String — Your full, legal name (text, required)")


async def test_the_person_may_decline_the_servers_form(servers) -> None:
    model = ScriptedModel([R.calling(ELICIT), R.saying("Understood.")])
    terminal = person(["yes"], ["n"])
    await agent_on(servers, model, terminal).run_turn("fill in the form")
    assert "User declined to provide the requested information" in _tool_text(model)


async def test_headless_the_servers_question_is_declined_and_the_turn_goes_on(servers) -> None:
    model = ScriptedModel([R.calling(ELICIT), R.saying("The server's form was declined.")])
    terminal = RecordingTerminal()  # nobody to answer, as --print
    outcome = await agent_on(servers, model, terminal, "auto").run_turn("fill in the form")
    assert outcome.kind is OutcomeKind.FINISHED
    assert "User declined to provide the requested information" in _tool_text(model)


async def test_the_servers_request_for_a_completion_reaches_the_model_once_approved(
    servers,
) -> None:
    sampled = R.saying("Hello from the session's model", usage=Usage(30, 7))
    model = ScriptedModel(
        [R.calling(SAMPLE, prompt="Say hello", maxTokens=50), sampled, R.saying("Done.")]
    )
    terminal = person(["yes", "yes"], [])
    agent = agent_on(servers, model, terminal)
    outcome = await agent.run_turn("sample")
    assert outcome.kind is OutcomeKind.FINISHED
    assert [r.tool for r in terminal.approval_requests] == [SAMPLE, "mcp_sampling"]
    asked = model.requests[1]
    assert asked.system == "You are a helpful test server." and asked.tools == ()
    assert "Say hello" in asked.messages[-1].text and asked.max_tokens == 50
    assert "Hello from the session's model" in _tool_text(model)
    ended = terminal.of_type(TurnEnded)[-1]
    assert ended.usage.input_tokens >= 30 + 10 + 10  # the completion's tokens are the turn's


async def test_a_completion_the_person_refuses_is_not_asked_of_the_model(servers) -> None:
    model = ScriptedModel([R.calling(SAMPLE, prompt="Say hello"), R.saying("It was refused.")])
    terminal = person(["yes", "no"], [])
    await agent_on(servers, model, terminal).run_turn("sample")
    assert len(model.requests) == 2  # the call's request and the last: none for the server
    assert "Declined" in _tool_text(model) or "declined" in _tool_text(model)


async def test_read_only_declines_a_completion(everything: Path, tmp_path: Path) -> None:
    allowed = McpServers(
        [stdio(everything)], workspace=str(tmp_path), allowed=[SAMPLE], log_dir=str(tmp_path)
    )
    await allowed.start()
    try:
        model = ScriptedModel([R.calling(SAMPLE, prompt="Say hello"), R.saying("Declined.")])
        terminal = person([], [])
        await agent_on(allowed, model, terminal, "read-only").run_turn("sample")
        assert terminal.approval_requests == []
        assert "read-only" in _tool_text(model)
    finally:
        await allowed.close()


async def test_over_streamable_http_the_form_reaches_the_person(
    everything: Path, tmp_path: Path
) -> None:
    with everything_over_http(everything, tmp_path / "http.log") as url:
        config = McpServerConfig("everything", url=url)
        over_http = McpServers([config], workspace=str(tmp_path))
        await over_http.start()
        try:
            model = ScriptedModel([R.calling(ELICIT), R.saying("Thanks.")])
            terminal = person(["yes"], ["y", "Grace Hopper", "no", *[""] * 20])
            await agent_on(over_http, model, terminal).run_turn("fill in the form")
            text = _tool_text(model)
            assert "- Name: Grace Hopper" in text and "- Agreed to terms: false" in text
        finally:
            await over_http.close()


def _tool_text(model: ScriptedModel) -> str:
    """What the last request sent back as the tool's result."""
    return next(m.text for m in reversed(model.requests[-1].messages) if m.role == "tool")
