"""A small real HTTP/1.1 server on 127.0.0.1 that plays a script, one reply per request.

It keeps connections alive between requests the way real servers do, so a client that
reused a pooled connection would be seen doing it: every request records the client's
port. Faults are injected per reply: a reset (RST, from SO_LINGER 0) or a plain close
before the headers, a close or reset after some body chunks, or a stall that lasts
until the client hangs up (counted in ``hangups``) or the server stops. A request
whose tool list the provider behind its path would refuse is answered with the
provider's 400 (``provider_rules``), before the script is consulted.

A ``guard`` plays the part of a server that checks what it is sent: it sees each
request before the script does, and may answer it with a refusal of its own instead
(see :mod:`tests.adapters.http.thinking_server`: reasoning that must come back unchanged,
cache markers that must be few and sit on a stable prefix).

Example::

    async with ScriptedServer.running([Reply.sse(body), Reply(status=503)]) as server:
        ...  # point a client at server.base_url
        assert len({seen.client_port for seen in server.requests}) == 2

A GET is a question about the server (``/props``, ``/v1/models``), never a request for
an answer: it is answered from ``routes`` (404 when none matches), kept in ``probes``,
and leaves the script alone (see :mod:`tests.adapters.http.local_server`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

from tests.adapters.http.provider_rules import refusal

_PHRASES = {status.value: status.phrase for status in HTTPStatus} | {529: "Overloaded"}
FaultKind = Literal["reset", "close", "stall"]


@dataclass(frozen=True, slots=True)
class Fault:
    """What goes wrong, after how many body chunks (0: before the status line)."""

    kind: FaultKind
    after_chunks: int = 0


@dataclass(frozen=True, slots=True)
class Reply:
    status: int = 200
    chunks: tuple[bytes, ...] = ()
    content_type: str = "text/event-stream"
    fault: Fault | None = None

    @staticmethod
    def sse(body: bytes, *, fault: Fault | None = None) -> Reply:
        """``body`` streamed one event per HTTP chunk, as a model server sends it."""
        return Reply(chunks=split_events(body), fault=fault)

    @staticmethod
    def error(status: int, payload: Any = None) -> Reply:
        body = json.dumps(payload).encode() if payload is not None else b""
        return Reply(status, (body,) if body else (), "application/json")

    @staticmethod
    def json(payload: Any, status: int = 200) -> Reply:
        """A JSON document, as a server's ``/props`` or ``/v1/models`` answers."""
        return Reply.error(status, payload)

    @staticmethod
    def raw(status: int, body: bytes) -> Reply:
        """A body exactly as recorded, e.g. a refusal saved from a real server."""
        return Reply(status, (body,), "application/json; charset=utf-8")


@dataclass(frozen=True, slots=True)
class SeenRequest:
    client_port: int
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def split_events(body: bytes) -> tuple[bytes, ...]:
    """``body`` cut after each blank line; the bytes are unchanged when joined."""
    chunks: list[bytes] = []
    start = 0
    while (end := body.find(b"\n\n", start)) != -1:
        chunks.append(body[start : end + 2])
        start = end + 2
    if start < len(body):
        chunks.append(body[start:])
    return tuple(chunks)


Guard = Callable[[SeenRequest], "Reply | None"]


@dataclass
class ScriptedServer:
    script: deque[Reply]
    guard: Guard | None = None
    requests: list[SeenRequest] = field(default_factory=list)
    routes: dict[str, Reply] = field(default_factory=dict)
    probes: list[SeenRequest] = field(default_factory=list)
    connections: int = 0
    unscripted: int = 0
    refused: int = 0
    hangups: int = 0
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    _handlers: set[asyncio.Task[None]] = field(default_factory=set)
    _readers: dict[asyncio.StreamWriter, asyncio.StreamReader] = field(default_factory=dict)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    @contextlib.asynccontextmanager
    async def running(
        cls, script: Iterable[Reply] = (), *, guard: Guard | None = None
    ) -> AsyncIterator[ScriptedServer]:
        server = cls(deque(script), guard)
        server._server = await asyncio.start_server(server._serve, "127.0.0.1", 0)
        try:
            yield server
        finally:
            await server._stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def add(self, *replies: Reply) -> None:
        self.script.extend(replies)

    async def _stop(self) -> None:
        self._stopping.set()
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        await self._server.wait_closed()
        # Let every handler finish its own cleanup before the test's loop goes away.
        await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self._writers.add(writer)
        self._readers[writer] = reader
        port = writer.get_extra_info("peername")[1]
        try:
            # Keep-alive: one connection may carry many requests, as with real servers.
            while await self._answer_one(reader, writer, port):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            self._readers.pop(writer, None)
            writer.transport.abort()

    async def _answer_one(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int
    ) -> bool:
        """Read one request and play one reply; whether the connection stays open."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return False  # the client hung up between requests
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        seen = SeenRequest(port, method, path, headers, body)
        if method == "GET" or path in self.routes:
            self.probes.append(seen)
            missing = Reply.error(404, {"error": {"message": "File Not Found"}})
            return await self._play(self.routes.get(path, missing), writer)
        self.requests.append(seen)
        refused = _refusal(path, body)
        if refused is not None:
            self.refused += 1
            return await self._play(Reply.error(400, refused), writer)
        refusal = self.guard(seen) if self.guard is not None else None
        if refusal is not None:
            reply = refusal
        elif self.script:
            reply = self.script.popleft()
        else:
            self.unscripted += 1
            reply = Reply.error(500, {"error": {"message": "no scripted reply left"}})
        return await self._play(reply, writer)

    async def _play(self, reply: Reply, writer: asyncio.StreamWriter) -> bool:
        fault = reply.fault
        if fault is not None and fault.after_chunks == 0:
            await self._fail(fault, writer)
            return False
        streamed = reply.content_type == "text/event-stream"
        head = [f"HTTP/1.1 {reply.status} {_PHRASES.get(reply.status, 'Unknown')}"]
        head.append(f"content-type: {reply.content_type}")
        if streamed:
            head.append("transfer-encoding: chunked")
        else:
            head.append(f"content-length: {sum(len(chunk) for chunk in reply.chunks)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for sent, chunk in enumerate(reply.chunks):
            if fault is not None and sent == fault.after_chunks:
                await writer.drain()
                await self._fail(fault, writer)
                return False
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if streamed else chunk)
            await writer.drain()
        if streamed:
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _fail(self, fault: Fault, writer: asyncio.StreamWriter) -> None:
        match fault.kind:
            case "reset":
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
            case "close":
                writer.close()
            case "stall":
                await self._until_client_hangs_up(writer)

    async def _until_client_hangs_up(self, writer: asyncio.StreamWriter) -> None:
        """Send nothing more; note it when the client closes the connection."""
        reader = self._readers[writer]
        stopping = asyncio.ensure_future(self._stopping.wait())
        eof = asyncio.ensure_future(reader.read())
        await asyncio.wait({stopping, eof}, return_when=asyncio.FIRST_COMPLETED)
        if eof.done():
            self.hangups += 1
            self.hung_up.set()
        for waiter in (stopping, eof):
            waiter.cancel()
        await asyncio.gather(stopping, eof, return_exceptions=True)


def _refusal(path: str, body: bytes) -> dict[str, Any] | None:
    try:
        return refusal(path, json.loads(body)) if body else None
    except ValueError:
        return None


@contextlib.contextmanager
def serving_in_a_thread(script: Iterable[Reply] = ()) -> Iterator[ScriptedServer]:
    """A :class:`ScriptedServer` on an event loop of its own, in a thread: for a test
    that drives another process with blocking calls (a pty) while the server answers.
    Read ``requests`` once the process is done with the server."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    running = ScriptedServer.running(script)
    try:
        yield asyncio.run_coroutine_threadsafe(running.__aenter__(), loop).result(10)
    finally:
        asyncio.run_coroutine_threadsafe(running.__aexit__(None, None, None), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
