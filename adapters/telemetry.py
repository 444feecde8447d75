"""OpenTelemetry for a session: a turn's events as spans and metrics (the ``otel`` extra).

Imported only when telemetry is configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or an
``[otel]`` table): without it, nothing of OpenTelemetry is loaded. Spans follow the
GenAI semantic conventions: a turn is ``invoke_agent treadle``, a request
``chat MODEL``, a tool call ``execute_tool NAME``, a sub-agent ``invoke_agent
agent-1`` under the call that started it, a compaction ``compact_context``.

What a person wrote and what the model answered (prompts, answers, commands) is left
out unless ``log_prompts``; then it goes through the session's redactor first. Keys
are never read here: the spans carry names, counts and durations.

Example::

    telemetry = Telemetry.start(TelemetryConfig("http://127.0.0.1:4318"), "gpt-5", redact)
    transcript = TelemetryTee(transcript, telemetry)   # every event goes through it
    ...
    telemetry.close()                                   # flushes what is left
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import Logger
from opentelemetry.metrics import Meter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from treadle.domain.values.events import (
    CompactionStarted,
    ContextCompacted,
    Notice,
    RequestFailed,
    RequestSent,
    ResponseReceived,
    SubAgentFinished,
    SubAgentStarted,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.outcome import OutcomeKind
from treadle.ports.transcript import TranscriptStore

SYSTEM = "treadle"
CONTENT_LIMIT = 8_192
"""Characters of a prompt or an answer a span keeps, with ``log_prompts``."""


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    """Where to export (an OTLP/HTTP endpoint: its ``/v1/traces``… are added) and whether
    prompts and answers go too."""

    endpoint: str
    log_prompts: bool = False
    service: str = "treadle"


@dataclass
class _Agent:
    span: Span
    requests: dict[int, tuple[Span, float]] = field(default_factory=dict)
    tools: dict[str, tuple[Span, float]] = field(default_factory=dict)
    agent_calls: list[Span] = field(default_factory=list)
    """The spans of its running ``agent`` calls not yet matched to the sub-agent they start."""
    compaction: Span | None = None


class TurnTracer:
    """Spans and metrics from a session's events, as they come; pure mapping over the
    OpenTelemetry API (the SDK and its exporters are :meth:`Telemetry.start`'s)."""

    def __init__(
        self,
        tracer: Tracer,
        meter: Meter,
        model: str,
        *,
        log_prompts: bool = False,
        redact: Callable[[str], str] = lambda text: text,
        now: Callable[[], float] = time.perf_counter,
        logger: Logger | None = None,
    ) -> None:
        self.tracer, self.model, self.log_prompts = tracer, model, log_prompts
        self.logger = logger
        """Where log events go (a notice, a turn's end); None: nowhere."""
        self.redact, self.now = redact, now
        self._agents: dict[str, _Agent] = {}
        self._subagent_spans: dict[str, Span] = {}
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="tokens by kind"
        )
        self.latency = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="a request's duration"
        )
        self.tool_time = meter.create_histogram(
            "treadle.tool.duration", unit="s", description="a tool call's duration"
        )
        self.cost = meter.create_counter("treadle.cost", unit="USD", description="dollars spent")

    def observe(self, event: TurnEvent) -> None:
        match event:
            case TurnStarted(task=task, agent=agent):
                self._turn_started(agent, task)
            case RequestSent(number=number, agent=agent):
                self._request_sent(agent, number)
            case ResponseReceived(number=number, agent=agent) as received:
                self._request_ended(agent, number, received)
            case RequestFailed(number=number, error=error, agent=agent):
                self._request_ended(agent, number, None, error)
            case ToolStarted(call=call, summary=summary, agent=agent):
                self._tool_started(agent, call.id, call.name, summary)
            case ToolFinished(call=call, is_error=is_error, status=status, agent=agent):
                self._tool_ended(agent, call.id, call.name, is_error, status)
            case SubAgentStarted(name=name, agent=agent):
                self._subagent_parent(name, agent)
            case SubAgentFinished(name=name):
                self._end_agent(name, None)
            case CompactionStarted(tokens=tokens, window=window, agent=agent):
                self._compaction_started(agent, tokens, window)
            case ContextCompacted(tokens_after=after, agent=agent):
                self._compaction_ended(agent, after)
            case TurnEnded(agent=agent) as ended:
                self._log(
                    agent,
                    "treadle.turn.ended",
                    ended.outcome.screen_line,
                    {
                        "treadle.outcome": ended.outcome.kind.value,
                        "treadle.requests": ended.requests,
                    },
                )
                self._end_agent(agent, ended)
            case Notice(kind=kind, text=text, agent=agent):
                self._log(agent, "treadle.notice", text, {"treadle.notice.kind": kind})

    # Agents and turns ------------------------------------------------------------------

    def _turn_started(self, agent: str, task: str) -> None:
        name = agent or SYSTEM
        parent = self._parent_of(agent)
        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(
            f"invoke_agent {name}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.provider.name": self._provider(),
                "gen_ai.request.model": self._model_name(),
            },
        )
        if self.log_prompts:
            span.set_attribute("gen_ai.input.messages", self._content(task))
        self._agents[agent] = _Agent(span)

    def _parent_of(self, agent: str) -> Span | None:
        """A sub-agent's span sits under the call that started it (else its caller's turn)."""
        if not agent:
            return None
        started_by = self._subagent_spans.get(agent)
        if started_by is not None:
            return started_by
        caller = self._agents.get(agent.rpartition("/")[0])
        return caller.span if caller is not None else None

    def _subagent_parent(self, name: str, caller: str) -> None:
        state = self._agents.get(caller)
        if state is None:
            return
        calls = state.agent_calls
        self._subagent_spans[name] = calls.pop(0) if calls else state.span

    def _end_agent(self, agent: str, ended: TurnEnded | None) -> None:
        state = self._agents.pop(agent, None)
        self._subagent_spans.pop(agent, None)
        if state is None:
            return
        for span, _ in [*state.requests.values(), *state.tools.values()]:
            span.set_status(Status(StatusCode.ERROR, "the turn ended first"))
            span.end()
        if state.compaction is not None:
            state.compaction.end()
        if ended is not None:
            outcome = ended.outcome
            state.span.set_attribute("treadle.outcome", outcome.kind.value)
            state.span.set_attribute("treadle.requests", ended.requests)
            state.span.set_attribute("gen_ai.usage.input_tokens", ended.usage.input_tokens)
            state.span.set_attribute("gen_ai.usage.output_tokens", ended.usage.output_tokens)
            if ended.cost is not None:
                state.span.set_attribute("treadle.cost", ended.cost)
                if not agent:  # a sub-agent's cost is in its caller's
                    self.cost.add(ended.cost, {"gen_ai.request.model": self._model_name()})
            if outcome.kind is OutcomeKind.FAILED:
                state.span.set_attribute("error.type", outcome.reason.value)
                state.span.set_status(Status(StatusCode.ERROR, outcome.reason.value))
        state.span.end()

    # Requests --------------------------------------------------------------------------

    def _request_sent(self, agent: str, number: int) -> None:
        state = self._agents.get(agent)
        if state is None:
            return
        parent = state.compaction or state.span
        span = self.tracer.start_span(
            f"chat {self._model_name()}",
            context=trace.set_span_in_context(parent),
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self._provider(),
                "gen_ai.request.model": self._model_name(),
                "gen_ai.agent.name": agent or SYSTEM,
            },
        )
        previous = state.requests.pop(number, None)  # a retry of the same request
        if previous is not None:
            previous[0].end()
        state.requests[number] = (span, self.now())

    def _request_ended(
        self, agent: str, number: int, received: ResponseReceived | None, error: str = ""
    ) -> None:
        state = self._agents.get(agent)
        found = state.requests.pop(number, None) if state is not None else None
        if found is None:
            return
        span, started = found
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self._model_name(),
            "gen_ai.provider.name": self._provider(),
        }
        self.latency.record(self.now() - started, attributes)
        if received is None:
            span.set_attribute("error.type", error.split(":")[0][:100] or "error")
            span.set_status(Status(StatusCode.ERROR))
            span.end()
            return
        usage = received.usage
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        span.set_attribute("gen_ai.response.finish_reasons", (str(received.stop_reason),))
        for kind, count in (
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cache_read", usage.cache_read_tokens),
            ("cache_write", usage.cache_write_tokens),
            ("reasoning", usage.reasoning_tokens),
        ):
            if count:
                self.tokens.record(count, {**attributes, "gen_ai.token.type": kind})
        if self.log_prompts and received.text:
            span.set_attribute("gen_ai.output.messages", self._content(received.text))
        span.end()

    # Tools and compactions -------------------------------------------------------------

    def _tool_started(self, agent: str, call_id: str, name: str, summary: str) -> None:
        state = self._agents.get(agent)
        if state is None:
            return
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=trace.set_span_in_context(state.span),
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
            },
        )
        if self.log_prompts and summary:
            span.set_attribute("gen_ai.tool.call.arguments", self._content(summary))
        state.tools[call_id] = (span, self.now())
        if name == "agent":
            state.agent_calls.append(span)

    def _tool_ended(self, agent: str, call_id: str, name: str, is_error: bool, status: str) -> None:
        state = self._agents.get(agent)
        found = state.tools.pop(call_id, None) if state is not None else None
        if found is None:
            return
        span, started = found
        if span in state.agent_calls:  # type: ignore[union-attr]
            state.agent_calls.remove(span)  # type: ignore[union-attr]
        self.tool_time.record(self.now() - started, {"gen_ai.tool.name": name})
        span.set_attribute("treadle.tool.status", status[:100])
        if is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(Status(StatusCode.ERROR))
        span.end()

    def _compaction_started(self, agent: str, tokens: int, window: int) -> None:
        state = self._agents.get(agent)
        if state is None:
            return
        state.compaction = self.tracer.start_span(
            "compact_context",
            context=trace.set_span_in_context(state.span),
            attributes={"treadle.context.tokens": tokens, "treadle.context.window": window},
        )

    def _compaction_ended(self, agent: str, after: int) -> None:
        state = self._agents.get(agent)
        if state is None or state.compaction is None:
            return
        state.compaction.set_attribute("treadle.context.tokens_after", after)
        state.compaction.end()
        state.compaction = None

    def _log(self, agent: str, name: str, body: str, attributes: dict[str, Any]) -> None:
        """A log event, within the agent's span where it has one. Its body is treadle's
        own line, redacted all the same (a notice may quote a path or a server's words)."""
        if self.logger is None:
            return
        state = self._agents.get(agent)
        context = trace.set_span_in_context(state.span) if state is not None else None
        self.logger.emit(
            event_name=name,
            body=self._content(body),
            attributes={"gen_ai.agent.name": agent or SYSTEM, **attributes},
            context=context,
        )

    # Names -------------------------------------------------------------------------------

    def _provider(self) -> str:
        return self.model.partition(":")[0] if ":" in self.model else self.model

    def _model_name(self) -> str:
        return self.model.partition(":")[2] or self.model

    def _content(self, text: str) -> str:
        return self.redact(text)[:CONTENT_LIMIT]


class TelemetryTee:
    """The transcript port, with every event also seen by the tracer (sub-agents share
    the ports: their events come through here too)."""

    def __init__(self, inner: TranscriptStore | None, tracer: TurnTracer) -> None:
        self.inner, self.tracer = inner, tracer

    def record(self, event: TurnEvent) -> None:
        if self.inner is not None:
            self.inner.record(event)
        try:
            self.tracer.observe(event)
        except Exception:  # telemetry never ends a turn
            logging.getLogger(__name__).warning("telemetry failed", exc_info=True)

    def __getattr__(self, name: str) -> Any:  # the session log's other methods
        return getattr(self.inner, name)


EXPORT_TIMEOUT = 3.0
"""Seconds an export may take, its retries included."""


class _IntoTreadleLog(logging.Handler):
    """The SDK's own records (an export that failed) into the session's treadle.log."""

    def emit(self, record: logging.LogRecord) -> None:
        for handler in logging.getLogger("treadle").handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


class Telemetry:
    """The SDK's providers with their OTLP/HTTP exporters, batched off the turn's path."""

    def __init__(self, tracer: TurnTracer, close: Callable[[], None]) -> None:
        self.tracer, self.close = tracer, close

    @classmethod
    def start(cls, config: TelemetryConfig, model: str, redact: Callable[[str], str]) -> Telemetry:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from treadle import __version__

        base = config.endpoint.rstrip("/")
        forward = _IntoTreadleLog()
        sdk_log = logging.getLogger("opentelemetry")
        sdk_log.addHandler(forward)
        sdk_log.propagate = False  # an unreachable collector is the log's, not the screen's
        resource = Resource.create({"service.name": config.service, "service.version": __version__})
        traces = TracerProvider(resource=resource)
        # An export gives up after EXPORT_TIMEOUT s, retries included: a collector that
        # is down delays the session's end by that much, not by the SDK's default.
        spans = OTLPSpanExporter(f"{base}/v1/traces", timeout=EXPORT_TIMEOUT)
        traces.add_span_processor(BatchSpanProcessor(spans))
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(f"{base}/v1/metrics", timeout=EXPORT_TIMEOUT),
            export_interval_millis=60_000,
        )
        metrics = MeterProvider(resource=resource, metric_readers=[reader])
        logs = LoggerProvider(resource=resource)
        logs.add_log_record_processor(
            BatchLogRecordProcessor(OTLPLogExporter(f"{base}/v1/logs", timeout=EXPORT_TIMEOUT))
        )
        tracer = TurnTracer(
            traces.get_tracer("treadle", __version__),
            metrics.get_meter("treadle", __version__),
            model,
            log_prompts=config.log_prompts,
            redact=redact,
            logger=logs.get_logger("treadle", __version__),
        )

        def close() -> None:
            try:
                traces.shutdown()  # exports what the batch still holds
                metrics.shutdown()
                logs.shutdown()
            finally:
                sdk_log.removeHandler(forward)
                sdk_log.propagate = True

        return cls(tracer, close)
