"""Replaying a recorded session: the model answers as recorded, each request is checked.

:class:`ReplayModel` answers every request of the loop
with the next exchange of the conversation that asks (known by its first user
message), after checking the request against the one recorded: message count and
content (digest), ``max_tokens``, continuation and attempt. The first difference is a
:class:`Divergence`, and the request fails.

A recorded failure fails the replayed request the same way (its kind read back by
:mod:`recording`), so retries replay too.

Where the recording stops inside a turn (Esc, a kill), the replay stops there too:
``on_cut`` is called (the driver sets the turn's stop) and the request waits.

Example::

    recording = Recording.from_events(read_transcript(path))
    model = ReplayModel(recording)
    tools = recorded_tools(core_tools(), recording, answer_from_recording=True)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from returns.result import Failure, Result, Success

from treadle.adapters.secrets.redact import REDACTED
from treadle.adapters.transcript.recording import (
    Conversation,
    Exchange,
    Recording,
)
from treadle.domain.rules.history import INTERRUPTED_RESULT, History
from treadle.domain.values.conversation import Message
from treadle.domain.values.events import RequestFailed, ResponseReceived, SubAgentEnding
from treadle.domain.values.model import (
    MalformedStream,
    ModelError,
    ModelRequest,
    ReasoningReady,
    ReasoningText,
    ServerFacts,
    StreamEnd,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    ToolSpec,
    UsageReported,
)
from treadle.domain.values.outcome import NeedsAnswer, NeedsApproval, OutcomeKind, TurnEnding
from treadle.domain.values.tools import Access, EndTurn, ToolEnding, ToolOutcome, ToolResult
from treadle.ports.tools import Tool, ToolContext

__all__ = ["Divergence", "RecordedTool", "Recording", "ReplayModel", "recorded_tools"]


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first place the replay did not do what the recording did."""

    request: int
    agent: str
    what: str

    def describe(self) -> str:
        who = f"sub-agent {self.agent}" if self.agent else "the main agent"
        return f"request {self.request} ({who}): {self.what}"


MessageNormalizer = Callable[[Message], Message]


class ReplayModel:
    """The Model port, answering from a recording and checking what it is asked.

    ``normalize`` is applied to both sides before messages are compared (redaction,
    tool timings). ``divergence`` is the first difference found; ``requests`` counts
    the requests made. Call :meth:`start_turn` before each main turn of the replay.
    """

    def __init__(
        self,
        recording: Recording,
        *,
        normalize: MessageNormalizer = lambda message: message,
        on_cut: Callable[[], None] | None = None,
    ) -> None:
        self.recording = recording
        self.normalize = normalize
        self.on_cut = on_cut
        self.divergence: Divergence | None = None
        self.requests = 0
        self.turn: int | None = None

    def start_turn(self, turn: int) -> None:
        """The main agent's turn ``turn`` (from 0) begins: its requests come next."""
        main = self.recording.main
        if self.divergence is None and self.turn is not None and not self._turn_stopped():
            left = [e for e in main.exchanges[main.next :] if e.turn == self.turn]
            if left:
                self.divergence = Divergence(
                    self.requests,
                    "",
                    f"turn {self.turn + 1} ended before its recorded request {left[0].sent.number}",
                )
        main.next = next(
            (i for i, e in enumerate(main.exchanges) if e.turn >= turn), len(main.exchanges)
        )
        self.turn = turn

    def _turn_stopped(self) -> bool:
        turns = self.recording.turns
        turn = len(turns) - 1 if self.turn is None else self.turn
        return 0 <= turn < len(turns) and turns[turn].stopped

    async def facts(self) -> ServerFacts:
        """The ModelServer port: what the server said at the start of the recorded turn."""
        turns = self.recording.turns
        if self.turn is None or not 0 <= self.turn < len(turns):
            return ServerFacts()
        return turns[self.turn].facts or ServerFacts()

    def leftover(self) -> Divergence | None:
        """A recorded request the replay never made, once it is over."""
        for conversation in self.recording.conversations:
            for exchange in conversation.exchanges[conversation.next :]:
                if exchange.ending is not None:
                    return Divergence(
                        self.requests,
                        conversation.name,
                        f"the replay ended before the recorded request {exchange.sent.number}",
                    )
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        self.requests += 1
        if self.divergence is not None:
            yield Failure(MalformedStream(f"replay stopped: {self.divergence.describe()}"))
            return
        conversation = self._conversation_for(request)
        exchange = self._next_exchange(conversation)
        if exchange is None:
            if self._recording_ends(conversation):
                async for item in self._wait(conversation):
                    yield item
                return
            self.divergence = Divergence(
                self.requests, conversation.name, "the recording has no such request"
            )
        else:
            problem = self._compare(request, conversation, exchange)
            if problem:
                self.divergence = Divergence(self.requests, conversation.name, problem)
        if self.divergence is not None:
            yield Failure(MalformedStream(f"replay diverged: {self.divergence.describe()}"))
            return
        assert exchange is not None
        conversation.next += 1
        async for item in self._answer(conversation, exchange):
            yield item

    def _conversation_for(self, request: ModelRequest) -> Conversation:
        task = next((m.text for m in request.messages if m.role == "user"), "")
        candidates = [c for c in self.recording.conversations if c.task == task]
        if len(candidates) <= 1:
            return candidates[0] if candidates else self.recording.main
        for conversation in candidates:
            exchange = self._next_exchange(conversation)
            if exchange is not None and not self._compare(request, conversation, exchange):
                return conversation
        waiting = [c for c in candidates if self._next_exchange(c) is not None]
        return (waiting or candidates)[0]

    def _next_exchange(self, conversation: Conversation) -> Exchange | None:
        if conversation.next >= len(conversation.exchanges):
            return None
        exchange = conversation.exchanges[conversation.next]
        if (
            conversation is self.recording.main
            and self.turn is not None
            and exchange.turn != self.turn
        ):
            return None
        return exchange

    def _recording_ends(self, conversation: Conversation) -> bool:
        if conversation is self.recording.main:
            return self._turn_stopped()
        return conversation.ending in (None, SubAgentEnding.STOPPED, SubAgentEnding.DEADLINE)

    def _compare(
        self, request: ModelRequest, conversation: Conversation, exchange: Exchange
    ) -> str:
        sent = exchange.sent
        count = len(request.messages)
        recorded = exchange.messages
        if count != sent.message_count:
            return (
                f"it carries {count} messages, the recorded request {sent.message_count}"
                + self._first_difference(request.messages, recorded, min(count, len(recorded)))
            )
        if History(request.messages).digest != sent.digest:
            problem = self._digest_problem(request.messages, recorded, count)
            if problem:
                return problem
        if request.max_tokens != sent.max_tokens:
            return f"max_tokens is {request.max_tokens}, recorded {sent.max_tokens}"
        if bool(request.continuation) != sent.continuation:
            return f"continuation is {bool(request.continuation)}, recorded {sent.continuation}"
        if request.attempt != sent.attempt:
            return f"attempt is {request.attempt}, recorded {sent.attempt}"
        return ""

    def _digest_problem(
        self, messages: Sequence[Message], recorded: Sequence[Message], count: int
    ) -> str:
        """Why messages that hash differently from the recorded request are not the same.

        Equal once normalized (timings of real commands) is the same; equal as they
        are is the same only where redaction explains the recorded digest.
        """
        recorded = recorded[:count]
        if len(recorded) < count:
            return "its messages differ from the recorded ones (digest)"
        difference = self._first_difference(messages, recorded, count)
        if difference:
            return "its messages differ from the recorded ones" + difference
        if list(messages) == recorded and not any(_redacted(m) for m in recorded):
            return "the recorded messages do not match the recorded digest (an edited transcript)"
        return ""

    def _first_difference(
        self, messages: Sequence[Message], recorded: Sequence[Message], count: int
    ) -> str:
        for index in range(min(count, len(recorded))):
            now, then = self.normalize(messages[index]), self.normalize(recorded[index])
            if now != then and replace(now, reasoning=then.reasoning) == then:
                return (
                    f"; the reasoning of message {index + 1} ({then.role}) is not the recorded one"
                )
            if now != then:
                return (
                    f"; message {index + 1} ({then.role}) was {_excerpt(then)}, now {_excerpt(now)}"
                )
        return ""

    async def _answer(
        self, conversation: Conversation, exchange: Exchange
    ) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        ending = exchange.ending
        deltas = exchange.deltas
        if isinstance(ending, ResponseReceived) and "".join(deltas) != ending.text:
            deltas = [ending.text]
        for piece in exchange.thoughts:
            yield Success(ReasoningText(piece))
        for text in deltas:
            yield Success(TextDelta(text))
        match ending:
            case ResponseReceived(
                tool_calls=calls, usage=usage, stop_reason=stop_reason, reasoning=reasoning
            ):
                # Each piece of reasoning comes where it came: after as many calls.
                for number in range(len(calls) + 1):
                    for thought in reasoning:
                        if min(thought.position, len(calls)) == number:
                            yield Success(ReasoningReady(thought))
                    if number < len(calls):
                        yield Success(ToolCallReady(calls[number]))
                yield Success(UsageReported(usage))
                yield Success(StreamEnd(stop_reason))
            case RequestFailed():
                yield Failure(self.recording.failure(conversation, exchange))
            case None:
                async for item in self._wait(conversation):
                    yield item

    async def _wait(
        self, conversation: Conversation
    ) -> AsyncIterator[Result[StreamEvent, ModelError]]:
        """The recording stops here: a sub-agent waits for its deadline, the rest is cut."""
        if conversation.ending is not SubAgentEnding.DEADLINE:
            if self.on_cut is None:
                yield Failure(MalformedStream("the recording ends here"))
                return
            self.on_cut()
        await asyncio.get_running_loop().create_future()  # until the stop cancels it


def _redacted(message: Message) -> bool:
    return REDACTED in message.text or any(REDACTED in c.arguments for c in message.tool_calls)


def _excerpt(message: Message, width: int = 80) -> str:
    text = message.text or ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= width else text[: width - 1] + "…", ensure_ascii=False)


# Tools -----------------------------------------------------------------------------


class RecordedTool:
    """A tool whose calls end as they did in the recording.

    Refusals, turn-ending answers (a question nobody answered) and the ``ask`` tool
    always come from the recording, and so do calls that never finished there (the
    replay stops at them; one that finished before a kill took its result goes on).
    Other calls run for real, or, with ``answer_from_recording``, return the recorded
    result when the tool touches the machine.
    """

    def __init__(
        self,
        tool: Tool,
        recording: Recording,
        *,
        answer_from_recording: bool,
        on_cut: Callable[[], None] | None = None,
    ) -> None:
        self.tool = tool
        self.recording = recording
        self.answer_from_recording = answer_from_recording
        self.on_cut = on_cut

    @property
    def spec(self) -> ToolSpec:
        return self.tool.spec

    @property
    def access(self) -> Access:
        return self.tool.access

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return self.tool.describe(arguments)

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        recorded = self.recording.claim_call(context.agent, self.spec.name, arguments)
        if recorded is None:
            if self.answer_from_recording:
                return ToolResult("replay: this call is not in the recording", True, "not recorded")
            return await self.tool.run(arguments, context)
        result, status, ending = recorded.result, recorded.status, recorded.ending
        outcome = self.recording.turn_outcome(recorded.conversation, recorded.turn)
        if ending in (ToolEnding.BLOCKED, ToolEnding.WAITING):
            detail = outcome.detail if outcome is not None else ""
            return EndTurn(_ending(ending, detail), result.text if result else "")
        if result is None or result.interrupted:
            if not recorded.started and outcome is not None and outcome.kind is OutcomeKind.BLOCKED:
                return EndTurn(NeedsApproval(outcome.detail))
            if ending not in (None, ToolEnding.INTERRUPTED):
                # It finished, but the kill took the results of its whole batch: it
                # goes on, so that the calls after it (a sub-agent's requests) replay.
                if self.answer_from_recording and self.access != "none":
                    text = result.text if result else ""
                    return ToolResult(text, True, status, ending=ending)
                return await self.tool.run(arguments, context)
            deadline = recorded.conversation.ending is SubAgentEnding.DEADLINE
            if not deadline and self.on_cut is not None:
                self.on_cut()
            if result is not None and result.text != INTERRUPTED_RESULT:
                # What it had done before the stop (a command's output): read again.
                cut = ToolEnding.INTERRUPTED
                kept = ToolResult(result.text, True, status or cut.value, ending=cut)
                context.if_stopped(lambda reason: kept)
            await asyncio.get_running_loop().create_future()  # until the stop cancels it
        assert result is not None
        recorded_answer = (
            ending is ToolEnding.REFUSED
            or self.spec.name == "ask"
            or (self.answer_from_recording and self.access != "none")
        )
        if recorded_answer:
            return ToolResult(result.text, result.is_error, status, ending=ending)
        return await self.tool.run(arguments, context)


def recorded_tools(
    tools: Iterable[Tool],
    recording: Recording,
    *,
    answer_from_recording: bool,
    on_cut: Callable[[], None] | None = None,
) -> list[Tool]:
    return [
        RecordedTool(tool, recording, answer_from_recording=answer_from_recording, on_cut=on_cut)
        for tool in tools
    ]


def _ending(ending: ToolEnding, detail: str) -> TurnEnding:
    """Why a recorded call ended its turn: only a question or an approval can."""
    return NeedsAnswer(detail) if ending is ToolEnding.WAITING else NeedsApproval(detail)
