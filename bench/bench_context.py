"""Long turns within a context window (issue 10): a 1,000-request turn whose every tool
output is 20 kB, on a 32k-token window, stays flat in time and memory.

Three figures, each against the same run's start:

- the loop on the fakes (a scripted model that keeps to its window, a runner whose
  every command prints 20 kB): time per request over the last 100 requests against
  the first 100 (target <= 1.3x), and the same for the gap from a response to the
  next request (what treadle itself does: the tool, the accounting, pruning and
  compacting); the growth of traced memory during a turn of 1,000 requests against
  one of 100 (the conversation held is bounded by the window, not by the turn);
- the same turn through the real adapters over a local socket, Chat Completions and
  Messages: the gap from a response to the moment the next request, its body built,
  is handed to the connection, last 100 against the first 100 (target <= 1.1x);
- a turn of 2,000 requests that nothing cuts, through the same adapters: the gap at
  the end against the start (target <= 1.3x; each message's wire form is made once);
- what asking a local server its window costs: ``/props`` and ``/v1/models`` side by
  side, against one plain POST round trip on the same server.

The machine may be shared: each end of each figure is the best of three runs.
"""

from __future__ import annotations

import asyncio
import gc
import http.server
import json
import statistics
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from returns.result import Result, Success

from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    FakeWindow,
    ScriptedModel,
    SilentTerminal,
)
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.events import RequestSent, ResponseReceived, TurnEvent
from treadle.domain.values.process import ProcessError, ProcessResult, ProcessSpec
from treadle.ports.process import ProcessRunner

REQUESTS = 1000
LONG_TURN = 2000
"""Requests of a turn whose history is never cut (a window it never fills): each
request sends every message so far, 4,000 of them at the end."""
HUGE_WINDOW = 10_000_000
WINDOW = 32_768
OUTPUT = ("2025-01-01 12:00:00 service=api status=ok latency=12ms path=/v1/things\n" * 300)[:20_000]
RATIO_TARGET = 1.3
FLAT_TARGET = 1.1
"""The adapters' own figure on a window: the wire form of each message made once."""
EDGE = 100  # requests averaged at each end


RUNS = 3


class TimedTerminal(SilentTerminal):
    """Notes when each request of the main agent goes out, and each response ends."""

    def __init__(self) -> None:
        self.sent: list[float] = []
        self.received: list[float] = []

    def show(self, event: TurnEvent) -> None:
        if event.agent:
            return
        if isinstance(event, RequestSent):
            self.sent.append(time.perf_counter())
        elif isinstance(event, ResponseReceived):
            self.received.append(time.perf_counter())


@dataclass
class Ends:
    """Seconds at the start and at the end of a turn, each the best of the runs."""

    start: float
    end: float

    @property
    def ratio(self) -> float:
        return self.end / self.start

    @staticmethod
    def best(runs: list[list[float]], middle: bool = False) -> Ends:
        """Each end the best run's mean (``middle``: its median, which a shared machine's
        pauses move less)."""
        average = statistics.median if middle else statistics.fmean
        return Ends(
            min(average(run[:EDGE]) for run in runs),
            min(average(run[-EDGE:]) for run in runs),
        )

    def line(self, what: str, target: float = RATIO_TARGET) -> str:
        ok = "ok" if self.ratio <= target else "MISSED"
        return (
            f"{what}: {self.start * 1e3:.2f} ms at the start, {self.end * 1e3:.2f} at the end "
            f"= {self.ratio:.2f}x (target <= {target:g}x: {ok})"
        )


def _script(requests: int) -> list[R]:
    calls = [R.calling("bash", command=f"cat /var/log/part-{n}.log") for n in range(requests - 1)]
    return [*calls, R.saying("done")]


class ForgetfulRunner:
    """Prints 20 kB for every command and, unlike the test fake, keeps no record of them:
    what the turn holds is then all that grows."""

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]:
        bound = OutputBound.of(OUTPUT.encode(), spec.output_limit)
        return Success(
            ProcessResult(
                bound.text(), 0, None, 0.01, truncated=bound.truncated, omitted_bytes=bound.omitted
            )
        )


def _fake_agent(requests: int, *, remember: bool = True) -> tuple[Agent, TimedTerminal]:
    clock = FakeClock()
    model = ScriptedModel(_script(requests), clock, keep_requests=False, window=FakeWindow(WINDOW))
    terminal = TimedTerminal()
    runner: ProcessRunner = (
        FakeRunner(clock, lambda command: FakeProcess(OUTPUT)) if remember else ForgetfulRunner()
    )
    screen = terminal if remember else SilentTerminal()
    ports = TurnPorts(model, clock, runner, screen, server=model)
    return Agent(ports, TurnSettings(), core_tools(), subagents=False), terminal


async def _fake_turn(requests: int) -> TimedTerminal:
    agent, terminal = _fake_agent(requests)
    outcome = await agent.run_turn("read every part")
    assert outcome.exit_code == 0, outcome.screen_line
    return terminal


def _per_request(terminal: TimedTerminal) -> list[float]:
    """Seconds from each request to the next: every request a compaction adds counts
    where it falls, as the person waiting lives it."""
    return [b - a for a, b in zip(terminal.sent, terminal.sent[1:], strict=False)]


def _gaps(received: list[float], sent: list[float]) -> list[float]:
    """Seconds from the end of each response to the next request of the answer."""
    return [after - end for end, after in zip(received, sent[1:], strict=False)]


def _memory_growth(requests: int) -> int:
    """The peak of memory traced while a turn runs, above what was there before it."""
    agent, _ = _fake_agent(requests, remember=False)
    gc.collect()
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    outcome = asyncio.run(agent.run_turn("read every part"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert outcome.exit_code == 0
    return peak - base


# A local server for the real adapters -----------------------------------------------------


def _prompt_tokens(body: dict[str, Any]) -> int:
    """A server's count of a prompt: four characters a token."""
    if "read" in body:  # a server that did not parse the body counts its bytes
        return int(body["read"]) // 4
    return len(json.dumps(body.get("messages", []))) // 4 + len(str(body.get("system", ""))) // 4


def _openai_answer(body: dict[str, Any], number: int, final: bool) -> bytes:
    if final:
        delta: dict[str, Any] = {"content": "done"}
        finish = "stop"
    else:
        arguments = json.dumps({"command": f"cat part-{number}.log"})
        call = {"index": 0, "id": f"c{number}", "type": "function"}
        delta = {"tool_calls": [call | {"function": {"name": "bash", "arguments": arguments}}]}
        finish = "tool_calls"
    chunks = [
        {"choices": [{"index": 0, "delta": delta}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {"choices": [], "usage": {"prompt_tokens": _prompt_tokens(body), "completion_tokens": 9}},
    ]
    lines = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks]
    return b"".join(lines) + b"data: [DONE]\n\n"


def _anthropic_answer(body: dict[str, Any], number: int, final: bool) -> bytes:
    if final:
        block: dict[str, Any] = {"type": "text", "text": "done"}
        stop = "end_turn"
    else:
        command = {"command": f"cat part-{number}.log"}
        block = {"type": "tool_use", "id": f"c{number}", "name": "bash", "input": command}
        stop = "tool_use"
    usage = {"input_tokens": _prompt_tokens(body), "output_tokens": 9}
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": usage}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


class _Server(http.server.ThreadingHTTPServer):
    requests = 0
    last = REQUESTS
    window = WINDOW
    parse = True
    arrivals: list[float]
    answered: list[float]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_GET(self) -> None:
        if self.path == "/props":
            props = {**_PROPS, "default_generation_settings": {"n_ctx": self.server.window}}
            self._send(200, "application/json", json.dumps(props).encode())
        else:
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        arrived = time.perf_counter()
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        server = self.server
        body = json.loads(raw) if server.parse else {"read": len(raw)}
        server.requests += 1
        server.arrivals.append(arrived)
        final = server.requests >= server.last
        answer = _anthropic_answer if self.path.endswith("/messages") else _openai_answer
        self._send(200, "text/event-stream", answer(body, server.requests, final))
        server.answered.append(time.perf_counter())

    def _send(self, status: int, kind: str, payload: bytes) -> None:
        # One write for the head and the body: two would meet the client's delayed ACK.
        head = (
            f"HTTP/1.1 {status} {'OK' if status == 200 else 'Not Found'}\r\n"
            f"content-type: {kind}\r\ncontent-length: {len(payload)}\r\n\r\n"
        )
        self.wfile.write(head.encode() + payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


_PROPS = {"default_generation_settings": {"n_ctx": WINDOW}, "chat_template_caps": {}}


@contextmanager
def local_server(
    last: int = REQUESTS, window: int = WINDOW, *, parse: bool = True
) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.last, server.window, server.parse = last, window, parse
    server.arrivals, server.answered = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _http_model(protocol: str, url: str, transport: Any = None) -> Any:
    from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel

    if protocol == "anthropic":
        return AnthropicModel(model="local", base_url=url, api_key=None, transport=transport)
    return OpenAIChatModel(model="local", base_url=f"{url}/v1", api_key=None, transport=transport)


def _handing_over() -> Any:
    """A transport that notes when each request, its body built, is handed over."""
    import httpx

    class HandingOver(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()
            self.handed: list[float] = []

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.method == "POST":
                self.handed.append(time.perf_counter())
            return await self.inner.handle_async_request(request)

    return HandingOver()


async def _http_turn(
    protocol: str, requests: int = REQUESTS, window: int = WINDOW, output: str = OUTPUT
) -> list[float]:
    # A turn bounded by no window holds every message: the server only counts its bytes.
    with local_server(requests, window, parse=window <= WINDOW) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        transport = _handing_over()
        model = _http_model(protocol, url, transport)
        clock = FakeClock()
        runner = FakeRunner(clock, lambda command: FakeProcess(output))
        terminal = TimedTerminal()
        ports = TurnPorts(model, clock, runner, terminal, server=model)
        agent = Agent(ports, TurnSettings(), core_tools(), subagents=False)
        outcome = await agent.run_turn("read every part")
        assert outcome.exit_code == 0, outcome.screen_line
        await transport.inner.aclose()
    return _gaps(terminal.received, transport.handed)


async def _probe_and_post(rounds: int = 50) -> tuple[float, float]:
    """Median seconds of asking the server its window, and of one plain POST."""
    import httpx

    with local_server(last=10**9) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        model = _http_model("openai", url)
        probes, posts = [], []
        async with httpx.AsyncClient() as client:
            for _ in range(rounds):
                started = time.perf_counter()
                facts = await model.facts()
                probes.append(time.perf_counter() - started)
                assert facts.window is not None and facts.window.tokens == WINDOW
                started = time.perf_counter()
                await client.post(f"{url}/v1/chat/completions", json={"messages": []})
                posts.append(time.perf_counter() - started)
    return statistics.median(probes), statistics.median(posts)


def run() -> list[str]:
    turns = [asyncio.run(_fake_turn(REQUESTS)) for _ in range(RUNS)]
    per_request = Ends.best([_per_request(t) for t in turns])
    gaps = Ends.best([_gaps(t.received, t.sent) for t in turns])
    small, large = _memory_growth(EDGE), _memory_growth(REQUESTS)
    head = f"context: {REQUESTS} requests of 20 kB outputs on a {WINDOW:,}-token window"
    lines = [
        per_request.line(f"{head} (fakes), time per request"),
        gaps.line("context: the same, from a response to the next request"),
        f"context: memory a turn grows by at its peak: {large / 2**20:.1f} MiB at {REQUESTS} "
        f"requests, {small / 2**20:.1f} MiB at {EDGE} = {large / small:.2f}x "
        "(bounded by the window)",
    ]
    for protocol in ("openai", "anthropic"):
        http = Ends.best([asyncio.run(_http_turn(protocol)) for _ in range(RUNS)])
        # The history is bounded by the window: nothing of a request should grow.
        what = f"context: the {protocol} adapter over HTTP, response to request"
        lines.append(http.line(what, FLAT_TARGET))
    for protocol in ("openai", "anthropic"):
        # Two runs each: a run is 2,000 requests of up to a megabyte.
        runs = [asyncio.run(_http_turn(protocol, LONG_TURN, HUGE_WINDOW, "ok\n")) for _ in "ab"]
        http = Ends.best(runs, middle=True)
        lines.append(
            http.line(
                f"context: a {LONG_TURN:,}-request turn, no window to cut it, the {protocol} "
                "adapter over HTTP, response to request (medians)"
            )
        )
    probe, post = asyncio.run(_probe_and_post())
    lines.append(
        f"context: asking a local server its window (/props and /v1/models side by side) "
        f"{probe * 1e3:.2f} ms = {probe / post:.2f}x one POST round trip ({post * 1e3:.2f} ms)"
    )
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
