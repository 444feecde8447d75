"""Getting one whole answer from the model: streaming, retries and continuations.

The decisions are the pure functions of :mod:`retry` and :mod:`truncation`; this
module only drives the Model and Clock ports with them and reports what happens.

Reasoning streams to the screen apart from the answer and is kept with it, exactly
as it came. It is not answer text: a transient failure after only reasoning was
shown is still retried. The retried attempt thinks afresh and shows its own
reasoning (nothing shown is shown again), and the failed attempt's reasoning is not
kept, since the protocols want back only what belongs to the answer they gave.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence, Set
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.stop import STOPPED, StopSignal
from treadle.domain.rules.history import History, unique_call
from treadle.domain.rules.retry import GiveUp, decide_retry
from treadle.domain.rules.truncation import continue_truncated, past_its_budget
from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    ContinuationRequested,
    ReasoningDelta,
    RequestFailed,
    RequestSent,
    ResponseReceived,
    RetryScheduled,
    TurnEvent,
)
from treadle.domain.values.model import (
    MalformedStream,
    ModelError,
    ModelRequest,
    ReasoningReady,
    ReasoningText,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolSpec,
    UsageReported,
)
from treadle.domain.values.outcome import ModelGaveUp, Stopped, Truncated, TurnEnding
from treadle.domain.values.text import well_formed
from treadle.ports.clock import Clock
from treadle.ports.model import Model

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Answer:
    """A complete response: its text (continuations joined), the calls it asks for,
    and the reasoning that led there."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    reasoning: tuple[Reasoning, ...] = ()


@dataclass(slots=True)
class _Reply:
    """Where one answer stands: the text shown so far, its budget, which attempt."""

    max_tokens: int
    shown: str = ""
    continuations: int = 0
    attempt: int = 1
    reasoning: list[Reasoning] = field(default_factory=list)  # of the parts already cut


@dataclass(slots=True)
class _Attempt:
    """What one streamed attempt produced so far (kept when it is stopped midway)."""

    parts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    reasoning: list[Reasoning] = field(default_factory=list)
    size: int = 0  # characters of text, reasoning and call arguments
    usage: Usage = field(default_factory=Usage)
    end: StreamEnd | None = None
    error: ModelError | None = None

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class Responder:
    """Asks the model for one answer on behalf of one agent."""

    model: Model
    clock: Clock
    settings: TurnSettings
    emit: Callable[[TurnEvent], None]
    agent: str = ""
    requests: int = 0
    doing: str = "starting"
    on_usage: Callable[[Usage], None] = lambda usage: None

    @property
    def _system(self) -> str:
        """The system prompt, then the project's instructions: the stable head of every
        request (nothing that changes per request comes before the history)."""
        instructions = self.settings.instructions
        prompt = self.settings.system_prompt
        return f"{prompt}\n\n{instructions}" if instructions else prompt

    async def respond(
        self,
        history: History,
        tools: Sequence[ToolSpec],
        stop: StopSignal,
        *,
        tools_allowed: bool = True,
    ) -> Answer | TurnEnding:
        """One answer, or why the turn ends: a model failure, a truncation, a stop.

        Text already shown is never shown again: a failure after it ends the turn,
        and a continuation only adds what comes next.
        """
        reply = _Reply(max_tokens=self.settings.budget.initial)
        while True:
            request = ModelRequest(
                system=self._system,
                messages=history.messages,
                tools=tools,
                max_tokens=reply.max_tokens,
                continuation=reply.shown,
                attempt=reply.attempt,
                tools_allowed=tools_allowed,
                thinking_budget=self.settings.budget.thinking,
            )
            self._announce(request, history)
            current = _Attempt()
            sent = self.clock.now()
            raced = await stop.race(self._stream(request, current, history.call_ids))
            self._count(current.usage)
            log.debug(
                "%s request %d attempt %d ended after %.3f s: %s",
                self.agent or "main",
                self.requests,
                request.attempt,
                self.clock.now() - sent,
                _how_it_ended(raced is STOPPED, current),
            )
            if raced is STOPPED:
                _keep_partial(history, reply.shown + current.text, current.calls)
                return Stopped()
            if current.error is not None:
                ending = await self._after_failure(current.error, reply, current.text, stop)
                if ending is not None:
                    _keep_partial(history, reply.shown + current.text, ())
                    return ending
                continue
            assert current.end is not None
            self.emit(
                ResponseReceived(
                    self.requests,
                    current.text,
                    tuple(current.calls),
                    current.usage,
                    current.end.stop_reason,
                    tuple(current.reasoning),
                    self.agent,
                )
            )
            if current.end.stop_reason != "max_tokens":
                reasoning = (*reply.reasoning, *current.reasoning)
                return Answer(reply.shown + current.text, tuple(current.calls), reasoning)
            # Cut by the budget: whatever calls it held may be cut too, so none runs;
            # the model goes on from the text already shown.
            reply.shown += current.text
            reply.reasoning += current.reasoning
            truncated = self._after_cut(reply)
            if truncated is not None:
                _keep_partial(history, reply.shown, ())
                return truncated

    def _announce(self, request: ModelRequest, history: History) -> None:
        self.requests += 1
        self.doing = f"waiting for the model (request {self.requests})"
        self.emit(
            RequestSent(
                self.requests,
                request.attempt,
                request.max_tokens,
                len(history),
                history.digest,
                bool(request.continuation),
                self.agent,
            )
        )

    async def _after_failure(
        self, error: ModelError, reply: _Reply, text: str, stop: StopSignal
    ) -> TurnEnding | None:
        """Wait for the retry the schedule allows (None), or say why the turn ends."""
        self.emit(RequestFailed(self.requests, reply.attempt, error.describe(), self.agent))
        decision = decide_retry(
            self.settings.retry, error, attempt=reply.attempt, text_shown=bool(reply.shown or text)
        )
        if isinstance(decision, GiveUp):
            return ModelGaveUp(error)
        self.emit(
            RetryScheduled(
                decision.attempt,
                self.settings.retry.attempts,
                decision.pause,
                error.describe(),
                self.agent,
            )
        )
        self.doing = f"retrying in {decision.pause:g} s"
        log.debug(
            "retry %d of %d in %g s", decision.attempt, self.settings.retry.attempts, decision.pause
        )
        if await stop.race(self.clock.sleep(decision.pause)) is STOPPED:
            return Stopped()
        reply.attempt = decision.attempt
        return None

    def _after_cut(self, reply: _Reply) -> Truncated | None:
        """Grow the budget for a continuation (None), or give up: truncated."""
        step = continue_truncated(
            self.settings.budget, current=reply.max_tokens, done=reply.continuations
        )
        if isinstance(step, Truncated):
            return step
        reply.max_tokens, reply.continuations, reply.attempt = step.max_tokens, step.continuation, 1
        self.emit(ContinuationRequested(reply.continuations, reply.max_tokens, self.agent))
        return None

    async def _stream(self, request: ModelRequest, attempt: _Attempt, taken: Set[str]) -> None:
        stream = self.model.stream(request)
        try:
            await self._consume(stream, attempt, taken, request.max_tokens)
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()

    async def _consume(
        self,
        stream: AsyncIterator[Result[StreamEvent, ModelError]],
        attempt: _Attempt,
        taken: Set[str],
        max_tokens: int,
    ) -> None:
        """Take the stream's items; what the model wrote is made well-formed here, where
        it comes in, and every call gets an id of its own in the conversation. A stream
        that goes on far past its budget is ended: it would never end by itself."""
        async for item in stream:
            match item:
                case Success(TextDelta(text=text)):
                    if text:
                        text = well_formed(text)
                        attempt.parts.append(text)
                        attempt.size += len(text)
                        self.doing = "writing its answer"
                        self.emit(AnswerDelta(text, self.agent))
                case Success(ReasoningText(text=text)):
                    if text:
                        text = well_formed(text)
                        attempt.size += len(text)
                        self.doing = "thinking"
                        self.emit(ReasoningDelta(text, self.agent))
                case Success(ReasoningReady(reasoning=reasoning)):
                    attempt.reasoning.append(_kept(reasoning, position=len(attempt.calls)))
                case Success(ToolCallReady(call=call)):
                    here = {c.id for c in attempt.calls}
                    attempt.calls.append(unique_call(call, taken, here))
                    attempt.size += len(call.arguments)
                case Success(UsageReported(usage=usage)):
                    attempt.usage = usage
                case Success(StreamEnd() as end):
                    attempt.end = end
                    return
                case Failure(error):
                    attempt.error = error
                    return
            if past_its_budget(max_tokens, attempt.size, attempt.usage.output_tokens):
                attempt.error = MalformedStream(
                    f"the answer went on far past its budget of {max_tokens:,} tokens: "
                    "the server does not stop at max_tokens"
                )
                return
        attempt.error = MalformedStream("the stream ended without its final event")

    def _count(self, usage: Usage) -> None:
        if usage.total:
            self.on_usage(usage)


def _kept(reasoning: Reasoning, *, position: int) -> Reasoning:
    """Reasoning as the conversation keeps it: where it came among the calls, and text
    that is well-formed (as a server that signs it sends it: unchanged)."""
    return Reasoning(
        reasoning.kind, well_formed(reasoning.text), well_formed(reasoning.seal), position
    )


def _keep_partial(history: History, text: str, calls: Sequence[ToolCall]) -> None:
    """Keep what was shown of an answer that did not complete, marked as interrupted.

    Its reasoning is left out: the next request starts a new answer, and no protocol
    wants back reasoning whose answer it never finished."""
    if text or calls:
        history.append(Message.assistant(text, tuple(calls), interrupted=True))


def _how_it_ended(stopped: bool, attempt: _Attempt) -> str:
    """One debug word or two on how an attempt ended."""
    if stopped:
        return "stopped"
    if attempt.error is not None:
        return f"failed ({attempt.error.describe()})"
    end = attempt.end
    return f"{end.stop_reason}, {len(attempt.calls)} calls" if end is not None else "no end"
