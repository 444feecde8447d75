"""The turn loop's own cost: a long turn on the scripted model with a no-op tool.

Time per request must not grow with the length of the turn (no quadratic copying of
the history): the figure at 1,000 requests is compared with the one at 10 in the same run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from treadle.adapters.fakes import (
    FakeClock,
    FakeRunner,
    ScriptedModel,
    ScriptedResponse,
    SilentTerminal,
)
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext


class NoOpTool:
    spec = ToolSpec("noop", "Does nothing.", {"type": "object", "properties": {}})
    access: Access = "none"

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return ""

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolResult("ok")


async def _turn(requests: int) -> float:
    script = [ScriptedResponse.calling("noop") for _ in range(requests - 1)]
    script.append(ScriptedResponse.saying("done"))
    clock = FakeClock()
    model = ScriptedModel(script, clock, keep_requests=False)
    ports = TurnPorts(model, clock, FakeRunner(clock), SilentTerminal())
    agent = Agent(ports, TurnSettings(), [NoOpTool()], subagents=False)
    started = time.perf_counter()
    outcome = await agent.run_turn("bench")
    elapsed = time.perf_counter() - started
    assert outcome.exit_code == 0 and agent.requests == requests
    return elapsed


def run() -> list[str]:
    per_request: dict[int, float] = {}
    for requests in (10, 100, 1000):
        best = min(asyncio.run(_turn(requests)) for _ in range(3))
        per_request[requests] = best / requests
    lines = [f"loop: {n:>5} requests  {per_request[n] * 1e6:8.1f} µs/request" for n in per_request]
    growth = per_request[1000] / per_request[10]
    lines.append(
        f"loop: growth of time per request from 10 to 1,000 requests: {growth:.2f}× "
        "(linear turn: about 1×)"
    )
    return lines
