"""A turn's events as OpenTelemetry spans (the SDK's in-memory exporter): a span per
turn, request, tool call, sub-agent and compaction, each under its parent; GenAI
attributes; no prompt unless log_prompts, and never a key."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from treadle.adapters.fakes import FakeProcess
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.telemetry import TelemetryTee, TurnTracer
from treadle.domain.values.conversation import ToolCall

SECRET = "sk-live-0123456789abcdefSECRET"


def traced(rig, script, processes=None, *, log_prompts=False):
    exporter = InMemorySpanExporter()
    traces = TracerProvider()
    traces.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("test")
    redact = Redactor.from_environ({"OPENAI_API_KEY": SECRET}).redact
    logs = InMemoryLogRecordExporter()
    log_provider = LoggerProvider()
    log_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer = TurnTracer(
        traces.get_tracer("test"),
        meter,
        "openai:gpt-5",
        log_prompts=log_prompts,
        redact=redact,
        logger=log_provider.get_logger("test"),
    )
    reader.logs = logs  # type: ignore[attr-defined]
    r = rig(script, processes)
    tee = TelemetryTee(r.agent.ports.transcript, tracer)
    from dataclasses import replace

    r.agent.ports = replace(r.agent.ports, transcript=tee)
    return r, exporter, reader


def spans_by_name(exporter):
    return {span.name: span for span in exporter.get_finished_spans()}


async def test_a_turn_s_spans_link_to_their_parents(rig) -> None:
    spawn = ToolCall("a1", "agent", json.dumps({"task": "sub"}))
    script = {
        "*": [R.calling("bash", command="make"), R((), (spawn,)), R.saying("done")],
        "sub": [R.saying("sub done")],
    }
    r, exporter, reader = traced(rig, script, {"make": FakeProcess("ok")})
    await r.agent.run_turn(f"build it with {SECRET}")
    spans = exporter.get_finished_spans()
    turn = next(s for s in spans if s.name == "invoke_agent treadle")
    sub = next(s for s in spans if s.name == "invoke_agent agent-1")
    agent_call = next(s for s in spans if s.name == "execute_tool agent")
    bash = next(s for s in spans if s.name == "execute_tool bash")
    chats = [s for s in spans if s.name == "chat gpt-5"]
    assert turn.parent is None
    assert bash.parent.span_id == agent_call.parent.span_id == turn.context.span_id
    assert sub.parent.span_id == agent_call.context.span_id
    assert len(chats) == 4
    assert sum(c.parent.span_id == sub.context.span_id for c in chats) == 1
    assert {s.context.trace_id for s in spans} == {turn.context.trace_id}
    assert chats[0].attributes["gen_ai.operation.name"] == "chat"
    assert chats[0].attributes["gen_ai.request.model"] == "gpt-5"
    assert chats[0].attributes["gen_ai.provider.name"] == "openai"
    assert chats[0].attributes["gen_ai.usage.input_tokens"] == 10
    assert bash.attributes["gen_ai.tool.name"] == "bash"
    assert turn.attributes["treadle.outcome"] == "finished"
    for span in spans:  # by default, nothing the person or the model wrote
        for value in span.attributes.values():
            assert "build it" not in str(value) and SECRET not in str(value)
    metrics = reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
    names = {metric.name for metric in metrics}
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= names
    assert "treadle.tool.duration" in names
    (ended,) = [
        record
        for record in reader.logs.get_finished_logs()
        if record.log_record.event_name == "treadle.turn.ended"
        and record.log_record.attributes["gen_ai.agent.name"] == "treadle"
    ]
    assert ended.log_record.body == "Turn finished"
    assert ended.log_record.span_id == turn.context.span_id


async def test_with_log_prompts_the_task_and_answers_go_redacted(rig) -> None:
    r, exporter, _ = traced(rig, [R.saying("done")], log_prompts=True)
    await r.agent.run_turn(f"build it with {SECRET}")
    spans = spans_by_name(exporter)
    task = spans["invoke_agent treadle"].attributes["gen_ai.input.messages"]
    assert "build it with" in task and SECRET not in task
    assert spans["chat gpt-5"].attributes["gen_ai.output.messages"] == "done"


async def test_a_compaction_is_a_span_of_its_own_around_its_request(rig) -> None:
    from treadle.domain.values.events import CompactionStarted, ContextCompacted

    r, exporter, _ = traced(rig, [R.saying("done")])
    tracer = r.agent.ports.transcript.tracer
    await r.agent.run_turn("x")
    tracer.observe(CompactionStarted(100, 200, 5))  # no turn open: passed over
    assert "compact_context" not in spans_by_name(exporter)
    from treadle.domain.values.events import RequestSent, TurnStarted

    tracer.observe(TurnStarted("y"))
    tracer.observe(CompactionStarted(100, 200, 5))
    tracer.observe(RequestSent(1, 1, 100, 3, "d"))
    tracer.observe(ContextCompacted(100, 20, 200, ()))
    compaction = spans_by_name(exporter)["compact_context"]
    assert compaction.attributes["treadle.context.tokens_after"] == 20
