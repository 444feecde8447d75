"""A transcript read for replay: conversations, their exchanges, and the tool calls.

Each conversation is one agent run (the main agent's, or one sub-agent call) and
holds its recorded messages and exchanges: the request sent (with the conversation it
carried: compactions and prunings replace the messages as they did in the session),
the answer text as it streamed, and how it ended. A recorded failure keeps only its
text; its kind is read back from what followed: ``HTTP 503: …`` is that status,
``context window exceeded (window 2048, …)`` a refusal for length with its figures, a
failure followed by a retry was a transient transport error, and one that ended the
turn maps to the outcome.

Example::

    recording = Recording(read_transcript(path))
    recording.main.exchanges[0].sent.max_tokens   # 8192
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from treadle.domain.rules.compaction import summary_request_of
from treadle.domain.rules.kept_reasoning import bounded
from treadle.domain.rules.pruning import with_stubs
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.events import (
    AnswerDelta,
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    MessageAdded,
    Notice,
    ReasoningDelta,
    RequestFailed,
    RequestSent,
    ResponseReceived,
    RetryScheduled,
    SubAgentEnding,
    SubAgentFinished,
    SubAgentStarted,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.model import (
    CONTEXT_EXCEEDED,
    CUT_STOPS,
    ERROR_EVENT,
    ContextExceeded,
    ContextWindow,
    CredentialsRejected,
    HttpStatusError,
    MalformedStream,
    ModelError,
    ServerFacts,
    TransportError,
)
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome
from treadle.domain.values.tools import ToolEnding

_HTTP = re.compile(r"HTTP (\d{3})(?:: (.*))?\Z", re.DOTALL)
_CONTEXT = re.compile(re.escape(CONTEXT_EXCEEDED) + r"(?: \(([^)]*)\))?(?:: (.*))?\Z", re.DOTALL)
_FIGURE = re.compile(r"(window|prompt) (\d+)")


def recorded_failure(text: str, *, retried: bool, outcome: TurnOutcome | None) -> ModelError:
    """The error a recorded failure's text stood for, as far as the loop can tell."""
    status = _HTTP.match(text)
    if status:
        return HttpStatusError(int(status.group(1)), status.group(2) or "")
    refusal = _CONTEXT.match(text)
    if refusal:
        named = refusal.group(1) or ""
        figures = {name: int(value) for name, value in _FIGURE.findall(named)}
        return ContextExceeded(
            refusal.group(2) or "",
            window=figures.get("window"),
            prompt_tokens=figures.get("prompt"),
            output_too="with the output budget" in named,
        )
    http = outcome is not None and outcome.reason is FailureKind.HTTP
    if text.startswith(ERROR_EVENT) and (retried or http):
        # Its status was never shown: what replay needs is whether it was retried.
        detail = text.removeprefix(ERROR_EVENT).removeprefix(": ")
        return HttpStatusError(503 if retried else 400, detail, mid_stream=True)
    if retried:
        return TransportError("connection_reset", text)
    if outcome is not None and outcome.kind is OutcomeKind.BLOCKED:
        return CredentialsRejected(text)
    if outcome is not None and outcome.reason is FailureKind.MALFORMED:
        return MalformedStream(text)
    return TransportError("other", text)


@dataclass(slots=True)
class Exchange:
    """One recorded request and how it was answered (``ending`` None: it never was).

    ``history`` is the conversation as it stood when the request went (its first
    ``length`` messages); ``summary_end`` marks the request of a compaction (None for
    others), which carried that conversation up to there and the request for a summary.
    """

    sent: RequestSent
    turn: int
    history: list[Message] = field(default_factory=list)
    length: int = 0
    summary_end: int | None = None
    deltas: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)  # its reasoning, as it streamed
    ending: ResponseReceived | RequestFailed | None = None
    retried: bool = False

    @property
    def messages(self) -> list[Message]:
        """The messages the recorded request carried."""
        history = self.history[: self.length]
        if self.summary_end is not None:
            return summary_request_of(history, self.sent.message_count, self.summary_end)
        return history[: self.sent.message_count]


@dataclass(slots=True)
class Conversation:
    """One agent run in the recording: the main agent, or one sub-agent call."""

    name: str
    task: str
    messages: list[Message] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    ending: SubAgentEnding | None = None  # a sub-agent's, once it finished
    outcome: TurnOutcome | None = None
    next: int = 0


@dataclass(slots=True)
class RecordedTurn:
    task: str
    start: int  # index of its TurnStarted in the events
    outcome: TurnOutcome | None = None
    facts: ServerFacts | None = None  # what the server said before its first request

    @property
    def stopped(self) -> bool:
        """Paused by Esc, or cut by a kill: the replay stops where the recording does."""
        return self.outcome is None or self.outcome.kind is OutcomeKind.PAUSED


@dataclass(slots=True)
class RecordedCall:
    call: ToolCall
    conversation: Conversation
    turn: int
    started: bool = False
    status: str = ""
    ending: ToolEnding | None = None
    """How it ended, as recorded (None: it never did)."""
    result: Message | None = None
    used: bool = False


class Recording:
    """A transcript read for replay. ``events`` keeps them all, in order."""

    def __init__(self, events: Iterable[TurnEvent]) -> None:
        self.events = list(events)
        self.main = Conversation("", "")
        self.conversations = [self.main]
        self.turns: list[RecordedTurn] = []
        self.calls: list[RecordedCall] = []
        self._read()

    @classmethod
    def from_events(cls, events: Iterable[TurnEvent]) -> Recording:
        return cls(events)

    def turn_outcome(self, conversation: Conversation, turn: int) -> TurnOutcome | None:
        if conversation is self.main:
            return self.turns[turn].outcome if 0 <= turn < len(self.turns) else None
        return conversation.outcome

    def _read(self) -> None:
        active = {"": self.main}
        calls: dict[tuple[str, str], RecordedCall] = {}
        compacting: dict[str, int] = {}  # agent -> where its compaction's intact part begins
        for index, event in enumerate(self.events):
            conversation = active.get(event.agent)
            if conversation is None:
                continue
            turn = len(self.turns) - 1
            exchange = conversation.exchanges[-1] if conversation.exchanges else None
            match event:
                case SubAgentStarted(name=name, task=task):
                    active[name] = Conversation(name, task)
                    self.conversations.append(active[name])
                case SubAgentFinished(name=name, ending=ending) if name in active:
                    active[name].ending = ending
                case TurnStarted(task=task) if conversation is self.main:
                    self.turns.append(RecordedTurn(task, index))
                    compacting.pop("", None)
                case TurnEnded(outcome=outcome):
                    compacting.pop(event.agent, None)  # a compaction a stop cut short
                    if conversation is self.main and self.turns:
                        self.turns[-1].outcome = outcome
                    conversation.outcome = outcome
                case ContextWindowKnown(window=tokens, origin=origin) if (
                    conversation is self.main and self._before_first_request()
                ):
                    facts = self.turns[-1].facts or ServerFacts()
                    self.turns[-1].facts = ServerFacts(
                        ContextWindow(tokens, origin), facts.warnings
                    )
                case Notice(kind=kind, text=text) if (
                    conversation is self.main and self._before_first_request()
                ):
                    facts = self.turns[-1].facts or ServerFacts()
                    self.turns[-1].facts = ServerFacts(
                        facts.window, (*facts.warnings, (kind, text))
                    )
                case CompactionStarted(intact_from=intact_from):
                    compacting[event.agent] = intact_from
                case ContextCompacted(messages=messages):
                    conversation.messages = list(messages)
                    compacting.pop(event.agent, None)
                case ContextPruned(positions=positions, results=stubs):
                    conversation.messages = with_stubs(conversation.messages, positions, stubs)
                case MessageAdded(message=message):
                    if message.reasoning:
                        # As the live history kept it (a new list: the exchanges before
                        # keep the messages they sent).
                        conversation.messages = bounded([*conversation.messages, message])
                    else:
                        conversation.messages.append(message)
                    if message.role == "user" and not conversation.task:
                        conversation.task = message.text
                    recorded = calls.get((event.agent, message.tool_call_id or ""))
                    if message.role == "tool" and recorded is not None:
                        recorded.result = message
                case RequestSent():
                    conversation.exchanges.append(
                        Exchange(
                            event,
                            turn,
                            conversation.messages,
                            len(conversation.messages),
                            compacting.get(event.agent),
                        )
                    )
                case AnswerDelta(text=text) if exchange is not None:
                    exchange.deltas.append(text)
                case ReasoningDelta(text=text) if exchange is not None:
                    exchange.thoughts.append(text)
                case ResponseReceived(tool_calls=tool_calls) if exchange is not None:
                    exchange.ending = event
                    if event.stop_reason not in CUT_STOPS:
                        for call in tool_calls:
                            calls[event.agent, call.id] = RecordedCall(call, conversation, turn)
                            self.calls.append(calls[event.agent, call.id])
                case RequestFailed() if exchange is not None:
                    exchange.ending = event
                case RetryScheduled() if exchange is not None:
                    exchange.retried = True
                case ToolStarted(call=call) if (event.agent, call.id) in calls:
                    calls[event.agent, call.id].started = True
                case ToolFinished(call=call, status=status) if (event.agent, call.id) in calls:
                    calls[event.agent, call.id].status = status
                    calls[event.agent, call.id].ending = event.ended

    def _before_first_request(self) -> bool:
        """Whether the main turn being read has made no request yet (what the server
        said at its start comes before)."""
        if not self.turns:
            return False
        exchanges = self.main.exchanges
        return not exchanges or exchanges[-1].turn != len(self.turns) - 1

    def failure(self, conversation: Conversation, exchange: Exchange) -> ModelError:
        assert isinstance(exchange.ending, RequestFailed)
        outcome = self.turn_outcome(conversation, exchange.turn)
        return recorded_failure(exchange.ending.error, retried=exchange.retried, outcome=outcome)

    def claim_call(
        self, agent: str, name: str, arguments: Mapping[str, Any]
    ) -> RecordedCall | None:
        """The first unused recorded call of ``agent`` with this tool and arguments."""
        for recorded in self.calls:
            if (
                not recorded.used
                and recorded.conversation.name == agent
                and recorded.call.name == name
                and _arguments(recorded.call) == dict(arguments)
            ):
                recorded.used = True
                return recorded
        return None


def _arguments(call: ToolCall) -> Any:
    try:
        return json.loads(call.arguments) if call.arguments.strip() else {}
    except json.JSONDecodeError:
        return None
