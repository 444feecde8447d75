"""A real HTTP server on 127.0.0.1 that misbehaves on purpose, one behaviour per test.

Each behaviour writes the whole answer itself (status line, headers, body) to the raw
connection, so it can do what no well-meant server does: compress a stream into a bomb,
never end a line, keep a connection alive with comments and no events, talk forever.

Example::

    async with HostileServer.running(endless_comments) as server:
        ...  # point a model at server.base_url
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

Behaviour = Callable[[asyncio.StreamWriter], Awaitable[None]]


@dataclass
class HostileServer:
    behaviour: Behaviour
    requests: int = 0
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, behaviour: Behaviour) -> AsyncIterator[HostileServer]:
        server = cls(behaviour)
        server._server = await asyncio.start_server(server._serve, "127.0.0.1", 0)
        try:
            yield server
        finally:
            server._server.close()
            for writer in list(server._writers):
                writer.transport.abort()
            await server._server.wait_closed()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            self.requests += 1
            await self.behaviour(writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client hung up, or the test is over
        finally:
            self._writers.discard(writer)
            writer.transport.abort()


async def start_stream(writer: asyncio.StreamWriter, *headers: str) -> None:
    head = ["HTTP/1.1 200 OK", "content-type: text/event-stream", "transfer-encoding: chunked"]
    writer.write(("\r\n".join([*head, *headers]) + "\r\n\r\n").encode())
    await writer.drain()


async def send_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
    await writer.drain()


def chat_text(text: str) -> bytes:
    """One OpenAI-compatible chunk with ``text``, as an SSE event."""
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def gzip_bomb(expanded: int) -> Behaviour:
    """A gzip body of a few kilobytes that expands to ``expanded`` bytes of events."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    event = chat_text("x" * 900)
    body = compressor.compress(event * (expanded // len(event) + 1)) + compressor.flush()

    async def play(writer: asyncio.StreamWriter) -> None:
        await start_stream(writer, "content-encoding: gzip")
        for start in range(0, len(body), 16_384):
            await send_chunk(writer, body[start : start + 16_384])
        await send_chunk(writer, b"")

    return play


async def endless_line(writer: asyncio.StreamWriter) -> None:
    """One ``data:`` line that never ends."""
    await start_stream(writer)
    await send_chunk(writer, b"data: ")
    while True:
        await send_chunk(writer, b"x" * 65_536)


async def endless_comments(writer: asyncio.StreamWriter) -> None:
    """Keep-alive comments every 20 ms, and never an event."""
    await start_stream(writer)
    while True:
        await send_chunk(writer, b": keep-alive\n\n")
        await asyncio.sleep(0.02)


async def endless_empty_chunks(writer: asyncio.StreamWriter) -> None:
    """Chunks that are events but carry nothing of an answer, every 20 ms."""
    await start_stream(writer)
    chunk = {"object": "chat.completion.chunk", "choices": []}
    while True:
        await send_chunk(writer, b"data: " + json.dumps(chunk).encode() + b"\n\n")
        await asyncio.sleep(0.02)


async def slow_arguments(writer: asyncio.StreamWriter) -> None:
    """One tool call whose arguments come a few characters at a time, for longer than
    the read timeout in all, then the end: slow is not silent."""
    await start_stream(writer)
    head = {
        "index": 0,
        "id": "c1",
        "type": "function",
        "function": {"name": "bash", "arguments": ""},
    }
    await send_chunk(writer, _chat_delta({"tool_calls": [head]}))
    for piece in ['{"comm', 'and": "e', "cho ", "hi", '"}']:
        await asyncio.sleep(0.1)
        fragment = {"index": 0, "function": {"arguments": piece}}
        await send_chunk(writer, _chat_delta({"tool_calls": [fragment]}))
    finish = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
    }
    await send_chunk(writer, b"data: " + json.dumps(finish).encode() + b"\n\ndata: [DONE]\n\n")
    await send_chunk(writer, b"")


def _chat_delta(delta: dict[str, object]) -> bytes:
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def closes_early_then_answers() -> Behaviour:
    """A body with no length and no chunks, closed before its end; then a whole answer."""
    answered = [0]

    async def play(writer: asyncio.StreamWriter) -> None:
        answered[0] += 1
        head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
        writer.write(head.encode())
        role = {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"role": "assistant"}}],
        }
        writer.write(b"data: " + json.dumps(role).encode() + b"\n\n")
        if answered[0] > 1:
            finish = {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
            writer.write(
                chat_text("done")
                + b"data: "
                + json.dumps(finish).encode()
                + b"\n\ndata: [DONE]\n\n"
            )
        await writer.drain()
        writer.close()

    return play


async def endless_text(writer: asyncio.StreamWriter) -> None:
    """An answer that never stops, whatever its budget."""
    await start_stream(writer)
    while True:
        await send_chunk(writer, chat_text("and on ") * 50)
