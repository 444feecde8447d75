"""Reading a model's stream, and building its request, at scale.

Throughput: a ~10 MB event stream per protocol, served by one in-memory transport in
16 KiB chunks (no socket, so the figures are the parser's, not the kernel's), read
three ways in the same run from the same bytes: plain ``httpx`` ``aiter_lines()`` (the
baseline), the SSE framing alone, and the whole adapter (framing, JSON decoding of
every event, mapping to the port's events). Decoding the same events' JSON, and
nothing else, is shown too: the floor no reader that looks inside events goes under.

Request bodies: the time to build and encode a body from a history of 10, 100 and
1,000 messages, per message (linear: about the same at every size).
"""

from __future__ import annotations

import asyncio
import gc
import json
import json.scanner
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx

from treadle.adapters.http_model import AnthropicModel, OpenAIChatModel
from treadle.adapters.http_model.anthropic import messages_request_body
from treadle.adapters.http_model.openai_chat import chat_request_body
from treadle.adapters.http_model.sse import SseParser
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.model import ModelRequest, StreamEnd, TextDelta, ToolSpec

STREAMS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "streams"
TARGET_BYTES = 10_000_000
CHUNK = 16 * 1024
ROUNDS = 3


def _scaled(name: str, repeat_event: int, tail_events: int) -> bytes:
    """A fixture with one of its text events repeated until the body is ~10 MB."""
    events = (STREAMS / name).read_bytes().rstrip(b"\n").split(b"\n\n")
    events = [event + b"\n\n" for event in events]
    head, middle, tail = events[:repeat_event], events[repeat_event], events[-tail_events:]
    return b"".join([*head, middle * (TARGET_BYTES // len(middle)), *tail])


BODIES = {
    # The role chunk, then a content chunk many times, then finish, usage and [DONE].
    "openai": _scaled("openai-chat/text_with_usage.sse", 1, 3),
    # message_start, content_block_start, ping; a text_delta many times; the end.
    "anthropic": _scaled("anthropic/basic_response.sse", 3, 3),
}


class _Chunked(httpx.AsyncByteStream):
    def __init__(self, body: bytes) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._body), CHUNK):
            yield self._body[start : start + CHUNK]


def _transport(body: bytes) -> httpx.MockTransport:
    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Chunked(body)
        )

    return httpx.MockTransport(respond)


async def _baseline_lines(transport: httpx.AsyncBaseTransport) -> int:
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", "http://bench.invalid/") as response,
    ):
        return sum([1 async for _ in response.aiter_lines()])


async def _framing(transport: httpx.AsyncBaseTransport) -> int:
    parser = SseParser()
    events = 0
    async with (
        httpx.AsyncClient(transport=transport) as client,
        client.stream("POST", "http://bench.invalid/") as response,
    ):
        async for chunk in response.aiter_bytes():
            events += len(parser.feed(chunk))
    return events + len(parser.finish())


def _adapter(provider: str) -> Callable[[httpx.AsyncBaseTransport], Awaitable[int]]:
    async def read(transport: httpx.AsyncBaseTransport) -> int:
        model: AnthropicModel | OpenAIChatModel
        if provider == "anthropic":
            model = AnthropicModel(model="bench", api_key="bench-key", transport=transport)
        else:
            model = OpenAIChatModel(model="bench", api_key="bench-key", transport=transport)
        request = ModelRequest("", (Message.user("go"),), (), 1024)
        deltas, ended = 0, False
        async for item in model.stream(request):
            event = item.unwrap()  # a failure here is a bug in the bench or the adapter
            deltas += isinstance(event, TextDelta)
            ended = isinstance(event, StreamEnd)
        assert ended, "the stream did not end"
        return deltas

    return read


def _json_floor(body: bytes) -> float:
    """Decoding every event's JSON with the decoder the adapters use, and nothing else."""
    data = [
        line[6:].decode()
        for line in body.split(b"\n")
        if line.startswith(b"data: ") and line != b"data: [DONE]"
    ]
    scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
    started = time.perf_counter()
    for text in data:
        scan(text, 0)
    return time.perf_counter() - started


def _timed(read: Callable[[httpx.AsyncBaseTransport], Awaitable[int]], body: bytes) -> float:
    transport = _transport(body)
    started = time.perf_counter()
    asyncio.run(read(transport))  # type: ignore[arg-type]
    return time.perf_counter() - started


def _throughput_lines() -> list[str]:
    lines = []
    for provider, body in BODIES.items():
        megabytes = len(body) / 1e6
        readers = {"baseline": _baseline_lines, "framing": _framing, "adapter": _adapter(provider)}
        best = dict.fromkeys(readers, float("inf")) | {"floor": float("inf")}
        # Rounds interleave the readers, so a busy moment on a shared machine weighs on
        # all of them alike; the best of each is kept.
        for _ in range(ROUNDS):
            for name, read in readers.items():
                best[name] = min(best[name], _timed(read, body))
            best["floor"] = min(best["floor"], _json_floor(body))
        baseline = best["baseline"]
        lines += [
            f"sse: {provider:9} {megabytes:.1f} MB  httpx aiter_lines (baseline) "
            f"{megabytes / baseline:7.1f} MB/s",
            f"sse: {provider:9} SSE framing      {megabytes / best['framing']:7.1f} MB/s"
            f"  = {baseline / best['framing']:.2f}× baseline (target ≥ 0.50)",
            f"sse: {provider:9} whole adapter    {megabytes / best['adapter']:7.1f} MB/s"
            f"  = {baseline / best['adapter']:.2f}× baseline; its JSON decoding alone "
            f"{megabytes / best['floor']:.1f} MB/s = {baseline / best['floor']:.2f}×",
        ]
    return lines


def _history(size: int) -> tuple[Message, ...]:
    """A working conversation: task, then assistant calls and their results, in turn."""
    messages = [Message.user("Fix the failing test in tests/test_parser.py.")]
    for number in range(size - 1):
        if number % 2 == 0:
            call = ToolCall(
                f"call_{number}", "bash", json.dumps({"command": f"pytest -k {number}"})
            )
            messages.append(Message.assistant("Running the tests.", (call,)))
        else:
            messages.append(Message.tool(f"call_{number - 1}", "collected 12 items\n" * 20))
    return tuple(messages)


BASH = ToolSpec("bash", "Run a command.", {"type": "object", "properties": {}})


def _body_lines() -> list[str]:
    chat = OpenAIChatModel(model="bench", api_key=None, base_url="http://127.0.0.1:1/v1")
    messages = AnthropicModel(model="bench", api_key=None, base_url="http://127.0.0.1:1")
    # Built from scratch, and as the adapters send them: each message encoded once, the
    # request joined from what the last one encoded (here the same request again).
    builders: dict[str, Callable[[ModelRequest], object]] = {
        "openai": lambda r: json.dumps(chat_request_body(r, model="bench", hosted=False)).encode(),
        "anthropic": lambda r: json.dumps(messages_request_body(r, model="bench")).encode(),
        "openai kept": lambda r: chat.protocol(r, None).body,
        "anthropic kept": lambda r: messages.protocol(r, None).body,
    }
    sizes = (10, 100, 1000)
    requests = {size: ModelRequest("system", _history(size), (BASH,), 1024) for size in sizes}
    best = {(provider, size): float("inf") for provider in builders for size in sizes}
    # The collector's pauses grow with everything the process holds, not with this
    # code: off while timing, so the figures show the builders' own growth.
    gc.collect()
    gc.disable()
    try:
        for _ in range(ROUNDS + 2):  # interleaved, as above
            for (provider, size), so_far in best.items():
                repeats = 20_000 // size
                started = time.perf_counter()
                for _ in range(repeats):
                    builders[provider](requests[size])
                per_message = (time.perf_counter() - started) / repeats / size
                best[provider, size] = min(so_far, per_message)
    finally:
        gc.enable()
    lines = []
    for provider in builders:
        figures = "  ".join(f"{n:>4}: {best[provider, n] * 1e6:5.2f} µs/message" for n in sizes)
        growth = best[provider, 1000] / best[provider, 10]
        lines.append(f"sse: {provider:14} request body  {figures}  growth 10→1,000: {growth:.2f}×")
    return lines


def run() -> list[str]:
    return _throughput_lines() + _body_lines()


if __name__ == "__main__":
    print("\n".join(run()))
