"""A hand-written MCP server on stdio (one JSON-RPC message a line), for what the
SDK's own server API refuses to send: answers the SDK cannot read.

    python raw_server.py [--broken-list]

Its tools: ``echo`` answers; ``lone`` answers with a lone surrogate (the JSON escape
``\\udc80``), ``bytes`` with a byte that is not UTF-8, ``shapeless`` with a result
that is not an object, ``wrong`` with content that is not a tool's, ``huge`` with
a text of 100 MB (written a mebibyte at a time, never held whole). Its list also
holds ``null``, whose ``inputSchema`` is null, ``listed``, whose is a list, and an
entry without a name. With ``--broken-list``, its tool list is not a list at all.
With ``--clashing-names``, its tools are ``a/b``, ``a_b`` and ``ok`` listed twice,
each answering with its own name.
"""

from __future__ import annotations

import json
import sys
from typing import BinaryIO

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = [
    {"name": name, "inputSchema": SCHEMA}
    for name in ("echo", "lone", "bytes", "shapeless", "wrong")
] + [
    {"name": "null", "description": "Takes nothing, says nothing.", "inputSchema": None},
    {"name": "listed", "inputSchema": ["text"]},
    {"description": "A tool without a name.", "inputSchema": SCHEMA},
    {"name": "huge", "inputSchema": SCHEMA},
]
CLASHING = [
    {"name": name, "description": f"Listed as {name}.", "inputSchema": SCHEMA}
    for name in ("a/b", "a_b", "ok", "ok")
]


def answer(request_id: object, result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def text(request_id: object, said: str) -> bytes:
    return answer(request_id, {"content": [{"type": "text", "text": said}]})


def called(request_id: object, name: str, arguments: dict[str, object]) -> bytes:
    if name == "lone":  # json.dumps writes the lone surrogate as its escape
        return text(request_id, "bad \udc80 text")
    if name == "bytes":
        return text(request_id, "bad BYTE text").replace(b"BYTE", b"\xff")
    if name == "shapeless":
        return answer(request_id, ["not", "an", "object"])
    if name == "wrong":
        return answer(request_id, {"content": [{"type": "hologram"}]})
    if name in ("a/b", "a_b", "ok"):
        return text(request_id, f"called {name}")
    return text(request_id, f"echo: {arguments.get('text', '')}")


HUGE = 100 * 1000 * 1000


def write_huge(out: BinaryIO, request_id: object) -> None:
    head, tail = text(request_id, "@").split(b"@")
    out.write(head)
    for _ in range(HUGE // 2**20):
        out.write(b"a" * 2**20)
    out.write(tail + b"\n")
    out.flush()


def main() -> None:
    broken_list = "--broken-list" in sys.argv
    tools = CLASHING if "--clashing-names" in sys.argv else TOOLS
    out = sys.stdout.buffer
    for line in sys.stdin:
        message = json.loads(line)
        request_id, method = message.get("id"), message.get("method")
        params = message.get("params") or {}
        if request_id is None:
            continue  # a notification
        if method == "tools/call" and params["name"] == "huge":
            write_huge(out, request_id)
            continue
        if method == "initialize":
            reply = answer(
                request_id,
                {
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "1"},
                },
            )
        elif method == "tools/list":
            reply = answer(request_id, {"tools": "none" if broken_list else tools})
        elif method == "tools/call":
            reply = called(request_id, params["name"], params.get("arguments") or {})
        else:
            reply = answer(request_id, {})
        out.write(reply + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
