"""A model that plays a script: text in chunks, tool calls, usage, stops and failures.

Example::

    model = ScriptedModel([
        ScriptedResponse.calling("bash", command="ls"),
        ScriptedResponse.saying("All done.", chunks=3),
    ])

A script can also be a mapping from a conversation's first user message (its task)
to its own list of responses, so sub-agents get theirs; ``"*"`` is the default. A
compaction's summary request is answered from ``summaries`` (or with a plain summary
of its own), never from the script. Given a :class:`FakeWindow`, the model keeps to a
context window as a real server does (:mod:`treadle.adapters.fakes.window`)::

    model = ScriptedModel(script, window=FakeWindow(8192, like="anthropic"))
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from returns.result import Failure, Result, Success

from treadle.adapters.fakes.window import FakeWindow, WindowedServer
from treadle.domain.rules.compaction import COMPACT_REQUEST
from treadle.domain.values.conversation import Reasoning, ToolCall, Usage
from treadle.domain.values.model import (
    HttpStatusError,
    MalformedStream,
    ModelError,
    ModelRequest,
    ReasoningReady,
    ReasoningText,
    ServerFacts,
    StopReason,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    TransportError,
    UsageReported,
)
from treadle.ports.clock import Clock


@dataclass(frozen=True, slots=True)
class ScriptedResponse:
    """One scripted answer.

    ``failure`` replaces the end of the stream: with no ``text`` it fails before any
    text, otherwise after the chunks. ``chunk_delay`` is clock time between chunks.
    ``stop`` defaults to ``tool_use`` when there are calls, else ``end_turn``.
    ``reasoning`` streams first, each piece's text then the piece itself.
    """

    text: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop: StopReason | None = None
    failure: ModelError | None = None
    chunk_delay: float = 0.0
    reasoning: tuple[Reasoning, ...] = ()

    @staticmethod
    def saying(text: str, *, chunks: int = 1, usage: Usage | None = None) -> ScriptedResponse:
        size = max(1, -(-len(text) // max(1, chunks)))
        parts = tuple(text[i : i + size] for i in range(0, len(text), size)) or ("",)
        return ScriptedResponse(parts, usage=usage or Usage(10, len(text.split())))

    @staticmethod
    def calling(name: str, text: str = "", **arguments: Any) -> ScriptedResponse:
        call = ToolCall("", name, json.dumps(arguments))  # the model numbers it
        return ScriptedResponse((text,) if text else (), (call,), Usage(10, 5))

    @staticmethod
    def failing(error: ModelError, *, after: str = "") -> ScriptedResponse:
        return ScriptedResponse((after,) if after else (), failure=error)

    def thinking(self, *reasoning: Reasoning) -> ScriptedResponse:
        """This response, with ``reasoning`` before it."""
        return replace(self, reasoning=self.reasoning + reasoning)


class ScriptedModel:
    """The Model port, answering from a script; ``requests`` keeps what it was asked.

    ``window`` makes it keep to a context window (see the module); ``refusals`` counts
    the requests it refused for length, ``summaries`` are its answers to compactions.
    """

    def __init__(
        self,
        script: Sequence[ScriptedResponse] | Mapping[str, Sequence[ScriptedResponse]],
        clock: Clock | None = None,
        *,
        keep_requests: bool = True,
        window: FakeWindow | None = None,
        summaries: Sequence[ScriptedResponse] = (),
    ) -> None:
        scripts = script if isinstance(script, Mapping) else {"*": script}
        self._scripts = {key: list(responses) for key, responses in scripts.items()}
        self._clock = clock
        self._keep_requests = keep_requests
        self._call_ids = itertools.count(1)
        self.requests: list[ModelRequest] = []
        self.window = window
        self._server = WindowedServer(window) if window is not None else None
        self._summaries = list(summaries)
        self.summary_requests = 0
        self.summary_refusals = 0

    @classmethod
    def from_json(cls, path: str | Path, clock: Clock | None = None) -> ScriptedModel:
        """Load a script: ``{"responses": [...], "agents": {"sub-task": [...]}}``."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        script: dict[str, Sequence[ScriptedResponse]] = {
            "*": [response_from_json(r) for r in data.get("responses", [])]
        }
        for task, responses in data.get("agents", {}).items():
            script[task] = [response_from_json(r) for r in responses]
        window = data.get("window")
        return cls(
            script,
            clock,
            window=FakeWindow(
                int(window["tokens"]),
                window.get("like", "llama.cpp"),
                bool(window.get("advertised", True)),
                float(window.get("chars_per_token", 4.0)),
            )
            if window
            else None,
            summaries=[response_from_json(r) for r in data.get("summaries", [])],
        )

    @property
    def refusals(self) -> int:
        """The requests refused for length."""
        return self._server.refusals if self._server is not None else 0

    @property
    def largest_prompt(self) -> int:
        """The longest prompt sent, in the server's tokens (0 without a window)."""
        return self._server.largest_prompt if self._server is not None else 0

    def remaining(self, key: str = "*") -> int:
        return len(self._scripts.get(key, ()))

    async def facts(self) -> ServerFacts:
        """The ModelServer port: the window, when it is one the model advertises."""
        return self._server.facts() if self._server is not None else ServerFacts()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        if self._keep_requests:
            # The loop hands out a view of its history; keep what was asked at this moment.
            self.requests.append(replace(request, messages=tuple(request.messages)))
        server = self._server
        prompt = server.count(request) if server is not None else 0
        refusal = server.refusal(request, prompt) if server is not None else None
        if refusal is not None:
            self.summary_refusals += _asks_for_summary(request)
            yield Failure(refusal)
            return
        task = next((m.text for m in request.messages if m.role == "user"), "")
        response = self._answer(request, task)
        if response is None:
            yield Failure(MalformedStream(f"the script has no response left for {task[:60]!r}"))
            return
        if server is not None:
            response = server.keep(response, request, prompt)
        async for item in self._play(response):
            yield item

    def _answer(self, request: ModelRequest, task: str) -> ScriptedResponse | None:
        """The next response for the task (the first user message), a summary for a
        compaction, or None when the script has run out."""
        if _asks_for_summary(request):
            self.summary_requests += 1
            return self._summaries.pop(0) if self._summaries else _summary_of(task)
        queue = self._scripts[task] if task in self._scripts else self._scripts.get("*", [])
        return queue.pop(0) if queue else None

    async def _play(
        self, response: ScriptedResponse
    ) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        """The response as a stream: reasoning, text chunks, then the failure or the calls,
        the usage and the stop."""
        for thought in response.reasoning:
            if thought.text:
                yield Success(ReasoningText(thought.text))
            yield Success(ReasoningReady(thought))
        for chunk in response.text:
            if response.chunk_delay and self._clock is not None:
                await self._clock.sleep(response.chunk_delay)
            yield Success(TextDelta(chunk))
        if response.failure is not None:
            yield Failure(response.failure)
            return
        for call in response.tool_calls:
            # Calls scripted without an id are numbered per model, so runs repeat exactly.
            yield Success(ToolCallReady(call if call.id else replace(call, id=self._call_id())))
        yield Success(UsageReported(response.usage))
        yield Success(
            StreamEnd(response.stop or ("tool_use" if response.tool_calls else "end_turn"))
        )

    def _call_id(self) -> str:
        return f"call_{next(self._call_ids)}"


def _asks_for_summary(request: ModelRequest) -> bool:
    last = request.messages[-1] if request.messages else None
    return last is not None and last.role == "user" and last.text == COMPACT_REQUEST


def _summary_of(task: str) -> ScriptedResponse:
    return ScriptedResponse.saying(
        f"## Task\n{task}\n## Plan and where it stands\nAs published.\n## What remains\n"
        "The rest of the task."
    )


def response_from_json(data: Mapping[str, Any]) -> ScriptedResponse:
    """One response of a JSON script.

    ``{"text": ["Hel", "lo"], "tool_calls": [{"name": "bash", "arguments": {...}}],
    "usage": {"input_tokens": 1, "output_tokens": 2}, "stop": "max_tokens",
    "failure": {"transport": "connection_reset"} or {"status": 503}, "chunk_delay": 0.5}``.
    ``arguments`` may be a JSON string, kept as it is (to script invalid JSON).
    ``"reasoning": [{"kind": "thinking", "text": "…", "seal": "…"}]`` comes first.
    """
    text = data.get("text", ())
    calls = tuple(
        ToolCall(
            str(call.get("id") or ""),
            str(call["name"]),
            call["arguments"]
            if isinstance(call.get("arguments"), str)
            else json.dumps(call.get("arguments", {})),
        )
        for call in data.get("tool_calls", ())
    )
    usage = data.get("usage", {})
    reasoning = tuple(
        Reasoning(r["kind"], str(r.get("text", "")), str(r.get("seal", "")))
        for r in data.get("reasoning", ())
    )
    return ScriptedResponse(
        reasoning=reasoning,
        text=(text,) if isinstance(text, str) else tuple(text),
        tool_calls=calls,
        usage=Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
        stop=data.get("stop"),
        failure=_failure_from_json(data.get("failure")),
        chunk_delay=float(data.get("chunk_delay", 0.0)),
    )


def _failure_from_json(data: Mapping[str, Any] | None) -> ModelError | None:
    if data is None:
        return None
    if "status" in data:
        return HttpStatusError(int(data["status"]), str(data.get("detail", "")))
    if "transport" in data:
        return TransportError(data["transport"], str(data.get("detail", "")))
    return MalformedStream(str(data.get("malformed", "scripted malformed stream")))
