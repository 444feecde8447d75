"""The protocol's own test server, ``@modelcontextprotocol/server-everything``, installed
by npm into ``build/test-cache`` of the checkout (once, under a lock: the tests run in
several processes; never committed), or the reason the tests that need it are skipped."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
ENTRY = Path("node_modules", *PACKAGE.split("/"), "dist", "index.js")


def installed(cache: Path) -> Path:
    """The server's entry script, installed under ``cache`` if it is not yet; skips the
    test (with why) when node or npm is absent or the install fails."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the protocol's test server (server-everything)")
    folder = cache / VERSION
    entry = folder / ENTRY
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not entry.exists():
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                    str(folder),
                    f"{PACKAGE}@{VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0 or not entry.exists():
                last = (done.stderr.strip().splitlines() or ["no output"])[-1]
                pytest.skip(f"npm could not install {PACKAGE}@{VERSION}: {last}")
    return entry


CACHE = Path(__file__).resolve().parents[3] / "build" / "test-cache" / "server-everything"


@pytest.fixture(scope="session")
def everything() -> Path:
    """The entry script of server-everything (``node ENTRY stdio``)."""
    return installed(CACHE)


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return int(listener.getsockname()[1])


@contextlib.contextmanager
def everything_over_http(entry: Path, log: Path) -> Iterator[str]:
    """server-everything's streamable HTTP transport on a free port of 127.0.0.1; its
    address (``http://127.0.0.1:PORT/mcp``) while it runs."""
    port = free_port()
    environment = {**os.environ, "PORT": str(port)}
    with open(log, "wb") as errors:
        server = subprocess.Popen(
            ["node", str(entry), "streamableHttp"],
            stdout=errors,
            stderr=errors,
            env=environment,
            start_new_session=True,
        )
    try:
        for _ in range(500):  # a process is watched: up to 10 s for it to listen
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
                break
            if server.poll() is not None:
                pytest.fail(f"server-everything over HTTP exited: {log.read_text()[-500:]}")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
