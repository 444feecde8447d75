"""The transcript's cost: appending 100,000 events, and reading them back to resume.

Appending is compared, in the same run, with writing the same lines to a file with no
processing (one write and one flush per line, the same durability); reading back (every
event rebuilt, then the conversation) with parsing the same lines as plain JSON.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript, read_transcript
from treadle.adapters.transcript.serialize import event_to_record
from treadle.domain.rules.resume import rebuild_history
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    MessageAdded,
    RequestSent,
    ResponseReceived,
    ToolFinished,
    ToolStarted,
    TurnEvent,
    UsageUpdated,
)

EVENTS = 100_000
ANSWER = "the quick brown fox jumps over the lazy dog and runs the tests again"
ENVIRON = {
    "OPENAI_API_KEY": "sk-bench-0123456789abcdefghijklmnop",
    "GITHUB_TOKEN": "ghp_benchbenchbenchbenchbenchbench01",
    "DB_PASSWORD": "correct-horse-battery-staple",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}


def session_events(count: int) -> list[TurnEvent]:
    """A long session's mix: streamed answers, tool calls with output, usage."""
    events: list[TurnEvent] = [MessageAdded(Message.user("Fix the failing test"))]
    words = ANSWER.split()
    output = "\n".join(f"tests/test_{i}.py::test_case PASSED" for i in range(12))
    request = 0
    while len(events) < count:
        request += 1
        call = ToolCall(f"call_{request}", "bash", json.dumps({"command": f"pytest -k {request}"}))
        text = " ".join(words)
        events += [RequestSent(request, 1, 8192, len(events), "0123456789abcdef")]
        events += [AnswerDelta(word + " ") for word in words]
        events += [
            UsageUpdated(Usage(1000, 40), Usage(1000 * request, 40 * request), request),
            ResponseReceived(request, text, (call,), Usage(1000, 40), "tool_use"),
            MessageAdded(Message.assistant(text, (call,))),
            ToolStarted(call, f"pytest -k {request}"),
            ToolFinished(call, "exit 0 · 0.42 s", False, 0.42),
            MessageAdded(Message.tool(call.id, f"Exit code 0. Duration 0.42 s.\n{output}")),
        ]
    return events[:count]


def _append(path: Path, events: list[TurnEvent], redactor: Redactor | None) -> float:
    started = time.perf_counter()
    transcript = JsonlTranscript(path, redact=redactor)
    for event in events:
        transcript.record(event)
    transcript.close()
    return time.perf_counter() - started


def _baseline_write(path: Path, lines: list[str]) -> float:
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as file:
        for line in lines:
            file.write(line)
            file.flush()
    return time.perf_counter() - started


def run() -> list[str]:
    events = session_events(EVENTS)
    lines = [json.dumps(event_to_record(e), ensure_ascii=False) + "\n" for e in events]
    with tempfile.TemporaryDirectory(prefix="treadle-bench-") as folder:
        root = Path(folder)
        baseline = _baseline_write(root / "baseline.jsonl", lines)
        plain = _append(root / "plain.jsonl", events, None)
        redacted = _append(root / "redacted.jsonl", events, Redactor.from_environ(ENVIRON))

        started = time.perf_counter()
        for line in (root / "baseline.jsonl").read_text(encoding="utf-8").splitlines():
            json.loads(line)
        parse = time.perf_counter() - started
        started = time.perf_counter()
        read = list(read_transcript(root / "redacted.jsonl"))
        history = rebuild_history(read)
        resume = time.perf_counter() - started
        assert len(read) == EVENTS and len(history) > 1

    def rate(seconds: float) -> str:
        return f"{EVENTS / seconds:,.0f} events/s"

    return [
        f"transcript: appending {EVENTS:,} events, each flushed as it happens",
        f"  raw lines, no processing:  {rate(baseline)} (baseline)",
        f"  JsonlTranscript:           {rate(plain)} ({baseline / plain:.2f}x the baseline)",
        f"  JsonlTranscript, redacted: {rate(redacted)} ({baseline / redacted:.2f}x the baseline)",
        f"transcript: reading {EVENTS:,} events back to resume",
        f"  json.loads only:           {parse:.2f} s (baseline)",
        f"  read_transcript + rebuild: {resume:.2f} s ({resume / parse:.1f}x the baseline, "
        f"{resume / EVENTS * 1e6:.0f} µs an event)",
    ]


if __name__ == "__main__":  # pragma: no cover
    print("\n".join(run()))
