"""Compaction: a conversation replaced by a shorter one that keeps what matters.

The same model is asked, with no tool allowed, for a structured summary of the
conversation; the compacted conversation is then the original task and the user's
other words verbatim (newest first, up to a budget), the summary with the latest plan,
and the most recent exchanges intact. The system prompt and the project's
instructions are not messages: they go with every request, untouched.

A compaction is a state and a pure :func:`step`. When the summary request itself does
not fit, the oldest exchanges are left out of it (and the summary says so); when the
server still refuses it, or the model cannot write one, the summary is made from the
record instead, and the turn goes on.

Example::

    >>> compaction, ask = start_compaction(messages, room=6000, recent_tokens=2000,
    ...                                    user_tokens=1000)
    >>> compaction, done = step(compaction, SummaryWritten("## Task\\n…"))
    >>> done.messages[0] == messages[0]     # the task, verbatim
    True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from treadle.domain.rules.pruning import describe_call, recent_start
from treadle.domain.rules.tokens import Measure, message_tokens, messages_tokens
from treadle.domain.values.conversation import Message

PLAN_TOOL = "update_plan"
"""The tool whose latest call is the plan (the loop's ``UpdatePlanTool``)."""

COMPACT_REQUEST = """\
Your context window is nearly full, so this conversation is being compacted. Write a \
summary from which you can carry on the work without the conversation itself. Do not \
call any tool. Use these headings:
## Task
## Plan and where it stands
## Decisions made, and why
## Files read and changed
## Commands and their outcomes that matter
## What remains
## Open questions
Be specific: paths, names, figures, error messages. The user's own messages and your \
latest plan are kept word for word beside the summary."""

SUMMARY_HEADER = (
    "[treadle: the earlier part of this conversation was compacted to fit the context "
    "window. The summary you wrote of it:]"
)
RECORD_HEADER = (
    "[treadle: the earlier part of this conversation was compacted to fit the context "
    "window. No summary could be written; this is what the record shows:]"
)
PLAN_HEADER = "[The plan as you last published it:]"
PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
RECORD_ITEMS = 40


def is_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith((SUMMARY_HEADER, RECORD_HEADER))


# The summary request ---------------------------------------------------------------------


def summary_request(messages: Sequence[Message], keep_from: int, end: int) -> list[Message]:
    """What the summary request sends: the task, the conversation from ``keep_from``
    (1: all of it) up to ``end``, where the part kept intact begins, and the request.
    The intact part stays as it is beside the summary: it need not be summarised."""
    kept = list(messages[:end]) if keep_from <= 1 else [messages[0], *messages[keep_from:end]]
    return [*kept, Message.user(COMPACT_REQUEST)]


def summary_request_of(messages: Sequence[Message], count: int, end: int) -> list[Message]:
    """The summary request of ``count`` messages made from ``messages`` (for a replay
    that checks one: the oldest exchanges left out are those it does not count)."""
    return summary_request(messages, max(1, end + 2 - count), end)


def fitting_start(
    messages: Sequence[Message],
    room: int,
    end: int,
    after: int = 0,
    measure: Measure = message_tokens,
) -> int | None:
    """The first ``keep_from`` after ``after`` whose summary request (up to ``end``) fits
    in ``room`` tokens, leaving out the oldest exchanges (never a result without its
    call); None when not even the task and the request fit."""
    request = message_tokens(Message.user(COMPACT_REQUEST))
    head = measure(messages[0]) if messages else 0
    total = messages_tokens(messages[1:end], measure)
    for index in range(1, end + 1):
        boundary = index == end or messages[index].role != "tool"
        if index > after and boundary and head + total + request <= room:
            return index
        if index < end:
            total -= measure(messages[index])
    return None


# The compacted conversation ----------------------------------------------------------------


def latest_plan(messages: Sequence[Message]) -> str:
    """The plan as last published: the latest ``update_plan`` call, or the plan an
    earlier compaction kept. Empty when there is none."""
    for message in reversed(messages):
        if message.role == "assistant":
            for call in reversed(message.tool_calls):
                if call.name == PLAN_TOOL:
                    plan = _plan_text(call.arguments)
                    if plan:
                        return plan
        elif is_summary(message) and PLAN_HEADER in message.text:
            return message.text.split(PLAN_HEADER, 1)[1].strip()
    return ""


def _plan_text(arguments: str) -> str:
    try:
        value = json.loads(arguments)
    except ValueError:
        return ""
    steps = value.get("steps") if isinstance(value, dict) else None
    if not isinstance(steps, list):
        return ""
    lines = [
        f"{PLAN_MARKS.get(str(step.get('status')), '[ ]')} {step.get('step', '')}"
        for step in steps
        if isinstance(step, dict)
    ]
    explanation = value.get("explanation")
    if isinstance(explanation, str) and explanation.strip():
        lines.append(explanation.strip())
    return "\n".join(lines)


def record_summary(messages: Sequence[Message]) -> str:
    """A summary made from the record when the model could not write one: the calls
    made and how each began to answer, the last things said."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    items: list[str] = []
    said = ""
    for message in messages[1:]:
        if message.role == "assistant":
            said = message.text or said
            for call in message.tool_calls:
                result = results.get(call.id)
                first = next(
                    (line.strip() for line in (result.text if result else "").splitlines()),
                    "no result",
                )
                items.append(f"- {describe_call(call)}: {first[:120]}")
    lines = [f"{len(items)} tool calls; the latest:", *items[-RECORD_ITEMS:]] if items else []
    if said:
        lines.append(f"The last thing you said: {' '.join(said.split())[:600]}")
    return "\n".join(lines) or "Nothing but the task."


def compacted_history(
    messages: Sequence[Message],
    summary: str,
    *,
    recent_tokens: int,
    user_tokens: int,
    summarized: bool = True,
    dropped: int = 0,
    measure: Measure = message_tokens,
) -> tuple[Message, ...]:
    """The conversation that replaces ``messages``: the task; the user's other messages
    verbatim, newest first up to ``user_tokens`` (kept in their order); the summary
    and the latest plan; the newest ``recent_tokens`` of exchanges, intact."""
    start = compaction_start(messages, recent_tokens, measure)
    task, older = messages[0], messages[1:start]
    words: list[Message] = []
    budget = user_tokens
    for message in reversed(older):
        if message.role == "user" and not is_summary(message):
            cost = measure(message)
            if cost > budget:
                break
            words.insert(0, message)
            budget -= cost
    header = SUMMARY_HEADER if summarized else RECORD_HEADER
    parts = [header, summary.strip() or "(the summary was empty)"]
    if dropped:
        parts.append(
            f"(The {dropped} oldest messages did not fit in the summary request and were "
            "left out of this summary.)"
        )
    plan = latest_plan(messages)
    if plan:
        parts += [PLAN_HEADER, plan]
    return (task, *words, Message.user("\n\n".join(parts)), *messages[start:])


def compaction_start(
    messages: Sequence[Message], recent_tokens: int, measure: Measure = message_tokens
) -> int:
    """Where the intact part of a compacted conversation begins: the newest exchanges,
    after any earlier summary (the new one covers it), never before message 1."""
    start = recent_start(messages, recent_tokens, measure)
    last_summary = max((i for i, m in enumerate(messages) if is_summary(m)), default=0)
    start = max(start, last_summary + 1, 1)
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return start


def worth_compacting(
    messages: Sequence[Message],
    *,
    recent_tokens: int,
    user_tokens: int,
    summary_tokens: int,
    measure: Measure = message_tokens,
) -> bool:
    """Whether compacting would make room: what it replaces (between the task and the
    intact part) takes more than what replaces it at most (the user's words kept, and a
    summary of ``summary_tokens``)."""
    if len(messages) < 2:
        return False
    start = compaction_start(messages, recent_tokens, measure)
    replaced = messages_tokens(messages[1:start], measure)
    words = messages_tokens([m for m in messages[1:start] if m.role == "user"], measure)
    return replaced > min(words, user_tokens) + summary_tokens


# The state and its step ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction under way. ``room`` is what its summary request may take (tokens);
    the part from ``end`` on is kept intact, and the request summarises the rest from
    ``keep_from`` (1: all of it)."""

    messages: tuple[Message, ...]
    room: int
    recent_tokens: int
    user_tokens: int
    end: int
    keep_from: int = 1
    refusals: int = 0
    measure: Measure = field(default=message_tokens, compare=False)


@dataclass(frozen=True, slots=True)
class SummaryWritten:
    text: str


@dataclass(frozen=True, slots=True)
class SummaryRefused:
    """The server refused the summary request as too long; ``room`` is what a request
    may take now (smaller, when the refusal taught the window)."""

    room: int


@dataclass(frozen=True, slots=True)
class SummaryFailed:
    """No summary came: the request failed for another reason, or came back empty."""


CompactionEvent = SummaryWritten | SummaryRefused | SummaryFailed


@dataclass(frozen=True, slots=True)
class AskForSummary:
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class Compacted:
    """The compacted conversation; ``summarized`` False when made from the record."""

    messages: tuple[Message, ...]
    summarized: bool
    dropped: int


CompactionAction = AskForSummary | Compacted

MAX_SUMMARY_REFUSALS = 2


def start_compaction(
    messages: Sequence[Message],
    *,
    room: int,
    recent_tokens: int,
    user_tokens: int,
    measure: Measure = message_tokens,
) -> tuple[Compaction, CompactionAction]:
    """Begin compacting ``messages``: ask for the summary, leaving out the oldest
    exchanges if the whole request would not fit in ``room``."""
    end = compaction_start(messages, recent_tokens, measure)
    state = Compaction(tuple(messages), room, recent_tokens, user_tokens, end, measure=measure)
    return _ask(state, after=0)


def step(state: Compaction, event: CompactionEvent) -> tuple[Compaction, CompactionAction]:
    match event:
        case SummaryWritten(text=text) if text.strip():
            return state, _done(state, text, summarized=True)
        case SummaryRefused(room=room):
            refused = replace(state, room=min(room, state.room), refusals=state.refusals + 1)
            if refused.refusals >= MAX_SUMMARY_REFUSALS:
                return refused, _from_record(refused)
            # Leave out at least half of what the refused request still carried.
            halfway = state.keep_from + (state.end - state.keep_from) // 2
            return _ask(refused, after=max(state.keep_from, halfway - 1))
    return state, _from_record(state)


def _ask(state: Compaction, *, after: int) -> tuple[Compaction, CompactionAction]:
    keep_from = fitting_start(state.messages, state.room, state.end, after, state.measure)
    if keep_from is None or keep_from >= state.end:
        return state, _from_record(state)
    state = replace(state, keep_from=keep_from)
    return state, AskForSummary(tuple(summary_request(state.messages, keep_from, state.end)))


def _done(state: Compaction, summary: str, *, summarized: bool) -> Compacted:
    dropped = max(0, state.keep_from - 1) if summarized else 0
    messages = compacted_history(
        state.messages,
        summary,
        recent_tokens=state.recent_tokens,
        user_tokens=state.user_tokens,
        summarized=summarized,
        dropped=dropped,
        measure=state.measure,
    )
    return Compacted(messages, summarized, dropped)


def _from_record(state: Compaction) -> Compacted:
    return _done(state, record_summary(state.messages[: state.end]), summarized=False)
