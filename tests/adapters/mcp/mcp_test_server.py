"""An MCP server for the tests, built with the SDK's own server API (``MCPServer``).

    python mcp_test_server.py stdio [--log FILE] [--pid-file FILE] [--ignore-sigterm]
    python mcp_test_server.py stdio --silent      (reads stdin, never answers initialize)
    python mcp_test_server.py stdio --exit-at-once CODE   (says why on stderr and exits)
    python mcp_test_server.py http --fd N [--token T]     (streamable HTTP on a bound socket)

Its tools: ``echo`` answers (read-only), ``fail`` fails (``isError``), ``hang`` never
answers until cancelled, ``wedge`` blocks the whole server, ``image`` returns a PNG,
``big`` returns many characters, ``lone`` (over HTTP) a lone surrogate, ``crash``
kills the server mid-call, ``spawn_child`` leaves a ``sleep`` in its group,
``environment`` tells its folder and variables, ``grow`` adds the tool ``grown``
and says the list changed (``notifications/tools/list_changed``), and ``pick``,
``tag``, ``nothing``, ``query`` and ``files.read`` have names or schemas the model
providers would refuse
as they are. Each request (a call with its arguments),
tool start and cancellation is a line in the ``--log`` file, so a test can see what
the server saw.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

LOG: str | None = None
LONE = "@@LS@@"
"""Stands for a lone surrogate, which the SDK's server cannot write: over HTTP, the
bytes sent have the JSON escape ``\\udc80`` (as long: no length changes) instead."""


def log(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(f"{line}\n")


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 4 for _ in range(4))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


class Logged:
    """Middleware: every request and notification the server receives, in the log."""

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        if ctx.request_id is None:
            log(f"notification {ctx.method} {dict(ctx.params or {})}")
        elif ctx.method == "tools/call":
            params = dict(ctx.params or {})
            log(f"request tools/call {params.get('name')} {json.dumps(params.get('arguments'))}")
        else:
            log(f"request {ctx.method}")
        return await call_next(ctx)


def build_server() -> Any:
    import anyio
    from mcp.server.mcpserver import Context, Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp_types import ToolAnnotations

    def pick(a: str = "", b: str = "") -> str:
        """Needs a or b."""
        return f"picked {a or b}"

    def tag(tags: list[str]) -> str:
        """Tags things."""
        return ",".join(tags)

    def nothing() -> str:
        """Takes nothing."""
        return "nothing"

    def query() -> str:
        """Takes property keys Anthropic refuses (the log shows what it was given)."""
        return "queried"

    awkward = [
        # A top-level anyOf (both providers refuse it), and an array without items.
        Tool.from_function(pick).model_copy(
            update={
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                    "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
                    "$schema": "http://json-schema.org/draft-07/schema#",
                }
            }
        ),
        Tool.from_function(tag).model_copy(
            update={"parameters": {"type": "object", "properties": {"tags": {"type": "array"}}}}
        ),
        # No properties at all: OpenAI refuses an object schema without them.
        Tool.from_function(nothing).model_copy(update={"parameters": {"type": "object"}}),
        # Property keys outside [a-zA-Z0-9_.-]{1,64}, at the top and below: Anthropic
        # refuses them.
        Tool.from_function(query).model_copy(
            update={
                "parameters": {
                    "type": "object",
                    "properties": {
                        "$top": {"type": "integer"},
                        "filter[id]": {"type": "string", "description": "An id."},
                        "user name": {"type": "string"},
                        "k" * 70: {"type": "string"},
                        "options": {
                            "type": "object",
                            "properties": {"sort by": {"type": "string"}},
                            "required": ["sort by"],
                        },
                    },
                    "required": ["$top"],
                }
            }
        ),
    ]
    server = MCPServer("treadle-test", version="1.0", middleware=[Logged()], tools=awkward)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Answers with the text it was given."""
        return f"echo: {text}"

    @server.tool()
    def fail(reason: str = "on purpose") -> str:
        """Always fails."""
        raise ToolError(f"failed {reason}")

    @server.tool()
    async def hang() -> str:
        """Never answers, until cancelled."""
        log("hang started")
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            log("hang cancelled")
            raise
        return "never"

    @server.tool()
    async def wedge() -> str:
        """Blocks the server's event loop: it can hear neither a cancel nor a ping."""
        log("wedge started")
        time.sleep(1000)  # noqa: ASYNC251 - blocking its own loop is the point
        return "never"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
    def image() -> list[Any]:
        """A 4x4 red PNG."""
        return ["here is a picture", Image(data=tiny_png(), format="png")]

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def big(size: int) -> str:
        """``size`` characters of text."""
        return "".join(chr(97 + i % 26) for i in range(size))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lone() -> str:
        """Over HTTP, answers with a lone surrogate."""
        return f"bad {LONE} text"

    @server.tool()
    def crash() -> str:
        """Dies in the middle of the call."""
        log("crash")
        os._exit(3)

    @server.tool()
    def spawn_child() -> str:
        """Starts a sleep that stays in the server's process group."""
        child = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
        log(f"child {child.pid}")
        return f"child {child.pid}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def connect(port: int) -> str:
        """Opens a TCP connection to 127.0.0.1:PORT: "connected", or the error."""
        import socket

        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                return "connected"
        except OSError as error:
            return f"refused: {error.strerror or error}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def environment(names: list[str]) -> str:
        """The server's folder and the values of ``names`` in its environment."""
        return json.dumps({"cwd": os.getcwd(), **{name: os.environ.get(name) for name in names}})

    def grown() -> str:
        """A tool added mid-session."""
        return "grown answered"

    async def grow(ctx: Any) -> str:
        """Adds the tool grown, and says so."""
        server.add_tool(grown, annotations=ToolAnnotations(read_only_hint=True))
        await ctx.request_context.session.send_tool_list_changed()
        return "grew"

    # The SDK finds its Context by the annotation, which a postponed one hides from it.
    grow.__annotations__ = {"ctx": Context, "return": str}
    server.add_tool(grow)

    from pydantic import BaseModel

    class Booking(BaseModel):
        name: str
        seats: int = 1

    async def ask(ctx: Any) -> str:
        """Asks the person who books mid-call (an elicitation), and says the answer."""
        result = await ctx.elicit("Who books?", schema=Booking)
        if result.action == "accept":
            return f"booked for {result.data.name}, {result.data.seats} seats"
        return f"not booked: {result.action}"

    ask.__annotations__ = {"ctx": Context, "return": str}
    server.add_tool(ask)

    @server.tool(name="files.read", annotations=ToolAnnotations(read_only_hint=True))
    def files_read(path: str) -> str:
        """A name with a dot, which the providers refuse."""
        return f"read {path}"

    return server


def main() -> None:
    global LOG
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--log")
    parser.add_argument("--pid-file")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--exit-at-once", type=int)
    parser.add_argument("--fd", type=int)
    parser.add_argument("--token")
    args = parser.parse_args()
    LOG = args.log
    if args.pid_file:
        with open(args.pid_file, "w") as pid_file:
            pid_file.write(str(os.getpid()))
    if args.exit_at_once is not None:
        print("error: TEST_SERVER_KEY is not set", file=sys.stderr)
        raise SystemExit(args.exit_at_once)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, lambda *_: log("SIGTERM ignored"))
    if args.silent:
        for _ in sys.stdin:
            pass
        while args.ignore_sigterm:
            time.sleep(1)
        return
    server = build_server()
    if args.transport == "stdio":
        server.run("stdio")
        while args.ignore_sigterm:  # stubborn: stays after its stdin closed
            time.sleep(1)
        return
    serve_http(server, args.fd, args.token)


def serve_http(server: Any, fd: int, token: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            log(f"http {scope['method']} {dict(scope['headers']).get(b'x-test', b'').decode()}")
            if token and dict(scope["headers"]).get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.body":
                body = message.get("body", b"").replace(LONE.encode(), b"\\udc80")
                message = {**message, "body": body}
            await send(message)

        await app(scope, receive, sending)

    listening = socket.socket(fileno=fd)
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[listening])


if __name__ == "__main__":
    main()
