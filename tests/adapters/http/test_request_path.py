"""A request crosses at most six treadle files from the command line's parse to the
socket write (issue 29), as README's "Where things are" names them.

One ``treadle --print`` runs in a process of its own against a local server for each
protocol. The Python stack is noted when the protocol's ``Post`` is made (its body's
bytes ready) and when the socket's ``send`` writes the POST, each followed back
through the tasks that led to it (a task notes where it was created, up to the file
whose coroutine it runs: ``StopSignal.race`` schedules ``response.py``'s stream in a
task of its own, and the request never passes through it); the treadle
files on the two are the request's path. What was built before the first request
(the container, the wiring) has returned by then, as have the helpers a protocol
calls to encode its body.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import treadle_env

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("domain", "ports", "adapters", "entrypoints")

PATH_OF = {
    "openai": "adapters/http_model/openai_chat.py",
    "openai-responses": "adapters/http_model/openai_responses.py",
    "anthropic": "adapters/http_model/anthropic.py",
}

PROGRAM = r"""
import http.server, json, socket, sys, threading, traceback

ANSWERS = {
    "/v1/chat/completions": [
        {"choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ],
    "/v1/responses": [
        {"type": "response.output_text.delta", "output_index": 0, "delta": "hi"},
        {"type": "response.completed", "response": {"status": "completed", "output": []}},
    ],
    "/v1/messages": [
        {"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop"},
    ],
}

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(404); self.send_header("content-length", "0"); self.end_headers()
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        events = ANSWERS[self.path]
        body = b"".join(
            f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n".encode() for e in events
        ) + (b"data: [DONE]\n\n" if "chat" in self.path else b"")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()

import asyncio, asyncio.base_events
from treadle.adapters.http_model import endpoint

paths = {}  # each task: the frames that led to it, through the tasks that made it

def path_here():
    task = asyncio.current_task() if asyncio._get_running_loop() else None
    return paths.get(task, []) + [frame.filename for frame in traceback.extract_stack()]

create_task = asyncio.base_events.BaseEventLoop.create_task
def creating(self, coro, **named):
    led = path_here()
    # A task goes on with the work of the file whose coroutine it runs: a helper that
    # only schedules it (a race against the stop) is no step the request takes.
    own = getattr(getattr(coro, "cr_code", None), "co_filename", None)
    if own in led:
        led = led[: len(led) - led[::-1].index(own)]
    task = create_task(self, coro, **named)
    paths[task] = led
    return task
asyncio.base_events.BaseEventLoop.create_task = creating

stacks = {"post": [], "write": []}
made = endpoint.Post.__init__
def making(self, *args, **named):
    stacks["post"].append(path_here())
    made(self, *args, **named)
endpoint.Post.__init__ = making

send, sendall = socket.socket.send, socket.socket.sendall
def noted(write):
    def writing(self, data, *args):
        if bytes(data[:5]) == b"POST " and threading.current_thread() is threading.main_thread():
            stacks["write"].append(path_here())
        return write(self, data, *args)
    return writing
socket.socket.send, socket.socket.sendall = noted(send), noted(sendall)

from treadle.entrypoints.cli import main
url = f"http://127.0.0.1:{server.server_address[1]}/v1"
try:
    main(["--print", "--model", sys.argv[1] + ":local", "--base-url", url, "hi"])
except SystemExit as done:
    assert done.code == 0, done.code
print(json.dumps(stacks))
"""


def _treadle_files(stack: list[str]) -> list[str]:
    """The treadle source files on a stack, outermost first, each once."""
    files: list[str] = []
    for name in stack:
        path = Path(name).resolve()
        if name.startswith("<") or not path.is_relative_to(ROOT):
            continue
        relative = path.relative_to(ROOT).as_posix()
        if relative.split("/")[0] in PACKAGES and relative not in files:
            files.append(relative)
    return files


@pytest.mark.parametrize("protocol", sorted(PATH_OF))
def test_a_request_crosses_at_most_six_treadle_files(tmp_path, protocol):
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, protocol],
        cwd=tmp_path,
        env=treadle_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    stacks = json.loads(result.stdout.splitlines()[-1])
    assert len(stacks["post"]) == len(stacks["write"]) == 1, "one POST for one answer"
    made, written = (_treadle_files(stacks[moment][0]) for moment in ("post", "write"))
    files = _treadle_files([*made, *written])
    assert files[0] == "entrypoints/cli.py"
    assert PATH_OF[protocol] in made, made  # the protocol says what is posted
    assert written[-1] == "adapters/http_model/endpoint.py", written  # one attempt
    assert len(files) <= 6, files
