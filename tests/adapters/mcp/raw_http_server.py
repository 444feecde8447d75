"""A hand-written MCP server over streamable HTTP (the standard library's HTTP server on
a socket the test binds), for answers too large to build in memory:

    python raw_http_server.py --fd N

Its tools: ``echo`` answers; ``huge_json`` answers with a text of 100 MB as one JSON
body, ``huge_sse`` as one server-sent event. Both are written a mebibyte at a time
and never held whole; the connection closes after each answer.
"""

from __future__ import annotations

import argparse
import json
import socket
import socketserver
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

HUGE = 100 * 1000 * 1000
TOOLS = [
    {"name": name, "inputSchema": {"type": "object", "properties": {}}}
    for name in ("echo", "huge_json", "huge_sse")
]


def answer(request_id: object, result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # no stream of the server's own
        self.send_response(405)
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.end_headers()

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request_id, method = message.get("id"), message.get("method")
        params = message.get("params") or {}
        if request_id is None:
            self.send_response(202)
            self.end_headers()
            return
        if method == "initialize":
            reply = answer(
                request_id,
                {
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw-http", "version": "1"},
                },
            )
        elif method == "tools/list":
            reply = answer(request_id, {"tools": TOOLS})
        elif method == "tools/call" and params["name"] in ("huge_json", "huge_sse"):
            self.huge(request_id, sse=params["name"] == "huge_sse")
            return
        elif method == "tools/call":
            reply = answer(request_id, {"content": [{"type": "text", "text": "echo"}]})
        else:
            reply = answer(request_id, {})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def huge(self, request_id: object, *, sse: bool) -> None:
        head, tail = answer(request_id, {"content": [{"type": "text", "text": "@"}]}).split(b"@")
        if sse:
            head, tail = b"event: message\ndata: " + head, tail + b"\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            self.wfile.write(head)
            for _ in range(HUGE // 2**20):
                self.wfile.write(b"a" * 2**20)
            self.wfile.write(tail)
        except OSError:
            pass  # the client stopped reading


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, required=True)
    args = parser.parse_args()
    server = Server(("127.0.0.1", 0), Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = socket.socket(fileno=args.fd)
    server.serve_forever()


if __name__ == "__main__":
    main()
