"""The headless terminals: plain lines for people reading logs, JSON lines for scripts."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TextIO

from treadle.adapters.serialize import event_to_record
from treadle.ports.events import (
    AnswerDelta,
    ContinuationRequested,
    OutcomeKind,
    PlanUpdated,
    RetryScheduled,
    SubAgentFinished,
    SubAgentProgress,
    SubAgentStarted,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.ports.terminal import ApprovalAnswer, ApprovalRequest

PLAN_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def describe_event(event: TurnEvent) -> list[str]:
    """The plain lines an event shows as (answer text excepted: it streams inline)."""
    tag = f"[{event.agent}] " if event.agent else ""
    match event:
        case TurnStarted(task=task) if not event.agent:
            return [f"Task: {task}"]
        case PlanUpdated(steps=steps):
            return [f"{tag}Plan:"] + [f"  {PLAN_MARKS[s.status]} {s.step}" for s in steps]
        case ToolStarted(call=call, summary=summary):
            return [f"{tag}→ {call.name}: {_shorten(summary)}"]
        case ToolFinished(status=status, is_error=is_error):
            return [f"{tag}  {'✗' if is_error else '✓'} {status}"]
        case RetryScheduled(attempt=attempt, attempts=attempts, pause=pause, error=error):
            return [f"{tag}retrying in {pause:g} s — {error}, attempt {attempt} of {attempts}"]
        case ContinuationRequested(continuation=n, max_tokens=max_tokens):
            return [f"{tag}… answer cut by its token budget; continuing ({n}, {max_tokens} tokens)"]
        case SubAgentStarted(name=name, task=task, check_interval=every, deadline=deadline):
            return [
                f"{tag}[{name}] started: {_shorten(task)} (reports every {every:g} s, "
                f"deadline {deadline:g} s)"
            ]
        case SubAgentProgress(name=name, doing=doing, requests=n, usage=usage, elapsed=elapsed):
            return [f"{tag}[{name}] {doing} · {n} requests · {usage.total} tokens · {elapsed:.1f} s"]
        case SubAgentFinished(name=name, ending=ending, requests=n, usage=usage, elapsed=elapsed):
            return [f"{tag}[{name}] {ending} · {n} requests · {usage.total} tokens · {elapsed:.1f} s"]
        case TurnEnded(outcome=outcome, usage=usage, requests=n, elapsed=elapsed) if not event.agent:
            return [
                f"{n} requests · {usage.input_tokens} in / {usage.output_tokens} out tokens "
                f"· {elapsed:.1f} s",
                outcome.screen_line,
            ]
    return []


def _shorten(text: str, width: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


class PlainTerminal:
    """Plain lines with no escape codes; nobody is there to answer a question.

    ``resume_hint`` is added after ``Turn paused`` (how to resume the session).
    """

    def __init__(self, out: TextIO | None = None, resume_hint: str = "") -> None:
        self._out = out or sys.stdout
        self._mid_line = False
        self.resume_hint = resume_hint
        self.interrupt: Callable[[], None] = lambda: None

    def show(self, event: TurnEvent) -> None:
        if isinstance(event, AnswerDelta):
            if not event.agent:
                self._out.write(event.text)
                self._mid_line = not event.text.endswith("\n")
                self._out.flush()
            return
        lines = describe_event(event)
        if not lines:
            return
        if isinstance(event, TurnEnded) and event.outcome.kind is OutcomeKind.PAUSED:
            lines[-1] += self.resume_hint
        if self._mid_line:
            self._out.write("\n")
            self._mid_line = False
        self._out.write("\n".join(lines) + "\n")
        self._out.flush()

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        return None

    async def ask_question(self, question: str) -> str | None:
        return None

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None:
        self.interrupt = interrupt


class JsonLinesTerminal(PlainTerminal):
    """One JSON event per line (``--json``); the last line is the turn's outcome."""

    def show(self, event: TurnEvent) -> None:
        record = event_to_record(event)
        if isinstance(event, TurnEnded) and not event.agent:
            record["exit_code"] = event.outcome.exit_code
            record["line"] = event.outcome.screen_line
        self._out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._out.flush()
