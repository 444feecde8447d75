"""What prompt caching saves: a 21-request Anthropic tool loop, priced from the requests
the adapter builds, with its cache markers and without them (the same run's baseline).

The real turn loop drives the real ``AnthropicModel`` (its requests caught by a
transport that answers each with a tool call, then an answer), with treadle's own
system prompt and tools and command output of a realistic size. The cache is then
played from the bodies as Anthropic describes it: a marker writes the prefix up to it
(if it is long enough to cache), a later request reads the longest prefix written
before, found at one of its markers or up to 20 blocks before one. Tokens are counted
as four bytes of each block's JSON: rough, and the same for both runs.

Billed input is what Anthropic charges in units of its input price: uncached input,
plus 1.25 × cache writes, plus 0.1 × cache reads. The issue asks for at most 0.35 of the
uncached loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner, SilentTerminal
from treadle.adapters.http_model import AnthropicModel, ModelOptions
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.entrypoints.container import build_tools

REQUESTS = 21
WRITE_PRICE, READ_PRICE = 1.25, 0.1
MINIMUM_PREFIX = 1024  # tokens: a shorter prefix is not cached (Sonnet's minimum)
LOOKBACK = 20  # blocks before a marker where a cached prefix is still found
BYTES_PER_TOKEN = 4
INSTRUCTIONS = "\n".join(
    f"- Rule {n}: keep functions short, test every change, and say what is unfinished."
    for n in range(40)
)
OUTPUT = "".join(
    f"src/module_{n}.py:{n}: def handler_{n}(request): return respond(request)\n" for n in range(40)
)


class CatchingTransport(httpx.AsyncBaseTransport):
    """Keeps each request body; answers with a tool call until the last, then text."""

    def __init__(self, requests: int) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.requests = requests

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(await request.aread()))
        number = len(self.bodies)
        stream = _answer() if number == self.requests else _tool_call(number)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream)


def _events(*events: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events)


def _tool_call(number: int) -> bytes:
    block = {"type": "tool_use", "id": f"toolu_{number:02d}", "name": "bash", "input": {}}
    command = {"command": f"grep -rn handler src/ | head -n 40  # step {number}"}
    return _events(
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(command)},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 40},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )


def _answer() -> bytes:
    text = {"type": "text", "text": ""}
    return _events(
        ("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": text}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Done."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )


async def _loop_bodies(prompt_cache: bool) -> list[dict[str, Any]]:
    transport = CatchingTransport(REQUESTS)
    options = ModelOptions(prompt_cache=prompt_cache)
    model = AnthropicModel(
        model="claude-bench", api_key="sk-bench", transport=transport, options=options
    )
    clock = FakeClock()
    commands = {
        f"grep -rn handler src/ | head -n 40  # step {n}": FakeProcess(OUTPUT)
        for n in range(REQUESTS)
    }
    ports = TurnPorts(model, clock, FakeRunner(clock, commands), SilentTerminal())
    settings = TurnSettings(session_dir="", instructions=INSTRUCTIONS, approval="auto")
    agent = Agent(ports, settings, build_tools(), subagents=False)
    outcome = await agent.run_turn("Find every handler and check that each one is tested.")
    assert outcome.exit_code == 0 and len(transport.bodies) == REQUESTS, outcome.screen_line
    return transport.bodies


@dataclass
class Bill:
    input: int = 0
    read: int = 0
    written: int = 0
    most_markers: int = 0

    @property
    def billed(self) -> float:
        return (
            self.input
            - self.read
            - self.written
            + WRITE_PRICE * self.written
            + READ_PRICE * self.read
        )


def _blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The prompt's blocks in the order Anthropic caches them: tools, system, messages."""
    system = body.get("system", [])
    blocks = [*body.get("tools", []), *(system if isinstance(system, list) else [{"text": system}])]
    for message in body["messages"]:
        for block in message["content"]:
            blocks.append({"role": message["role"], **block})
    return blocks


def bill(bodies: Sequence[dict[str, Any]]) -> Bill:
    cached: set[str] = set()
    total = Bill()
    for body in bodies:
        blocks = _blocks(body)
        digest = hashlib.sha256()
        hashes, ends = [], []
        size = 0
        for block in blocks:
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            text = json.dumps(plain, sort_keys=True)
            digest.update(text.encode())
            hashes.append(digest.hexdigest())
            size += max(1, len(text) // BYTES_PER_TOKEN)
            ends.append(size)
        marks = [i for i, block in enumerate(blocks) if "cache_control" in block]
        read = 0
        for mark in marks:
            for index in range(mark, max(-1, mark - LOOKBACK), -1):
                if hashes[index] in cached:
                    read = max(read, ends[index])
                    break
        writable = [mark for mark in marks if ends[mark] >= MINIMUM_PREFIX]
        written = max(0, max((ends[m] for m in writable), default=0) - read)
        cached.update(hashes[m] for m in writable)
        total.input += size
        total.read += read
        total.written += written
        total.most_markers = max(total.most_markers, len(marks))
    return total


def run() -> list[str]:
    marked = bill(asyncio.run(_loop_bodies(prompt_cache=True)))
    plain = bill(asyncio.run(_loop_bodies(prompt_cache=False)))
    assert plain.read == plain.written == 0 and marked.input == plain.input
    ratio = marked.billed / plain.billed
    return [
        f"cache: a {REQUESTS}-request Anthropic loop sends {marked.input:,} input tokens "
        f"(estimated); with markers {marked.read / marked.input:.0%} are cache reads and "
        f"{marked.written / marked.input:.0%} cache writes, at most {marked.most_markers} markers "
        "a request",
        f"cache: billed input with markers / without: {ratio:.2f}× (the issue asks at most 0.35×)",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
