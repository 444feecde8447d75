"""The headless terminals: plain lines for people reading logs, JSON lines for scripts.

Neither ever writes an escape code: text from the model or a tool (answers, command
lines, questions) has its control characters removed before it is shown, so a model
cannot move the cursor, recolour or retitle the terminal of whoever reads the log.

The model's reasoning is not its answer: plain lines show it only when asked
(``--verbose``), after ``thinking:`` and indented, and JSON lines carry it as
``reasoning_delta`` events of their own.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from treadle.adapters.transcript.serialize import event_to_record
from treadle.domain.rules.context_window import is_learned
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import (
    AnswerDelta,
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    ContinuationRequested,
    MessageAdded,
    Notice,
    PlanUpdated,
    ReasoningDelta,
    RetryScheduled,
    SubAgentFinished,
    SubAgentProgress,
    SubAgentStarted,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
    WindowFilled,
)
from treadle.domain.values.model import ContextWindow
from treadle.domain.values.text import one_line, printable
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest

PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
ANSWER_NOTES = (
    ContinuationRequested,
    WindowFilled,
    CompactionStarted,
    ContextPruned,
    ContextCompacted,
    ContextWindowKnown,
)
"""Notes that can come while an answer is being continued: they wait for its end, so
that the answer reads as one."""

# json.dumps escapes C0 but leaves DEL, C1 and the bidi controls as they are.
_JSON_UNESCAPED_CONTROL = re.compile(
    r"[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)

if TYPE_CHECKING:
    from treadle.adapters.terminal.word_wrap import WordWrap


def counted(number: int, noun: str) -> str:
    """``1 request``, ``2 requests``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def token_counts(usage: Usage, separator: str = "") -> str:
    """``1200 in (900 cached) / 40 out (30 reasoning) tokens``; a kind with no tokens
    is not named. ``separator`` groups thousands (``","``)."""

    def number(count: int) -> str:
        return format(count, separator)

    cached = [
        f"{number(count)} {kind}"
        for count, kind in (
            (usage.cache_read_tokens, "cached"),
            (usage.cache_write_tokens, "to cache"),
        )
        if count
    ]
    given = f"{number(usage.input_tokens)} in" + (f" ({', '.join(cached)})" if cached else "")
    thought = f" ({number(usage.reasoning_tokens)} reasoning)" if usage.reasoning_tokens else ""
    return f"{given} / {number(usage.output_tokens)} out{thought} tokens"


def cost_text(cost: float | None) -> str:
    """`` · $0.0123`` for what a turn cost; nothing where no prices are configured."""
    if cost is None:
        return ""
    return f" · ${cost:.4f}" if cost < 1 else f" · ${cost:,.2f}"


TASK_SHOWN = 2_000
"""Characters of a task the ``Task:`` line shows: a task of megabytes is not echoed whole."""


def shown_task(task: str, limit: int = TASK_SHOWN) -> str:
    """The head of a long task, and how much was left out."""
    if len(task) <= limit:
        return task
    return f"{task[:limit]}… ({len(task) - limit:,} more characters)"


def tokens_text(tokens: int) -> str:
    """``950``, ``2.4k``, ``16k``, ``128k``: a token count at a glance."""
    if tokens < 1000:
        return str(tokens)
    thousands = f"{tokens / 1000:.1f}".removesuffix(".0")
    return f"{thousands}k"


def context_line(event: ContextPruned | ContextCompacted) -> str:
    """``context 13.1k/16k · compacted to 2.4k``."""
    head = f"context {tokens_text(event.tokens_before)}/{tokens_text(event.window)}"
    if isinstance(event, ContextPruned):
        count = counted(len(event.results), "old tool result")
        return f"{head} · pruned {count} to {tokens_text(event.tokens_after)}"
    line = f"{head} · compacted to {tokens_text(event.tokens_after)}"
    if not event.summarized:
        line += " (no summary could be written: made from the record)"
    elif event.dropped:
        line += f" (the summary left out the {counted(event.dropped, 'oldest message')})"
    return line


@functools.singledispatch
def describe_event(event: TurnEvent) -> list[str]:
    """The plain lines an event shows as (answer text excepted: it streams inline).

    One function per kind of event, registered below; a kind with none (a delta, a
    request sent, a message added…) shows as no line. A sub-agent's lines carry its
    name (``[name] ``) unless they name it themselves."""
    return []


def _tag(event: TurnEvent) -> str:
    return f"[{event.agent}] " if event.agent else ""


@describe_event.register(TurnStarted)
def _task(event: TurnStarted) -> list[str]:
    return [] if event.agent else [f"Task: {printable(shown_task(event.task))}"]


@describe_event.register(PlanUpdated)
def _plan(event: PlanUpdated) -> list[str]:
    steps = [f"  {PLAN_MARKS[s.status]} {one_line(s.step)}" for s in event.steps]
    return [f"{_tag(event)}Plan:", *steps]


@describe_event.register(ToolStarted)
def _tool_started(event: ToolStarted) -> list[str]:
    return [f"{_tag(event)}→ {one_line(event.call.name, 64)}: {one_line(event.summary)}"]


@describe_event.register(ToolFinished)
def _tool_finished(event: ToolFinished) -> list[str]:
    tag, preview, diff = _tag(event), event.preview, event.diff
    output = [f"{tag}    {printable(line)}" for line in preview.split("\n") if preview]
    rows = diff.removesuffix("\n").split("\n") if diff else []
    change = [f"{tag}    {printable(line)}" for line in rows]
    head = f"{tag}  {event.mark.value} {one_line(event.call.name, 64)}: {one_line(event.status)}"
    return [head, *output, *change]


@describe_event.register(RetryScheduled)
def _retry(event: RetryScheduled) -> list[str]:
    return [
        f"{_tag(event)}retrying in {event.pause:g} s — {one_line(event.error)}, "
        f"attempt {event.attempt} of {event.attempts}"
    ]


@describe_event.register(ContinuationRequested)
def _continuation(event: ContinuationRequested) -> list[str]:
    going_on = f"continuing ({event.continuation}, {event.max_tokens} tokens)"
    if not event.cut_at:
        return [f"{_tag(event)}… answer cut by its token budget; {going_on}"]
    return [
        f"{_tag(event)}… answer cut at {event.cut_at:,} of its {event.short_of:,} tokens, "
        f"not by the context window; {going_on}"
    ]


@describe_event.register(SubAgentStarted)
def _sub_agent_started(event: SubAgentStarted) -> list[str]:
    return [
        f"[{event.name}] started: {one_line(event.task)} (reports every "
        f"{event.check_interval:g} s, deadline {event.deadline:g} s)"
    ]


@describe_event.register(SubAgentProgress)
def _sub_agent_progress(event: SubAgentProgress) -> list[str]:
    return [f"[{event.name}] {one_line(event.doing)} · {_spent(event)}"]


@describe_event.register(SubAgentFinished)
def _sub_agent_finished(event: SubAgentFinished) -> list[str]:
    return [f"[{event.name}] {one_line(event.said)} · {_spent(event)}"]


def _spent(event: SubAgentProgress | SubAgentFinished) -> str:
    return (
        f"{counted(event.requests, 'request')} · {event.usage.total} tokens · {event.elapsed:.1f} s"
    )


@describe_event.register(Notice)
def _notice(event: Notice) -> list[str]:
    return [f"{_tag(event)}warning: {one_line(event.text, 500)}"]


@describe_event.register(ContextPruned)
@describe_event.register(ContextCompacted)
def _context(event: ContextPruned | ContextCompacted) -> list[str]:
    return [_tag(event) + context_line(event)]


@describe_event.register(CompactionStarted)
def _compacting(event: CompactionStarted) -> list[str]:
    size, window = tokens_text(event.tokens), tokens_text(event.window)
    return [f"{_tag(event)}context {size}/{window} · compacting…"]


@describe_event.register(ContextWindowKnown)
def _window_known(event: ContextWindowKnown) -> list[str]:
    if not is_learned(ContextWindow(event.window, event.origin)):
        return []
    return [
        f"{_tag(event)}context window {event.window:,} tokens, "
        f"learned from {one_line(event.origin)}"
    ]


@describe_event.register(WindowFilled)
def _window_filled(event: WindowFilled) -> list[str]:
    return [
        f"{_tag(event)}… the answer filled the context window ({event.window:,} tokens: "
        f"{event.prompt_tokens:,} of prompt, {event.answer_tokens:,} of answer); it goes on "
        "once a continuation fits"
    ]


@describe_event.register(TurnEnded)
def _turn_ended(event: TurnEnded) -> list[str]:
    if event.agent:
        return []
    spent = token_counts(event.usage) + cost_text(event.cost)
    return [
        f"{counted(event.requests, 'request')} · {spent} · {event.elapsed:.1f} s",
        printable(event.outcome.screen_line),
    ]


def terminal_columns(out: TextIO | None) -> Callable[[], int] | None:
    """How wide ``out`` is, asked anew at each call, when it is a terminal; None for a
    pipe, a file or a closed stream (their text is not wrapped)."""
    try:
        fd = out.fileno() if out is not None else -1
    except (OSError, ValueError, AttributeError):
        return None
    if fd < 0 or not os.isatty(fd):
        return None

    def columns() -> int:
        try:
            return os.get_terminal_size(fd).columns or 80
        except OSError:
            return 80

    return columns


class PlainTerminal:
    """Plain lines with no escape codes; nobody is there to answer a question.

    ``resume_hint`` is added after every outcome but ``Turn finished`` (how to resume).
    ``verbose`` shows the model's reasoning, as it streams, on lines of its own.

    ``outcome_last`` keeps the last line the outcome, whatever the session's end says
    (an MCP server stopped while it closes, a checkpoint that failed): the main turn's
    end waits for :meth:`finish` (or for the next turn's start), and what comes in
    between is written before it. Whoever sets it calls :meth:`finish`, crash or not::

        try:
            await end_session(container)  # what the close says comes before the outcome
        finally:
            terminal.finish()
    """

    def __init__(
        self,
        out: TextIO | None = None,
        resume_hint: str = "",
        *,
        verbose: bool = False,
        width: Callable[[], int] | None = None,
        outcome_last: bool = False,
    ) -> None:
        self._out = out or sys.stdout
        self._outcome_last = outcome_last
        self._outcome: TurnEnded | None = None
        # On a terminal (``width`` given), the answer is word-wrapped to it; into a pipe
        # or a file it goes unchanged.
        self._wrap: WordWrap | None = None
        if width is not None:
            # Lazy (entrypoints.NOT_BEFORE_FIRST_REQUEST): wcwidth's tables, for a terminal only.
            from treadle.adapters.terminal.word_wrap import WordWrap

            self._wrap = WordWrap(width)
        self._width = width
        self._mid_line = False
        self._held: list[str] = []
        self.verbose = verbose
        self._thinking = False  # reasoning is streaming on the last line
        self._held_thought: list[str] = []
        self.resume_hint = resume_hint
        self.reader_gone = False
        self.interrupt: Callable[[], None] = lambda: None

    def show(self, event: TurnEvent) -> None:
        main = not event.agent
        if self._outcome_last and main and isinstance(event, TurnEnded):
            self.finish()  # a second end (never seen) would not hide the first
            self._outcome = event
            return
        if main and isinstance(event, TurnStarted):
            self.finish()  # the turn before ended: its outcome goes before the next one
        self._render(event)

    def finish(self) -> None:
        """Write the outcome held back for the end (see ``outcome_last``); once."""
        outcome, self._outcome = self._outcome, None
        if outcome is not None:
            self._render(outcome)

    def _render(self, event: TurnEvent) -> None:
        """Text streams inline (reasoning on lines of its own); every other event is
        the lines :func:`describe_event` gives it."""
        if type(event) is ReasoningDelta:
            if self.verbose and not event.agent and event.text:
                self._reasoning(event.text)
            return
        if self._thinking and not event.agent:
            self._write("\n")
            self._thinking = self._mid_line = False
        if type(event) is AnswerDelta:
            if not event.agent and event.text:
                text = printable(event.text)
                if self._held and "\n" in text:  # the line a note waited for ends here
                    line_end, text = text.split("\n", 1)
                    self._answer_text(line_end + "\n")
                    lines, self._held = self._held, []
                    self._write("\n".join(lines) + "\n")
                self._answer_text(text)
            return
        lines = describe_event(event)
        if lines:
            self._lines(event, lines)

    def _lines(self, event: TurnEvent, lines: list[str]) -> None:
        if isinstance(event, TurnEnded) and event.outcome.resumable:
            lines[-1] += self.resume_hint
        if self._mid_line and isinstance(event, ANSWER_NOTES) and not event.agent:
            # The answer goes on where it stopped: the note waits for the answer's end.
            self._held.extend(lines)
            return
        if self._wrap is not None and self._mid_line:
            self._write(self._wrap.flush())
            self._wrap.feed("\n")  # the lines below start a row of their own
        lines, self._held = self._held + lines, []
        if self._width is not None:  # on a terminal, broken between words as the answer
            from treadle.adapters.terminal.log_wrap import wrap_rows

            lines = wrap_rows(lines, self._width(), margin=0)
        held, self._held_thought = "".join(self._held_thought), []
        thought = "thinking: " + held.lstrip() + "\n" if held else ""
        self._write(("\n" if self._mid_line else "") + thought + "\n".join(lines) + "\n")
        self._mid_line = False

    def _answer_text(self, text: str) -> None:
        if self._wrap is not None:
            self._write(self._wrap.feed(text))
            self._mid_line = self._wrap.mid_line
        elif text:
            self._write(text)
            self._mid_line = not text.endswith("\n")

    def _reasoning(self, text: str) -> None:
        """Reasoning goes on a line of its own, after ``thinking:``, its lines indented;
        in the middle of an answer's line (a continued answer thinks again) it waits for
        that line to end, so that the answer reads unbroken."""
        text = printable(text).replace("\n", "\n  ")
        if self._mid_line and not self._thinking:
            self._held_thought.append(text)
            return
        if not self._thinking:
            text = "thinking: " + text.lstrip()
            self._thinking = True
        self._write(text)
        self._mid_line = True

    def _write(self, text: str) -> None:
        """Write and flush; when nobody reads any more (``| head``), pause the turn."""
        if self.reader_gone:
            return
        try:
            self._out.write(text)
            self._out.flush()
        except BrokenPipeError:
            self.reader_gone = True
            _quiet_stdout(self._out)
            self.interrupt()

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        return None

    async def ask_question(self, question: str) -> str | None:
        return None

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None:
        self.interrupt = interrupt


class JsonLinesTerminal(PlainTerminal):
    """One JSON event per line (``--json``); the last line is the turn's outcome.

    ``message_added`` events are left out: they repeat what the answer deltas, the
    responses and the tool events already said (the transcript keeps them); so are the
    messages of ``context_compacted`` and the stubs of ``context_pruned``, replaced by
    their count.
    """

    def _render(self, event: TurnEvent) -> None:
        record = json_record(event, self.resume_hint)
        if record is None:
            return
        line = json.dumps(record, ensure_ascii=False)
        line = _JSON_UNESCAPED_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", line)
        self._write(line + "\n")


@functools.singledispatch
def json_record(event: TurnEvent, resume_hint: str = "") -> dict[str, Any] | None:
    """The ``--json`` line of ``event`` (its transcript record, :func:`event_to_record`,
    unless a kind registered below says otherwise); None for none."""
    return event_to_record(event)


@json_record.register(MessageAdded)
def _message_added(event: MessageAdded, resume_hint: str = "") -> dict[str, Any] | None:
    return None  # the deltas, the responses and the tool events said it already


@json_record.register(ContextCompacted)
def _compacted(event: ContextCompacted, resume_hint: str = "") -> dict[str, Any] | None:
    return event_to_record(event) | {"messages": len(event.messages)}


@json_record.register(ContextPruned)
def _pruned(event: ContextPruned, resume_hint: str = "") -> dict[str, Any] | None:
    return event_to_record(event) | {"results": len(event.results)}


@json_record.register(TurnEnded)
def _ended(event: TurnEnded, resume_hint: str = "") -> dict[str, Any] | None:
    record = event_to_record(event)
    if not event.agent:
        record["exit_code"] = event.outcome.exit_code
        record["line"] = event.outcome.screen_line
        if event.outcome.resumable and resume_hint:
            record["resume_hint"] = resume_hint.strip(" —")
    return record


def _quiet_stdout(out: TextIO) -> None:
    """Point a closed standard output at /dev/null, so that the flush at exit does not
    fail again (what Python's documentation advises for SIGPIPE)."""
    if out is sys.stdout:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
