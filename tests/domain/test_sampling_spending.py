"""An MCP server's request for a completion (sampling) is a request of the turn: its
tokens count toward ``--max-tokens-total`` and ``--max-cost``, the request toward
``--max-requests``, and once the turn has reached a limit the next one is declined."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.limits import SpendingLimits
from treadle.domain.values.conversation import Usage
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome
from treadle.domain.values.prices import Prices
from treadle.domain.values.server_requests import SamplingMessage, SamplingReply, SamplingRequest
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

ASKED = "Summarise the release notes."


class SamplingTool:
    """An MCP tool whose server asks the session's model for ``times`` completions."""

    spec = ToolSpec("mcp__srv__summarise", "Summarises.", {"type": "object", "properties": {}})
    access: Access = "read"

    def __init__(self, times: int = 1) -> None:
        self.times = times
        self.replies: list[SamplingReply] = []

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return ""

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        for _ in range(self.times):
            asked = SamplingRequest("srv", (SamplingMessage("user", ASKED),))
            self.replies.append(await context.sample(asked))
        return ToolResult(" / ".join(r.text or r.why for r in self.replies), False, "ok")


def run(limits: SpendingLimits, times: int = 1) -> tuple[TurnOutcome, ScriptedModel, SamplingTool]:
    """A turn that calls the tool once (15 tokens), whose server's completions cost 1,100
    tokens each; then the model would answer."""
    model = ScriptedModel(
        {
            "*": [R.calling("mcp__srv__summarise"), R.saying("Done.")],
            ASKED: [R(("Notes.",), usage=Usage(600, 500))] * times,
        }
    )
    clock = FakeClock()
    ports = TurnPorts(model, clock, FakeRunner(clock), RecordingTerminal())
    tool = SamplingTool(times)
    settings = TurnSettings(spending=limits, prices=Prices(input=10_000.0, output=10_000.0))
    agent = Agent(ports, settings, [tool], subagents=False)
    return asyncio.run(agent.run_turn("go")), model, tool


def main_requests(model: ScriptedModel) -> int:
    return sum(1 for r in model.requests if r.messages[0].text == "go")


def test_a_completions_tokens_count_toward_max_tokens_total() -> None:
    outcome, model, _ = run(SpendingLimits(tokens=1_000))
    assert (outcome.kind, outcome.reason) == (OutcomeKind.BLOCKED, FailureKind.SPENDING_LIMIT)
    assert outcome.detail == "spending limit reached: 1,115 of 1,000 tokens"
    assert main_requests(model) == 1  # the answer after the call is never asked for


def test_a_completions_cost_counts_toward_max_cost() -> None:
    # A cent a token: $11 for the completion, 15 cents for the call.
    outcome, _, _ = run(SpendingLimits(cost=5.0))
    assert outcome.detail == "spending limit reached: $11.15 of $5.00"


def test_a_completion_is_a_request_toward_max_requests() -> None:
    outcome, model, _ = run(SpendingLimits(requests=2))
    assert outcome.detail == "spending limit reached: 2 of 2 requests"
    assert main_requests(model) == 1


def test_a_completion_asked_for_past_a_limit_is_declined() -> None:
    outcome, model, tool = run(SpendingLimits(tokens=1_000), times=2)
    first, second = tool.replies
    assert first.text == "Notes."
    assert (
        second.declined and second.why == "the turn's spending limit reached: 1,115 of 1,000 tokens"
    )
    assert len(model.requests) == 2  # the turn's first, and one completion
    assert outcome.kind is OutcomeKind.BLOCKED


def test_within_the_limits_the_turn_finishes() -> None:
    outcome, _, tool = run(SpendingLimits(tokens=10_000, requests=5))
    assert outcome.kind is OutcomeKind.FINISHED and tool.replies[0].text == "Notes."
