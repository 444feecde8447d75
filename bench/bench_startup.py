"""Start-up: ``treadle --version`` and a whole one-request session, against the bare
interpreter measured in the same run.

The session is the issue's "hello": ``treadle --print`` against a local
OpenAI-compatible server started here, on 127.0.0.1, whose one answer is "hello"; like
llama-server it says its window at ``/props``, which the session asks first.
Runs alternate between the commands so that a change in the machine's load falls
on all of them alike; the figures are medians.
"""

from __future__ import annotations

import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

ROUNDS = 21
HELLO_BUDGET = 0.150  # seconds, median, on this machine
VERSION_RATIO = 2.0

_CHUNKS = (
    b'{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"hello"},"finish_reason":null}]}',
    b'{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}',
    b'{"id":"c1","object":"chat.completion.chunk","choices":[],'
    b'"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}',
    b"[DONE]",
)
HELLO_STREAM = b"".join(b"data: " + chunk + b"\n\n" for chunk in _CHUNKS)


PROPS = b'{"default_generation_settings":{"n_ctx":32768},"chat_template_caps":{}}'


class _Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        """What a session asks first: llama.cpp's /props (its window); 404 elsewhere."""
        found = self.path == "/props"
        body = PROPS if found else b'{"error": {"message": "not found"}}'
        self.send_response(200 if found else 404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(HELLO_STREAM)))
        self.end_headers()
        self.wfile.write(HELLO_STREAM)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def hello_server() -> Iterator[str]:
    """A model server on 127.0.0.1 that answers every request with "hello"."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def _treadle() -> list[str]:
    found = shutil.which("treadle", path=os.path.dirname(sys.executable))
    return [found] if found else [sys.executable, "-m", "treadle"]


def _timed(command: Sequence[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def measure(rounds: int = ROUNDS) -> dict[str, float]:
    """Median seconds of the bare interpreter, ``--version`` and the hello session."""
    treadle = _treadle()
    with tempfile.TemporaryDirectory(prefix="treadle-bench-") as folder, hello_server() as url:
        # As installed, a program has its bytecode cached (pip compiles it); a session
        # that sets PYTHONDONTWRITEBYTECODE would time the compiler instead.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("TREADLE_") and k != "PYTHONDONTWRITEBYTECODE"
        }
        env["TREADLE_STATE_DIR"] = os.path.join(folder, "state")
        env["TREADLE_CONFIG_DIR"] = os.path.join(folder, "config")
        commands = {
            "bare": [sys.executable, "-c", "pass"],
            "version": [*treadle, "--version"],
            "hello": [*treadle, "--print", "--model", "openai:local", "--base-url", url, "hi"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for command in commands.values():  # warm the caches once
            _timed(command, env, folder)
        for _ in range(rounds):
            for name, command in commands.items():
                times[name].append(_timed(command, env, folder))
    return {name: statistics.median(values) for name, values in times.items()}


def run() -> list[str]:
    figures = measure()
    bare, version, hello = figures["bare"], figures["version"], figures["hello"]
    ok_version = "ok" if version <= VERSION_RATIO * bare else "MISSED"
    ok_hello = "ok" if hello <= HELLO_BUDGET else "MISSED"
    return [
        f"start-up: bare python -c pass {bare * 1000:.1f} ms (median of {ROUNDS})",
        f"start-up: treadle --version {version * 1000:.1f} ms = {version / bare:.2f}x bare "
        f"(target <= {VERSION_RATIO:g}x: {ok_version})",
        f"start-up: hello session against a local server {hello * 1000:.1f} ms = "
        f"{hello / bare:.1f}x bare (target <= {HELLO_BUDGET * 1000:.0f} ms: {ok_hello})",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
