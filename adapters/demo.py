"""The built-in ``demo`` model: a scripted turn that shows every behaviour of the loop.

No key and no network; the tools are real and run in the current folder. The turn
announces its task and a plan, runs a few real (read-only) commands, meets a reset
connection that is retried after the seed's pause, hands a sub-task to a sub-agent
that reports its progress and is stopped at its deadline with a report, and writes
a final answer that is cut by its token budget and continued.

Every later task of the same session gets a short, honest answer: the demo has no
model behind it, and says which to choose instead.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from returns.result import Result

from treadle.adapters.fakes.model import ScriptedModel, ScriptedResponse
from treadle.adapters.fakes.window import request_tokens
from treadle.domain.rules.compaction import COMPACT_REQUEST
from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.model import (
    ModelError,
    ModelRequest,
    ServerFacts,
    StreamEvent,
    TransportError,
)
from treadle.ports.clock import Clock

SUB_TASK = "Find the five largest files here, then wait on a slow check."
SUB_CHECK_INTERVAL = 1.0
SUB_DEADLINE = 3.0

PLAN = [
    "Look at the folder",
    "Count the source files",
    "Hand the size survey to a sub-agent",
    "Write the summary",
]


def _plan(done: int) -> ToolCall:
    steps = [
        {
            "step": step,
            "status": "completed" if i < done else "in_progress" if i == done else "pending",
        }
        for i, step in enumerate(PLAN)
    ]
    return ToolCall(f"plan_{done}", "update_plan", json.dumps({"steps": steps}))


def _bash(call_id: str, command: str, timeout: float | None = None) -> ToolCall:
    arguments: dict[str, object] = {"command": command}
    if timeout is not None:
        arguments["timeout"] = timeout
    return ToolCall(call_id, "bash", json.dumps(arguments))


def _say(text: str) -> tuple[str, ...]:
    words = text.split(" ")
    return tuple(word + (" " if i < len(words) - 1 else "") for i, word in enumerate(words))


def demo_script(delay: float = 0.02) -> dict[str, list[ScriptedResponse]]:
    main = [
        ScriptedResponse(
            _say(
                "I'll look around this folder and show how I work: plan, commands, a sub-agent.\n"
            ),
            (_plan(0), _bash("ls", "ls -la | head -n 15")),
            Usage(1200, 60),
            chunk_delay=delay,
        ),
        ScriptedResponse(failure=TransportError("connection_reset", "connection reset by peer")),
        ScriptedResponse(
            _say("Now counting the source files.\n"),
            (
                _plan(1),
                _bash(
                    "count",
                    "find . -name '*.py' -not -path './.venv/*' -not -path './build/*' | wc -l",
                ),
            ),
            Usage(1500, 45),
            chunk_delay=delay,
        ),
        ScriptedResponse(
            _say("A sub-agent will survey the file sizes while I wait.\n"),
            (
                _plan(2),
                ToolCall(
                    "sub",
                    "agent",
                    json.dumps(
                        {
                            "task": SUB_TASK,
                            "check_interval": SUB_CHECK_INTERVAL,
                            "deadline": SUB_DEADLINE,
                        }
                    ),
                ),
            ),
            Usage(1800, 50),
            chunk_delay=delay,
        ),
        ScriptedResponse(
            _say(
                "Summary: I listed the folder, counted its Python files and had a sub-agent "
                "survey the largest files; it was stopped at its deadline and",
            ),
            usage=Usage(2300, 40),
            stop="max_tokens",
            chunk_delay=delay,
        ),
        ScriptedResponse(
            _say(
                " reported back what it found. Everything ran for real in this folder; "
                "nothing was changed. The turn is complete.\n",
            ),
            usage=Usage(2350, 30),
            chunk_delay=delay,
        ),
    ]
    sub = [
        ScriptedResponse(
            _say("Surveying sizes.\n"),
            (_bash("du", "du -a . 2>/dev/null | sort -rn | head -n 5"),),
            Usage(600, 30),
            chunk_delay=delay,
        ),
        ScriptedResponse(
            _say("Now the slow check.\n"),
            (_bash("slow", "sleep 30", timeout=60),),
            Usage(800, 20),
            chunk_delay=delay,
        ),
        ScriptedResponse(
            _say(
                "Report: I listed the five largest entries with du. The slow check was "
                "still running at my deadline, so it is unfinished.",
            ),
            usage=Usage(900, 35),
            chunk_delay=delay,
        ),
    ]
    return {"*": main, SUB_TASK: sub}


def after_the_tour(task: str) -> str:
    """The demo's answer to a task after its first: what it is, and what to run instead."""
    shown = " ".join(task.split())
    shown = shown if len(shown) <= 60 else shown[:59] + "…"
    return (
        f"I am treadle's demo model: I play one scripted tour and cannot work on “{shown}”. "
        "To have it done, choose a real model, for example `treadle --model openai:gpt-4.1` "
        "or `--model anthropic:claude-sonnet-4-5` (`treadle --help` lists them all).\n"
    )


class DemoModel:
    """The Model port for ``demo``: the scripted tour for a session's first task (and its
    sub-agent), then :func:`after_the_tour` for every task that follows."""

    def __init__(self, tour: ScriptedModel, clock: Clock | None = None, delay: float = 0.02):
        self._tour = tour
        self._clock = clock
        self._delay = delay

    async def facts(self) -> ServerFacts:
        return await self._tour.facts()

    def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        said = [m.text for m in request.messages if m.role == "user"] or [""]
        # The sub-agent's own notes (its deadline) and a compaction stay on the script.
        on_tour = said[-1] == said[0] and self._tour.remaining() > 0
        if on_tour or said[0] == SUB_TASK or said[-1] == COMPACT_REQUEST:
            return self._tour.stream(request)
        answer = ScriptedResponse(
            _say(after_the_tour(said[-1])),
            usage=Usage(request_tokens(request), 60),
            chunk_delay=self._delay,
        )
        return ScriptedModel([answer], self._clock).stream(request)


def demo_model(clock: Clock | None = None, delay: float = 0.02) -> DemoModel:
    """The demo scenario as a model; ``delay`` paces the streamed words on ``clock``."""
    return DemoModel(ScriptedModel(demo_script(delay), clock), clock, delay)
