"""Telemetry end to end: a turn's spans reach a real OTLP/HTTP receiver on 127.0.0.1
(a small http.server decoding the protobuf), with their parent links and no key or
prompt; without an endpoint, nothing of OpenTelemetry is even imported."""

from __future__ import annotations

import gzip
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import run_treadle, treadle_env, write_script

SECRET = "sk-live-0123456789abcdefSECRET"


class Receiver(http.server.BaseHTTPRequestHandler):
    bodies: dict[str, list[bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.bodies.setdefault(self.path, []).append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, dict[str, list[bytes]]]]:
    bodies: dict[str, list[bytes]] = {}
    handler = type("Handler", (Receiver,), {"bodies": bodies})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def test_a_turn_s_spans_reach_an_otlp_receiver_with_their_parents(tmp_path: Path, collector):
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    endpoint, bodies = collector
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "Done."},
    )
    env = treadle_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OPENAI_API_KEY=SECRET)
    done = run_treadle(
        "--model", f"script:{script}", "--print", f"say hi, the key is {SECRET}",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    spans = []
    for body in bodies.get("/v1/traces", []):
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    by_name = {span.name: span for span in spans}
    turn = by_name["invoke_agent treadle"]
    tool = by_name["execute_tool bash"]
    chats = [span for span in spans if span.name.startswith("chat ")]
    assert turn.parent_span_id == b""
    assert tool.parent_span_id == turn.span_id
    assert len(chats) == 2 and all(chat.parent_span_id == turn.span_id for chat in chats)
    assert len({span.trace_id for span in spans}) == 1
    exported = b"".join(
        b for path in ("/v1/traces", "/v1/metrics", "/v1/logs") for b in bodies.get(path, [])
    )
    assert SECRET.encode() not in exported
    assert b"say hi" not in exported  # no prompt by default
    assert bodies.get("/v1/metrics"), "the metrics are flushed at the end too"
    assert bodies.get("/v1/logs"), "and the log events"


def test_without_an_endpoint_nothing_of_opentelemetry_is_imported(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": "Done."})
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['treadle', '--model', 'script:{script}', '--print', 'x']\n"
        "try:\n"
        "    runpy.run_module('treadle', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = treadle_env(tmp_path)
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert "Turn finished" in done.stdout, done.stderr
    assert "LOADED []" in done.stdout
