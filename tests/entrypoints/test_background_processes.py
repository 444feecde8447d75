"""Background processes, real (issue 27): a python http.server the model starts with
``background: true``, fetches from with curl in a later call, reads and stops; one left
running when treadle exits; one running when treadle dies by kill -9."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.processes import (
    gone_within,
    is_running,
    run_treadle,
    treadle_env,
    until,
    wait_for_pid,
    write_script,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _server(port: int) -> str:
    """The dev server, its pid written where the test reads it (exec: the shell's pid is
    the server's)."""
    return f"echo $$ > server.pid; exec {sys.executable} -u -m http.server {port} --bind 127.0.0.1"


def _fetch(port: int) -> str:
    """A later call that waits for the server to answer, then fetches a file from it."""
    fetcher = (
        f"curl -sf http://127.0.0.1:{port}/marker.txt"
        if shutil.which("curl")
        else f'{sys.executable} -c "import urllib.request as u; print(u.urlopen('
        f"'http://127.0.0.1:{port}/marker.txt').read().decode())\""
    )
    return f"for i in $(seq 100); do {fetcher} && break; sleep 0.1; done"


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _tool_results(home: Path) -> list[str]:
    """What the model read of each call, from the session's transcript."""
    (transcript,) = (home / "state").rglob("transcript.jsonl")
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    return [
        r["message"]["text"]
        for r in records
        if r["type"] == "message_added" and r["message"]["role"] == "tool"
    ]


def _kill(pid: int | None) -> None:
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_a_server_started_in_the_background_is_fetched_from_read_and_stopped(
    tmp_path: Path,
) -> None:
    port = _free_port()
    (tmp_path / "marker.txt").write_text("served by the background\n")
    script = write_script(
        tmp_path,
        _call("bash", command=_server(port), background=True),
        _call("bash", command=_fetch(port)),
        _call("process_output", id="bg1"),
        _call("process_stop", id="bg1"),
        _call("bash", command="cat server.pid"),
        {"text": "The server answered."},
    )
    pid = None
    try:
        done = run_treadle(
            "--model", f"script:{script}", "--json", "serve and fetch",
            cwd=tmp_path, env=treadle_env(tmp_path),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        started, fetched, read, stopped, pid_text = _tool_results(tmp_path)
        pid = int(pid_text.strip().splitlines()[-1])
        assert "Started in the background as bg1" in started
        assert "served by the background" in fetched  # a later call reached it
        assert "is running" in read and "GET /marker.txt" in read  # its own log line
        assert "stopped after" in stopped
        assert not is_running(pid)  # stopped by process_stop, before treadle ended
    finally:
        _kill(pid)


def test_a_server_left_running_is_gone_when_treadle_exits(tmp_path: Path) -> None:
    port = _free_port()
    script = write_script(
        tmp_path,
        _call("bash", command=_server(port), background=True),
        _call("bash", command=_fetch(port)),
        {"text": "Left it running."},
    )
    pid = None
    try:
        done = run_treadle(
            "--model", f"script:{script}", "--print", "serve",
            cwd=tmp_path, env=treadle_env(tmp_path),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        pid = int((tmp_path / "server.pid").read_text())
        assert not is_running(pid), "the background server outlived treadle"
        said = "stopped 1 background process as the session ended: bg1 (echo $$ > server.pid"
        assert said in done.stdout  # the session's end stopped it, and said so
        assert done.stdout.rstrip().endswith("Turn finished")
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0
    finally:
        _kill(pid)


def test_a_server_running_when_treadle_is_killed_with_sigkill_is_gone_within_a_second(
    tmp_path: Path,
) -> None:
    port = _free_port()
    script = write_script(
        tmp_path,
        _call("bash", command=_server(port), background=True),
        _call("bash", command=_fetch(port) + "; touch fetched; sleep 300"),
        {"text": "never reached"},
    )
    treadle = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", "--print", "serve"],
        cwd=tmp_path,
        env=treadle_env(tmp_path),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid = None
    try:
        pid = wait_for_pid(tmp_path / "server.pid")
        assert until((tmp_path / "fetched").exists, 20), "the server never answered"
        assert is_running(pid)
        treadle.send_signal(signal.SIGKILL)
        treadle.wait(timeout=10)
        assert gone_within(pid, 1.0), "the background server outlived treadle's kill -9"
    finally:
        treadle.kill()
        _kill(pid)
