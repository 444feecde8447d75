"""Getting one whole answer from the model: streaming, retries, continuations, and a
request that always fits the context window.

The decisions are the pure functions of :mod:`retry`, :mod:`truncation` and (through
the :class:`~treadle.domain.loop.context.ContextKeeper`) :mod:`context_window`; this
module only drives the Model and Clock ports with them and reports what happens.

Reasoning streams to the screen apart from the answer and is kept with it, exactly
as it came. It is not answer text: a transient failure after only reasoning was
shown is still retried. The retried attempt thinks afresh and shows its own
reasoning (nothing shown is shown again), and the failed attempt's reasoning is not
kept, since the protocols want back only what belongs to the answer they gave.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from returns.result import Failure, Result, Success

from treadle.domain.loop.context import ContextKeeper, SharedWindow
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.spending import SpendingMeter
from treadle.domain.loop.stop import STOPPED, StopSignal
from treadle.domain.rules.context_window import ContextState
from treadle.domain.rules.final_answer import schema_instructions
from treadle.domain.rules.history import History, unique_call
from treadle.domain.rules.kept_reasoning import kept_on_arrival
from treadle.domain.rules.retry import GiveUp, decide_retry
from treadle.domain.rules.skills import offer_skills
from treadle.domain.rules.truncation import continue_truncated, cut_short, past_its_budget
from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    ContinuationRequested,
    Notice,
    ReasoningDelta,
    RequestFailed,
    RequestSent,
    ResponseReceived,
    RetryScheduled,
    TurnEvent,
)
from treadle.domain.values.model import (
    CUT_STOPS,
    ContextExceeded,
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
from treadle.domain.values.outcome import (
    ModelGaveUp,
    OutOfContext,
    Stopped,
    Truncated,
    TurnEnding,
)
from treadle.domain.values.text import well_formed
from treadle.ports.clock import Clock
from treadle.ports.model import Model

log = logging.getLogger(__name__)

MAX_REFUSALS = 2
"""Refusals for length one request may meet: each one compacts and sends again at once."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A complete response: its text (continuations joined), the calls it asks for,
    and the reasoning that led there."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    reasoning: tuple[Reasoning, ...] = ()


@dataclass(slots=True)
class _Reply:
    """Where one answer stands: the text shown so far, the budget it wants, which
    attempt, and what refusals and cuts said about the window."""

    max_tokens: int
    shown: str = ""
    continuations: int = 0
    attempt: int = 1
    refusals: int = 0
    filled: bool = False  # the answer so far was cut by the window
    cut: Usage | None = None  # the last cut's usage, that a continuation goes on from
    cut_at: int = 0  # the tokens of a cut short of its budget, not by the window
    short_of: int = 0
    announce: bool = False  # a continuation by the budget, to say once it fits
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
    shared_window: SharedWindow = field(default_factory=SharedWindow)
    context_state: ContextState | None = None
    meter: SpendingMeter = field(default_factory=SpendingMeter)
    """The turn's spending, shared with the other agents of the turn."""
    context: ContextKeeper = field(init=False)
    _offered: tuple[str, ...] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.context = ContextKeeper(
            self.settings.context,
            self.settings.budget,
            self.shared_window,
            self.emit,
            self.agent,
            self.context_state,
            self.settings.recorded,
        )
        self.context.summarize = self.summarize

    @property
    def system(self) -> str:
        """The system prompt, then the project's instructions: the stable head of every
        request (nothing that changes per request comes before the history)."""
        instructions = self.settings.instructions
        prompt = self.settings.system_prompt
        head = f"{prompt}\n\n{instructions}" if instructions else prompt
        skills = self._skills_offered()
        head = f"{head}\n\n{skills}" if skills else head
        output = self._output_schema()
        return f"{head}\n\n{schema_instructions(output)}" if output is not None else head

    def _output_schema(self) -> Mapping[str, object] | None:
        """The schema the main agent's final answer must meet; sub-agents answer freely."""
        output = self.settings.output
        return output.schema if output is not None and not self.agent else None

    def _skills_offered(self) -> str:
        """The list of skills as it fits the window (issue 23); the main agent says
        what it offers whenever that changes (the window became known, say)."""
        if not self.settings.skills:
            return ""
        window = self.context.window
        offer = offer_skills(self.settings.skills, window.tokens if window else None)
        if not self.agent and offer.listed != self._offered:
            self._offered = offer.listed
            self.emit(Notice("skills_offered", offer.line()))
        return offer.text

    async def respond(
        self,
        history: History,
        tools: Sequence[ToolSpec],
        stop: StopSignal,
        *,
        tools_allowed: bool = True,
    ) -> Answer | TurnEnding:
        """One answer, or why the turn ends: a model failure, a truncation, a stop, a
        request that cannot fit the window.

        Text already shown is never shown again: a failure after it ends the turn,
        and a continuation only adds what comes next. Every request fits the window
        as far as it is known: its budget shrinks to fit, and room is made first when
        the conversation is near the window's end.
        """
        system = self.system
        reply = _Reply(max_tokens=self.context.initial_budget())
        while True:
            fitted = await self.context.prepare(
                history,
                system,
                tools,
                stop,
                shown=reply.shown,
                wanted=reply.max_tokens,
                filled=reply.filled,
            )
            if not isinstance(fitted, int):
                _keep_partial(history, reply.shown, ())
                return fitted
            if reply.announce:
                reply.announce = False
                self.emit(
                    ContinuationRequested(
                        reply.continuations, fitted, self.agent, reply.cut_at, reply.short_of
                    )
                )
            request = ModelRequest(
                system=system,
                messages=history.messages,
                tools=tools,
                max_tokens=fitted,
                continuation=reply.shown,
                attempt=reply.attempt,
                tools_allowed=tools_allowed,
                thinking_budget=self._thinking(fitted),
                output_schema=self._output_schema(),
            )
            current, stopped = await self._exchange(
                request, len(history), history.digest, stop, taken=history.call_ids
            )
            if stopped:
                _keep_partial(history, reply.shown + current.text, current.calls)
                return Stopped()
            if current.error is not None:
                ending = await self._after_error(
                    current.error, reply, current.text, stop, history, request
                )
                if ending is not None:
                    _keep_partial(history, reply.shown + current.text, ())
                    return ending
                continue
            assert current.end is not None
            self._received(current)
            if unusual := current.end.unusual():
                self.emit(Notice("answer_ended", unusual, self.agent))
            if current.end.stop_reason not in CUT_STOPS:
                reasoning = (*reply.reasoning, *current.reasoning)
                return Answer(reply.shown + current.text, tuple(current.calls), reasoning)
            # Cut short: whatever calls it held may be cut too, so none runs; the model
            # goes on from the text already shown, once a continuation fits.
            reply.shown += current.text
            reply.reasoning += current.reasoning
            previous, reply.cut = reply.cut, current.usage
            reply.filled = self.context.after_cut(
                current.end.stop_reason, current.usage, request.max_tokens, previous
            )
            answered = current.usage.output_tokens
            short = not reply.filled and cut_short(answered, request.max_tokens)
            reply.cut_at, reply.short_of = (answered, request.max_tokens) if short else (0, 0)
            truncated = self._after_cut(reply, request.max_tokens)
            if truncated is not None:
                _keep_partial(history, reply.shown, ())
                return truncated

    async def summarize(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], stop: StopSignal, budget: int
    ) -> str | ContextExceeded | TurnEnding:
        """A compaction's summary: one answer to ``messages`` with no tool allowed and
        nothing shown; the refusal, if the request is too long, for the compaction to
        deal with. Retried as any request is (nothing was shown)."""
        digest = History(messages).digest
        attempt = 1
        while True:
            request = ModelRequest(
                system=self.system,
                messages=messages,
                tools=tools,
                max_tokens=budget,
                attempt=attempt,
                tools_allowed=False,
            )
            current, stopped = await self._exchange(
                request, len(messages), digest, stop, quiet=True
            )
            if stopped:
                return Stopped()
            if current.error is not None:
                error = current.error
                self.emit(RequestFailed(self.requests, attempt, error.describe(), self.agent))
                if isinstance(error, ContextExceeded):
                    return error
                retried = await self._retry(error, attempt, text_shown=False, stop=stop)
                if not isinstance(retried, int):
                    return retried
                attempt = retried
                continue
            self._received(current)
            return current.text

    # One request ---------------------------------------------------------------------

    def _thinking(self, max_tokens: int) -> int:
        return self.settings.budget.thinking_within(max_tokens)

    async def _exchange(
        self,
        request: ModelRequest,
        count: int,
        digest: str,
        stop: StopSignal,
        *,
        quiet: bool = False,
        taken: Set[str] = frozenset(),
    ) -> tuple[_Attempt, bool]:
        """Send one request and read its stream: what it produced, and whether the stop
        came first (what it produced until then is kept)."""
        self.requests += 1
        self.meter.request_sent()
        self.doing = (
            "compacting the conversation"
            if quiet
            else f"waiting for the model (request {self.requests})"
        )
        self.emit(
            RequestSent(
                self.requests,
                request.attempt,
                request.max_tokens,
                count,
                digest,
                bool(request.continuation),
                self.agent,
            )
        )
        current = _Attempt()
        sent = self.clock.now()
        raced = await stop.race(self._stream(request, current, quiet, taken))
        self._count(current.usage)
        log.debug(
            "%s request %d attempt %d ended after %.3f s: %s",
            self.agent or "main",
            self.requests,
            request.attempt,
            self.clock.now() - sent,
            _how_it_ended(raced is STOPPED, current),
        )
        return current, raced is STOPPED

    def _received(self, current: _Attempt) -> None:
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

    async def _after_error(
        self,
        error: ModelError,
        reply: _Reply,
        text: str,
        stop: StopSignal,
        history: History,
        request: ModelRequest,
    ) -> TurnEnding | None:
        """What follows a failed request: a refusal for length compacts and sends again
        at once (at most twice); a transient failure waits for its retry (None); else
        why the turn ends."""
        self.emit(RequestFailed(self.requests, reply.attempt, error.describe(), self.agent))
        if isinstance(error, ContextExceeded):
            if reply.refusals >= MAX_REFUSALS:
                return OutOfContext(_still_refused(error, reply.refusals, self.context))
            reply.refusals += 1
            prompt = self.context.estimate(history, request.system, request.tools, reply.shown)
            self.context.learn(error, prompt_estimate=prompt)
            # A continuation refused for length: the answer so far filled the window.
            reply.filled = reply.filled or bool(reply.shown)
            self.doing = "making room in the context"
            return None
        retried = await self._retry(
            error, reply.attempt, text_shown=bool(reply.shown or text), stop=stop
        )
        if not isinstance(retried, int):
            return retried
        reply.attempt = retried
        return None

    async def _retry(
        self, error: ModelError, attempt: int, *, text_shown: bool, stop: StopSignal
    ) -> int | TurnEnding:
        """Wait for the retry the schedule allows (the next attempt), or say why the
        turn ends."""
        decision = decide_retry(self.settings.retry, error, attempt=attempt, text_shown=text_shown)
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
        return decision.attempt

    def _after_cut(self, reply: _Reply, current: int) -> Truncated | None:
        """Grow the budget for a continuation (None), or give up: truncated."""
        step = continue_truncated(self.settings.budget, current=current, done=reply.continuations)
        if isinstance(step, Truncated):
            return step
        reply.max_tokens, reply.continuations, reply.attempt = step.max_tokens, step.continuation, 1
        # Said once the continuation fits; a window that filled was said so already.
        reply.announce = not reply.filled
        return None

    async def _stream(
        self, request: ModelRequest, attempt: _Attempt, quiet: bool, taken: Set[str]
    ) -> None:
        stream = self.model.stream(request)
        try:
            await self._consume(stream, attempt, quiet, taken, request.max_tokens)
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()

    async def _consume(
        self,
        stream: AsyncIterator[Result[StreamEvent, ModelError]],
        attempt: _Attempt,
        quiet: bool,
        taken: Set[str],
        max_tokens: int,
    ) -> None:
        """Take the stream's items; what the model wrote is made well-formed here, where
        it comes in, and every call gets an id of its own in the conversation. A stream
        that goes on far past its budget is ended: it would never end by itself. A
        ``quiet`` stream (a compaction's summary) shows nothing."""
        async for item in stream:
            match item:
                case Success(TextDelta(text=text)):
                    if text:
                        text = well_formed(text)
                        attempt.parts.append(text)
                        attempt.size += len(text)
                        if not quiet:
                            self.doing = "writing its answer"
                            self.emit(AnswerDelta(text, self.agent))
                case Success(ReasoningText(text=text)):
                    if text:
                        text = well_formed(text)
                        attempt.size += len(text)
                        if not quiet:
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
            self.meter.spend(usage, self.settings.prices)
            self.on_usage(usage)


def _still_refused(error: ContextExceeded, refusals: int, context: ContextKeeper) -> str:
    window = context.window
    size = f" of {window.tokens:,} tokens ({window.origin})" if window is not None else ""
    return (
        f"the server still refused the request as too long for its context window{size} "
        f"after making room {refusals} times: {error.detail or error.describe()}"
    )


def _kept(reasoning: Reasoning, *, position: int) -> Reasoning:
    """Reasoning as the conversation keeps it: where it came among the calls, and text
    that is well-formed (as a server that signs it sends it: unchanged). Encrypted
    reasoning too large to send back ever loses its seal here, before the answer, the
    transcript or the history hold it (:mod:`kept_reasoning`)."""
    reasoning = kept_on_arrival(reasoning)
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
