"""What happens during a turn, as values: shown on the terminal and kept in the transcript.

Every event names the ``agent`` it belongs to: ``""`` for the main turn, a name such
as ``"agent-1"`` for a sub-agent (``"agent-1/agent-1"`` for one of its own).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage
from treadle.domain.values.model import StopReason
from treadle.domain.values.notices import NoticeKind
from treadle.domain.values.outcome import TurnOutcome
from treadle.domain.values.tools import ToolEnding

PlanStatus = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True, slots=True)
class PlanStep:
    step: str
    status: PlanStatus = "pending"


@dataclass(frozen=True, slots=True)
class TurnStarted:
    task: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class MessageAdded:
    """A message joined the conversation (the transcript rebuilds it from these)."""

    message: Message
    agent: str = ""


@dataclass(frozen=True, slots=True)
class RequestSent:
    """A request went out. ``digest`` fingerprints the whole history it carried."""

    number: int
    attempt: int
    max_tokens: int
    message_count: int
    digest: str
    continuation: bool = False
    agent: str = ""


@dataclass(frozen=True, slots=True)
class AnswerDelta:
    text: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning streams in: shown apart from the answer."""

    text: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """A response ended: everything it said, as one value (replay answers with these).
    ``reasoning`` is what it thought, exactly as the protocol wants it back."""

    number: int
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    stop_reason: StopReason
    reasoning: tuple[Reasoning, ...] = ()
    agent: str = ""


@dataclass(frozen=True, slots=True)
class RequestFailed:
    number: int
    attempt: int
    error: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class RetryScheduled:
    """A transient failure will be retried after ``pause`` seconds."""

    attempt: int
    attempts: int
    pause: float
    error: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ContinuationRequested:
    """An answer hit its token budget and is being continued with a bigger one.
    ``cut_at``: the tokens it had when it was cut short of its budget (``short_of``),
    by something between treadle and the model that caps answers (0: at its budget)."""

    continuation: int
    max_tokens: int
    agent: str = ""
    cut_at: int = 0
    short_of: int = 0


@dataclass(frozen=True, slots=True)
class UsageUpdated:
    """``request`` is this response's usage, ``turn`` the turn's total so far."""

    request: Usage
    turn: Usage
    requests: int
    agent: str = ""


@dataclass(frozen=True, slots=True)
class PlanUpdated:
    steps: tuple[PlanStep, ...]
    explanation: str = ""
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call: ToolCall
    summary: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A running command's last lines (``lines``, oldest first, printable and cut), shown
    under its line while it runs. Each is the whole tail as it stands, not what came
    since the last: they come at most a few times a second, and are not kept in the
    transcript (the model's result is)."""

    call_id: str
    lines: tuple[str, ...]
    agent: str = ""


@dataclass(frozen=True, slots=True)
class BackgroundCount:
    """How many background processes run now (issue 27), each time it changes: for the
    status line, and not kept in the transcript (the calls that start and stop them are)."""

    running: int
    agent: str = ""


class ToolMark(enum.Enum):
    """How a finished call is marked on the screen."""

    DONE = "✓"
    FAILED = "✗"
    STOPPED = "■"  # stopped on purpose and reported (a sub-agent at its deadline)


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call ended. ``status`` is a short line for people: ``exit 0 · 0.2 s``,
    ``deadline``…; ``ending`` how it ended, closed (see :attr:`ended`; a transcript
    written before it existed has it read back from the line).
    ``diff`` is the unified diff of the file a write or an edit changed (issue 14).
    ``preview`` is what a command printed, its head and tail as the screen keeps them
    (lines joined by newlines, printable; "" for none)."""

    call: ToolCall
    status: str
    is_error: bool
    duration: float
    agent: str = ""
    diff: str = ""
    preview: str = ""
    ending: ToolEnding | None = None

    @property
    def ended(self) -> ToolEnding:
        """``ending`` when said, else finished, or failed for an error."""
        if self.ending is not None:
            return self.ending
        return ToolEnding.FAILED if self.is_error else ToolEnding.FINISHED

    @property
    def mark(self) -> ToolMark:
        """Failed, done, or stopped at a deadline with a report: no success mark for that."""
        if self.is_error:
            return ToolMark.FAILED
        return ToolMark.STOPPED if self.ended is ToolEnding.DEADLINE else ToolMark.DONE


@dataclass(frozen=True, slots=True)
class SubAgentStarted:
    name: str
    task: str
    check_interval: float
    deadline: float
    agent: str = ""


@dataclass(frozen=True, slots=True)
class SubAgentProgress:
    """A sub-agent's self-check: what it is doing, requests, tokens and time so far."""

    name: str
    doing: str
    requests: int
    usage: Usage
    elapsed: float
    agent: str = ""


class SubAgentEnding(enum.StrEnum):
    """How a sub-agent's run ended, as its caller sees it."""

    FINISHED = "finished"
    """It answered."""
    DEADLINE = "deadline"
    """Stopped at its deadline; it reported (or a report was made from its record)."""
    STOPPED = "stopped"
    """Its caller was stopped, and so was it."""
    FAILED = "failed"
    """Its turn failed; the caller reads what it did and goes on."""
    ENDS_CALLER = "ends the caller"
    """It ended blocked or waiting for input: its caller's turn ends the same way."""


@dataclass(frozen=True, slots=True)
class SubAgentFinished:
    """``line`` is the sub-agent's own outcome line when it failed or ended its caller
    (``Turn failed: …``); :attr:`said` is what the screen shows."""

    name: str
    ending: SubAgentEnding
    requests: int
    usage: Usage
    elapsed: float
    agent: str = ""
    line: str = ""

    @property
    def said(self) -> str:
        return self.line or self.ending.value


# The context window (issues 10 and 16) --------------------------------------------


@dataclass(frozen=True, slots=True)
class ContextWindowKnown:
    """The window the conversation is kept within, and where the figure came from: the
    configuration, the server (``llama.cpp /props n_ctx``…), the table of known models,
    or a refusal. Recorded when it is first known and whenever it changes."""

    window: int
    origin: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ContextPruned:
    """Old tool results were replaced by short stubs to make room: ``results`` are the
    stubs, ``positions`` where in the conversation each one goes (the result it replaces
    has its ``tool_call_id``). The transcript keeps the results themselves in their
    ``message_added`` records."""

    tokens_before: int
    tokens_after: int
    window: int
    positions: tuple[int, ...]
    results: tuple[Message, ...]
    agent: str = ""


@dataclass(frozen=True, slots=True)
class CompactionStarted:
    """The conversation is being compacted; the requests that follow, up to its
    :class:`ContextCompacted`, ask the model for a summary of its messages up to
    ``intact_from``, where the part kept intact begins."""

    tokens: int
    window: int
    intact_from: int
    agent: str = ""


@dataclass(frozen=True, slots=True)
class ContextCompacted:
    """From now on the conversation sent is ``messages``: the task and the user's words,
    the summary and the plan, the latest exchanges. ``summarized`` is False when the
    summary was made from the record (the model could not write one); ``dropped``
    counts the oldest messages the summary request had to leave out."""

    tokens_before: int
    tokens_after: int
    window: int
    messages: tuple[Message, ...]
    summarized: bool = True
    dropped: int = 0
    agent: str = ""


@dataclass(frozen=True, slots=True)
class WindowFilled:
    """An answer was cut because prompt and answer filled the context window, not by
    its own budget: it is continued only once the continuation fits."""

    window: int
    prompt_tokens: int
    answer_tokens: int
    agent: str = ""


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the person should know that is not part of the conversation: a server
    that drops tools, a sandbox the kernel lacks, a tool server that did not start.
    ``kind`` names it for scripts (``tools_dropped``…); ``text`` says it in one line."""

    kind: NoticeKind
    text: str
    agent: str = ""


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """``cost`` is what ``usage`` cost in dollars, where the model's prices are configured."""

    outcome: TurnOutcome
    usage: Usage
    requests: int
    elapsed: float
    agent: str = ""
    cost: float | None = None
    value: object = None
    """The final answer's JSON value, checked against the output schema (None: there is
    no schema, or the turn did not end with a valid answer)."""


TurnEvent = (
    TurnStarted
    | MessageAdded
    | RequestSent
    | AnswerDelta
    | ReasoningDelta
    | ResponseReceived
    | RequestFailed
    | RetryScheduled
    | ContinuationRequested
    | UsageUpdated
    | PlanUpdated
    | ToolStarted
    | ToolOutput
    | BackgroundCount
    | ToolFinished
    | SubAgentStarted
    | SubAgentProgress
    | SubAgentFinished
    | ContextWindowKnown
    | ContextPruned
    | CompactionStarted
    | ContextCompacted
    | WindowFilled
    | Notice
    | TurnEnded
)
