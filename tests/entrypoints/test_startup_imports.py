"""A session's first request goes out before the modules it does not need are loaded
(issue 21): a real ``treadle --print`` against a local server, its ``sys.modules``
taken as it connects to the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.bench_startup import hello_server
from tests.processes import ROOT, treadle_env
from treadle.entrypoints import NOT_BEFORE_FIRST_REQUEST

# Run as the program: at each connection to the server's port it takes the modules
# loaded, less those another thread imported (the turn start's checkpoint, which does
# not hold the request up); the last connection is the model request's (a one-request
# session asks the server's facts first).
PROGRAM = """
import atexit, json, sys, threading
port, out = int(sys.argv[1]), sys.argv[2]
elsewhere, snapshots = set(), []
def seen(event, args):
    if event == "import" and threading.current_thread() is not threading.main_thread():
        elsewhere.add(args[0])
    elif event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (port,):
        snapshots.append(sorted(set(sys.modules) - elsewhere))
sys.addaudithook(seen)
atexit.register(lambda: open(out, "w").write(json.dumps(snapshots)))
from treadle.entrypoints.cli import main
sys.exit(main(sys.argv[3:]))
"""


def modules_at_each_connection(tmp_path: Path) -> list[list[str]]:
    out = tmp_path / "modules.json"
    env = treadle_env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    with hello_server() as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        args = ["--print", "--model", "openai:local", "--base-url", url, "hi"]
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM, port, str(out), *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    assert "hello" in done.stdout
    snapshots: list[list[str]] = json.loads(out.read_text())
    return snapshots


def test_the_first_request_goes_out_without_what_it_does_not_need(tmp_path: Path) -> None:
    snapshots = modules_at_each_connection(tmp_path)
    assert snapshots, "the session never connected to the server"
    at_request = snapshots[-1]
    loaded = sorted(
        name
        for name in at_request
        if any(name == lazy or name.startswith(lazy + ".") for lazy in NOT_BEFORE_FIRST_REQUEST)
    )
    assert loaded == [], loaded
    # The snapshot is a real one: what the request needs is there.
    assert {"httpx", "treadle.adapters.http_model.openai_chat"} <= set(at_request)
