"""Telemetry's cost per request: the events of one request and one tool call (the
request's span, its tokens and latency, the call's span and duration) through the
tracer, on the SDK with its batching processor and OTLP/HTTP exporters, as a session
has them. The export itself runs on the SDK's thread; the endpoint answers nothing
(a closed port), so what is measured is what the turn's own thread pays.

Without telemetry configured nothing of it runs (tests/entrypoints/test_otlp_export.py
checks that nothing is even imported), so start-up and the turn gap are unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.events import (
    RequestSent,
    ResponseReceived,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome

REQUESTS = 5_000
BUDGET_MS = 1.0


def run() -> Iterator[str]:
    try:
        from treadle.adapters.telemetry import Telemetry, TelemetryConfig
    except ImportError:
        yield "telemetry: skipped (the otel extra is not installed)"
        return
    telemetry = Telemetry.start(
        TelemetryConfig("http://127.0.0.1:9"), "openai:gpt-5", lambda text: text
    )
    observe = telemetry.tracer.observe
    usage = Usage(12_000, 300, cache_read_tokens=10_000)
    observe(TurnStarted("the task"))
    started = time.perf_counter()
    for number in range(1, REQUESTS + 1):
        call = ToolCall(f"call_{number}", "bash", '{"command": "make test"}')
        observe(RequestSent(number, 1, 8192, number * 2, "digest"))
        observe(ResponseReceived(number, "", (call,), usage, "tool_use"))
        observe(ToolStarted(call, "make test"))
        observe(ToolFinished(call, "exit 0", False, 0.5))
    per_request = (time.perf_counter() - started) / REQUESTS * 1000
    observe(TurnEnded(TurnOutcome(OutcomeKind.FINISHED), usage, REQUESTS, 1.0))
    closing = time.perf_counter()
    telemetry.close()
    closed = time.perf_counter() - closing
    verdict = "within" if per_request <= BUDGET_MS else "OVER"
    yield (
        f"telemetry: {per_request:.3f} ms a request on the turn's thread "
        f"({verdict} the {BUDGET_MS:g} ms budget; {REQUESTS:,} requests with a tool call each); "
        f"flushing at the end {closed:.2f} s to a closed port"
    )


if __name__ == "__main__":
    for line in run():
        print(line)
