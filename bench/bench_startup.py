"""Start-up: ``treadle --version``, a whole one-request session and the time from the
process's start to its first model request (stamped by the server as it arrives), against
the bare interpreter measured in the same run.

The session is the issue's "hello": ``treadle --print`` against a local
OpenAI-compatible server started here, on 127.0.0.1, whose one answer is "hello"; like
llama-server it says its window at ``/props``, which the session asks first.
Runs alternate between the commands so that a change in the machine's load falls
on all of them alike; the figures are medians.
"""

from __future__ import annotations

import http.server
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar

ROUNDS = 21
HELLO_BUDGET = 0.150  # seconds, median, on this machine
# Issue 21: 0.8x Codex's start -> first request measured beside it, at idle.
FIRST_REQUEST_BUDGET = 0.230
PARTS = ("domain", "ports", "adapters", "entrypoints")
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
    # When the first model request (a POST) of the current run arrived, on the
    # benchmark's own perf_counter clock; reset by the run before it starts its process.
    first_post: ClassVar[list[float]] = []

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
        if not self.first_post:
            self.first_post.append(time.perf_counter())
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
    """Seconds from the process's start to its exit."""
    return _run(command, env, cwd)[1]


def _first_request(command: Sequence[str], env: dict[str, str], cwd: str) -> float:
    """Seconds from the process's start to its first model request's arrival."""
    started, _ = _run(command, env, cwd)
    if not _Hello.first_post:
        raise RuntimeError(f"{command} sent no model request")
    return _Hello.first_post[0] - started


def _run(command: Sequence[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    _Hello.first_post.clear()
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return started, elapsed


def _own_source_folders() -> list[str]:
    """The folders of treadle's own modules, wherever the install put them."""
    folders: list[str] = []
    for package in ("treadle", *(f"treadle.{part}" for part in PARTS)):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            folders.extend(spec.submodule_search_locations)
    return folders


def _without_own_bytecode(env: dict[str, str], prefix: str) -> dict[str, str]:
    """An environment where the interpreter's and the libraries' bytecode is there but
    treadle's own is not, and none is written: an editable install run with
    ``PYTHONDONTWRITEBYTECODE=1`` before anything compiled it. The bytecode lives under
    ``prefix`` (``PYTHONPYCACHEPREFIX``), filled by one run; then treadle's part of it
    goes."""
    for folder in _own_source_folders():
        shutil.rmtree(prefix + os.path.abspath(folder), ignore_errors=True)
    return env | {"PYTHONPYCACHEPREFIX": prefix, "PYTHONDONTWRITEBYTECODE": "1"}


def measure(rounds: int = ROUNDS) -> dict[str, float]:
    """Median seconds of the bare interpreter, ``--version`` and the hello session (to
    its end, and to its first request with and without treadle's bytecode)."""
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
        hello = [*treadle, "--print", "--model", "openai:local", "--base-url", url, "hi"]
        prefix = os.path.join(folder, "bytecode")
        _timed(hello, env | {"PYTHONPYCACHEPREFIX": prefix}, folder)
        uncompiled = _without_own_bytecode(env, prefix)
        no_writing = env | {"PYTHONDONTWRITEBYTECODE": "1"}
        runs: dict[str, tuple[Callable[..., float], Sequence[str], dict[str, str]]] = {
            "bare": (_timed, [sys.executable, "-c", "pass"], env),
            "version": (_timed, [*treadle, "--version"], env),
            "hello": (_timed, hello, env),
            "first": (_first_request, hello, env),
            "first_no_writing": (_first_request, hello, no_writing),
            "first_uncompiled": (_first_request, hello, uncompiled),
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        for how, command, its_env in runs.values():  # warm the caches once
            how(command, its_env, folder)
        for _ in range(rounds):
            for name, (how, command, its_env) in runs.items():
                times[name].append(how(command, its_env, folder))
    return {name: statistics.median(values) for name, values in times.items()}


def run() -> list[str]:
    figures = measure()
    bare, version, hello = figures["bare"], figures["version"], figures["hello"]
    ok_version = "ok" if version <= VERSION_RATIO * bare else "MISSED"
    ok_hello = "ok" if hello <= HELLO_BUDGET else "MISSED"
    lines = [
        f"start-up: bare python -c pass {bare * 1000:.1f} ms (median of {ROUNDS})",
        f"start-up: treadle --version {version * 1000:.1f} ms = {version / bare:.2f}x bare "
        f"(target <= {VERSION_RATIO:g}x: {ok_version})",
        f"start-up: hello session against a local server {hello * 1000:.1f} ms = "
        f"{hello / bare:.1f}x bare (target <= {HELLO_BUDGET * 1000:.0f} ms: {ok_hello})",
    ]
    for name, how in (
        ("first", "bytecode as installed"),
        ("first_no_writing", "PYTHONDONTWRITEBYTECODE=1"),
        ("first_uncompiled", "none of treadle's bytecode, none written"),
    ):
        seconds = figures[name]
        ok = "ok" if seconds <= FIRST_REQUEST_BUDGET else "MISSED"
        lines.append(
            f"start-up: process start -> first request, {how}: {seconds * 1000:.1f} ms = "
            f"{seconds / bare:.1f}x bare (target <= {FIRST_REQUEST_BUDGET * 1000:.0f} ms: {ok})"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
