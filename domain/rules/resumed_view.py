"""What a session resumed at the terminal shows before its prompt: the task, then the
last few exchanges of the main conversation, folded.

An exchange is what the person said (a turn's message) and what came back: the
model's answers, a few lines of each, and its tool calls, one line each; then how the
turn ended. Earlier exchanges are counted, not shown. Sub-agents' events stay out:
the person talked to the main agent.

Example::

    view = resumed_view(read_transcript(path))
    for line in view.lines:
        print(line.kind, line.text)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from treadle.domain.rules.arguments import arguments_object
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import MessageAdded, TurnEnded, TurnEvent, TurnStarted
from treadle.domain.values.text import one_line

EXCHANGES_SHOWN = 3
ANSWER_LINES = 4
"""The most lines shown of one answer (its first ones, then how many are folded)."""
LINE_WIDTH = 400
"""The most characters kept of one line; the terminal cuts it to its width."""

ShownKind = Literal["folded", "said", "answer", "call", "ended"]


@dataclass(frozen=True, slots=True)
class Shown:
    """One line to show: what the person said, an answer's line, a call, how a turn
    ended, or a note of what is folded away."""

    kind: ShownKind
    text: str


@dataclass(frozen=True, slots=True)
class ResumedView:
    """``task`` is the session's first message; ``lines`` the exchanges shown."""

    task: str
    lines: tuple[Shown, ...] = ()


@dataclass
class _Exchange:
    said: str
    lines: list[Shown] = field(default_factory=list)


def resumed_view(events: Iterable[TurnEvent], exchanges: int = EXCHANGES_SHOWN) -> ResumedView:
    """The task and the last ``exchanges`` exchanges of the recorded ``events``.

    The first exchange's message is the task, shown once as the task: when it is among
    the exchanges shown, its line is left out.
    """
    kept: list[_Exchange] = []
    for event in events:
        if event.agent:
            continue
        match event:
            case TurnStarted(task=task):
                kept.append(_Exchange(task))
            case MessageAdded(message=message) if message.role == "assistant" and kept:
                kept[-1].lines.extend(_answer_lines(message.text))
                kept[-1].lines.extend(Shown("call", call_line(c)) for c in message.tool_calls)
            case TurnEnded(outcome=outcome) if kept:
                kept[-1].lines.append(Shown("ended", one_line(outcome.screen_line, LINE_WIDTH)))
    if not kept:
        return ResumedView("")
    task = one_line(kept[0].said, LINE_WIDTH)
    shown = kept[-exchanges:] if exchanges > 0 else []
    hidden = len(kept) - len(shown)
    lines: list[Shown] = []
    if hidden:
        lines.append(Shown("folded", _earlier(hidden)))
    for exchange in shown:
        if exchange is not kept[0]:
            lines.append(Shown("said", one_line(exchange.said, LINE_WIDTH)))
        lines.extend(exchange.lines)
    return ResumedView(task, tuple(lines))


def call_line(call: ToolCall) -> str:
    """A call on one line: its tool and its first argument that is text (the command,
    the path), e.g. ``bash make test``."""
    arguments = arguments_object(call.arguments) or {}
    first = next((value for value in arguments.values() if isinstance(value, str)), "")
    return one_line(f"{call.name} {first}".strip(), LINE_WIDTH)


def _answer_lines(text: str) -> list[Shown]:
    rows = [row for row in text.strip().split("\n") if row.strip()]
    shown = [Shown("answer", one_line(row, LINE_WIDTH)) for row in rows[:ANSWER_LINES]]
    if len(rows) > ANSWER_LINES:
        more = len(rows) - ANSWER_LINES
        shown.append(Shown("folded", f"… {more} more line{'s' if more > 1 else ''}"))
    return shown


def _earlier(count: int) -> str:
    return f"… {count} earlier exchange{'s' if count > 1 else ''}"
