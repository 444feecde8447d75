"""What the screen says about a turn: log lines for events, and the live rows.

:class:`TurnView` keeps the little state the display needs (the tools running, the
tokens so far, the last plan of each agent) and turns each event into styled lines;
:meth:`TurnView.live_rows` draws the running tools and the status line for a given
moment. It does no I/O, so its output can be checked line by line.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from treadle.adapters.blessed_terminal.screen import cell_width, fit, fit_head, fit_tail
from treadle.adapters.terminal.plain_terminal import (
    cost_text,
    describe_event,
    shown_task,
    token_counts,
)
from treadle.domain.rules.background import status_part
from treadle.domain.rules.output_preview import LIVE_LINES
from treadle.domain.rules.resumed_view import ResumedView
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import (
    AnswerDelta,
    BackgroundCount,
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    ContinuationRequested,
    MessageAdded,
    Notice,
    PlanStep,
    PlanUpdated,
    RequestSent,
    ResponseReceived,
    RetryScheduled,
    SubAgentFinished,
    SubAgentProgress,
    SubAgentStarted,
    ToolFinished,
    ToolMark,
    ToolOutput,
    ToolStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
    UsageUpdated,
    WindowFilled,
)
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.text import one_line, printable

Style = Callable[[str], str]

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PLAN_MARKS = {"completed": "✔", "in_progress": "▸", "pending": "○"}
# Tools whose work the screen already shows another way (the plan, the question,
# the sub-agent's own lines): no line of their own when they end well.
QUIET_TOOLS = frozenset({"update_plan", "ask", "agent"})
MAX_TOOL_ROWS = 6
THOUGHT = "✻"
EXPAND_KEY = "ctrl-o"
DIFF_SHOWN_LINES = 40
"""Lines of a change's diff the log shows under the call; the rest is folded, saying so."""
OUTPUT_ROWS = 10
"""Rows of the live block the running commands' last lines may take, all of them."""
GUTTER = "  │ "
"""What a command's output is shown behind, live and in its preview."""
EXPANDED_RESULTS = 4
"""Finished commands whose preview left something out that the expand key shows in full
(the last ones: the expand key is for what just happened)."""


def _plain(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Styles:
    """The few styles the screen uses; all plain when styling is off (``NO_COLOR``)."""

    bold: Style = _plain
    dim: Style = _plain
    green: Style = _plain
    red: Style = _plain
    yellow: Style = _plain
    cyan: Style = _plain
    magenta: Style = _plain

    @staticmethod
    def of(term: Any) -> Styles:
        """blessed's styles, which are empty strings when it does no styling."""
        return Styles(
            term.bold, term.dim, term.green, term.red, term.yellow, term.cyan, term.magenta
        )


def diff_lines(
    diff: str, styles: Styles, shown: int | None = None, hint: str = "", width: int | None = None
) -> list[str]:
    """``diff`` as coloured lines: added green, removed red, hunks cyan, headers bold.

    With ``shown``, a longer diff keeps its head and its tail, and a line between them
    says how many lines are folded away and ``hint`` (where to see them all). With
    ``width``, so does a line longer than that, in the line itself (the end of a
    minified line is where a danger hides).
    """
    lines = [printable(line) for line in diff.removesuffix("\n").split("\n")] if diff else []
    if width is not None:
        lines = [_folded_line(line, width, hint) for line in lines]
    if shown is not None and len(lines) > shown + 1:  # a marker would take a line too
        head, tail = shown - shown // 3, shown // 3
        folded = len(lines) - head - tail
        marker = f"[… {folded:,} more lines of the diff{': ' + hint if hint else ''} …]"
        return [
            *(_diff_line(line, styles) for line in lines[:head]),
            styles.yellow(marker),
            *(_diff_line(line, styles) for line in lines[-tail:]),
        ]
    return [_diff_line(line, styles) for line in lines]


def _folded_line(line: str, width: int, hint: str) -> str:
    if len(line) <= width:
        return line
    head, tail = width - width // 4, width // 4
    folded = len(line) - head - tail
    marker = f"[… {folded:,} more characters on this line{': ' + hint if hint else ''} …]"
    return f"{line[:head]} {marker} {line[-tail:]}"


def _diff_line(line: str, s: Styles) -> str:
    if line.startswith(("+++ ", "--- ")):
        return s.bold(line)
    if line.startswith("@@"):
        return s.cyan(line)
    if line.startswith("+"):
        return s.green(line)
    if line.startswith("-"):
        return s.red(line)
    if line.startswith(("\\", "[")):  # no newline at the end; a line of treadle's own
        return s.dim(line)
    return line


def format_elapsed(seconds: float) -> str:
    """``4.2 s`` under a minute, ``3 m 05 s`` above."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} m {rest:02d} s"


def requests(count: int) -> str:
    return f"{count} request" if count == 1 else f"{count} requests"


@dataclass(slots=True)
class RunningTool:
    agent: str
    name: str
    summary: str
    started: float
    output: tuple[str, ...] = ()
    """Its last lines of output (a command's), newest last."""
    subagent: str = ""
    """The sub-agent an ``agent`` call runs, once it started."""
    asked_at: float | None = None
    """Since when the person is asked on the sub-agent's behalf: its clock stands."""

    def elapsed(self, now: float) -> float:
        return (now if self.asked_at is None else self.asked_at) - self.started


@dataclass
class TurnView:
    """The display's memory of the current turn."""

    styles: Styles = field(default_factory=Styles)
    started: float = 0.0
    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    activity: str = "starting"
    retry_at: float | None = None
    retry_error: str = ""
    running: dict[str, RunningTool] = field(default_factory=dict)
    plans: dict[str, tuple[PlanStep, ...]] = field(default_factory=dict)
    thinking: list[str] = field(default_factory=list)
    """The reasoning streaming now (the main agent's), shown as one live row."""
    thinking_tail: str = ""
    thinking_shown: int = 0
    """Characters of the reasoning streaming now that the expand key already showed."""
    collapsed: list[str] = field(default_factory=list)
    """Reasoning shown as one line, kept until the expand key shows it in full."""
    folded: dict[tuple[str, str], str] = field(default_factory=dict)
    """The last commands whose preview left lines out or cut them, by agent and call id:
    the line that names them, until the expand key shows what the model read in full."""
    results: dict[tuple[str, str], str] = field(default_factory=dict)
    """What the model read of those commands, as their results came."""
    approved_diffs: set[str] = field(default_factory=set)
    """Diffs the person saw with an approval question: not shown a second time."""
    width: int = 0
    """The screen's width when the lines of an event are made (0: not cut)."""
    background: int = 0
    """Background processes running now (issue 27): a count on the status line, kept
    from turn to turn as they are."""

    def begin(self, now: float) -> None:
        self.started = now
        self.requests = 0
        self.usage = Usage()
        self.activity = "starting"
        self.retry_at = None
        self.running.clear()
        self.plans.clear()

    def stopping(self) -> None:
        self.activity = "stopping…"
        self.retry_at = None

    # Reasoning ------------------------------------------------------------------------

    def think(self, text: str) -> None:
        """A piece of the main agent's reasoning: the live row shows how it ends."""
        self.thinking.append(text)
        self.thinking_tail = (self.thinking_tail + text)[-400:]
        self.activity = "thinking"

    def thought_lines(self, *, verbose: bool) -> list[str]:
        """The log's lines for the reasoning that just ended: one dim line saying how
        long it was (the expand key shows it all), or all of it with ``verbose``."""
        whole = "".join(self.thinking)
        shown, self.thinking_shown = self.thinking_shown, 0
        self.thinking.clear()
        self.thinking_tail = ""
        if shown:  # the expand key showed its beginning: the rest follows, in full
            return self._thought(whole[shown:], header=False)
        text = whole.strip()
        if not text:
            return []
        if verbose:
            return self._thought(text)
        self.collapsed.append(text)
        words = len(text.split())
        noun = "word" if words == 1 else "words"
        return [self.styles.dim(f"{THOUGHT} thought for {words:,} {noun} · {EXPAND_KEY} to expand")]

    def expanded_lines(self) -> list[str]:
        """The expand key: the reasoning shown collapsed so far, in full, and what the
        reasoning streaming now has said so far (the rest of it then follows in full
        when it ends, instead of its folded line); then the last commands' results
        whose preview left something out, in full, as the model read them. Each is
        shown once, then forgotten."""
        return self._expanded_reasoning() + self._expanded_results()

    def _expanded_results(self) -> list[str]:
        s = self.styles
        folded, self.folded = self.folded, {}
        results, self.results = self.results, {}
        room = max(1, self.width - 1 - cell_width(GUTTER)) if self.width else 0
        lines: list[str] = []
        for key, name in folded.items():
            text = results.get(key)
            if text is None:  # no result yet (it comes after the call's line)
                continue
            lines.append(s.dim("▸ ") + name + s.dim(" · in full, as the model read it"))
            for line in text.split("\n"):
                lines += [s.dim(GUTTER) + row for row in _rows_of(printable(line), room)]
        return lines

    def _expanded_reasoning(self) -> list[str]:
        texts, self.collapsed = self.collapsed, []
        lines = [line for text in texts for line in self._thought(text)]
        whole = "".join(self.thinking)
        if whole[self.thinking_shown :].strip():
            lines += self._thought(whole[self.thinking_shown :], header=not self.thinking_shown)
            self.thinking_shown = len(whole)
        return lines

    def _thought(self, text: str, *, header: bool = True) -> list[str]:
        dim = self.styles.dim
        body = [dim("  " + printable(line)) for line in text.strip("\n").splitlines()]
        return [dim(f"{THOUGHT} thinking"), *body] if header else body

    # Events ------------------------------------------------------------------------

    def lines_for(self, event: TurnEvent, now: float) -> list[str]:
        """The log lines an event adds (after updating what the live rows show): one
        function per kind of event, registered on :func:`view_lines`."""
        return view_lines(event, self, now)

    def link(self, subagent: str, caller: str) -> None:
        """The sub-agent started is run by its caller's ``agent`` call not linked yet."""
        for tool in reversed(self.running.values()):
            if tool.name == "agent" and tool.agent == caller and not tool.subagent:
                tool.subagent = subagent
                return

    def person_asked(self, agent: str, now: float) -> None:
        """The person is asked on ``agent``'s behalf: the calls that run it (and the
        agents above it) stop their clocks until :meth:`person_answered`, as the
        sub-agents' own clocks do (their time on the person is not theirs)."""
        for tool in self.running.values():
            runs_it = agent == tool.subagent or agent.startswith(tool.subagent + "/")
            if tool.subagent and runs_it and tool.asked_at is None:
                tool.asked_at = now

    def person_answered(self, now: float) -> None:
        for tool in self.running.values():
            if tool.asked_at is not None:
                tool.started += now - tool.asked_at
                tool.asked_at = None

    def asking_agent(self) -> str:
        """The agent whose ``ask`` call is running (the one asking a question now)."""
        return next((tool.agent for tool in self.running.values() if tool.name == "ask"), "")

    def _plan_lines(self, event: PlanUpdated) -> list[str]:
        s = self.styles
        tag = s.magenta(f"[{event.agent}] ") if event.agent else ""
        before = self.plans.get(event.agent)
        self.plans[event.agent] = event.steps
        explanation = [tag + s.dim(one_line(event.explanation, 500))] if event.explanation else []
        if before is None or [b.step for b in before] != [a.step for a in event.steps]:
            done = sum(step.status == "completed" for step in event.steps)
            header = tag + s.bold("Plan") + s.dim(f" · {done} of {len(event.steps)} done")
            return [header, *explanation, *(self._step(step, "  ") for step in event.steps)]
        changed = [
            self._step(after, tag)
            for previous, after in zip(before, event.steps, strict=True)
            if after.status != previous.status
        ]
        return [*explanation, *changed]

    def _step(self, step: PlanStep, indent: str) -> str:
        s = self.styles
        text = one_line(step.step, 500)
        mark = PLAN_MARKS[step.status]
        match step.status:
            case "completed":
                return indent + s.green(mark) + " " + s.dim(text)
            case "in_progress":
                return indent + s.yellow(mark) + " " + s.bold(text)
        return indent + s.dim(mark + " " + text)

    def _tool_lines(self, event: ToolFinished) -> list[str]:
        s = self.styles
        tool = self.running.pop(event.call.id, None)
        if event.call.name in QUIET_TOOLS and event.mark is ToolMark.DONE:
            return []  # a sub-agent stopped at its deadline keeps its ■ line
        # A sub-agent's calls stay too, under its name: what its commands printed, what
        # its writes changed.
        tag = f"[{one_line(event.agent, 64)}] " if event.agent else ""
        summary = tool.summary if tool is not None else event.call.arguments
        paint = {ToolMark.FAILED: s.red, ToolMark.STOPPED: s.yellow, ToolMark.DONE: s.green}
        mark = paint[event.mark](event.mark.value)
        status = one_line(event.status, 200)
        if event.duration >= 1.0 and not status.endswith(" s"):
            status += f" · {format_elapsed(event.duration)}"
        name = one_line(event.call.name, 64)
        # A failure says so in its colour: a non-zero exit, a signal, a deadline, a stop.
        shown_status = s.dim("· ") + s.red(status) if event.is_error else s.dim("· " + status)
        summary = one_line(summary, 200)
        if self.width:  # the command gives way, so that how it ended stays on its row
            room = self.width - 1 - cell_width(f"✓ {tag}{name}  · {status}")
            summary = fit(summary, max(10, room))
        shown_tag = s.magenta(tag) if tag else ""
        line = f"{mark} {shown_tag}{s.bold(name)} {summary} {shown_status}"
        output = self.output_lines(event.preview)
        if output and self._folds(event.preview):
            self.folded[(event.agent, event.call.id)] = f"{shown_tag}{s.bold(name)} {summary}"
            while len(self.folded) > EXPANDED_RESULTS:
                del self.folded[next(iter(self.folded))]
        if event.diff in self.approved_diffs:  # it is on the screen, with the question
            self.approved_diffs.discard(event.diff)
            return [line, *output]
        change = diff_lines(event.diff, s, DIFF_SHOWN_LINES, "treadle diff shows every change")
        return [line, *output, *("  " + row for row in change)]

    def output_lines(self, preview: str) -> list[str]:
        """A finished command's preview, behind its gutter, each line cut to the width."""
        if not preview:
            return []
        s = self.styles
        room = max(1, self.width - 1 - cell_width(GUTTER)) if self.width else 0
        rows = []
        for line in preview.split("\n"):
            text = printable(line)
            shown = fit(text, room) if room else text
            if _is_more_lines(text):
                shown = s.dim(shown + f" · {EXPAND_KEY} to expand")
            rows.append(s.dim(GUTTER) + shown)
        return rows

    def _folds(self, preview: str) -> bool:
        """Whether the preview leaves out lines, or the width cuts one of them."""
        room = max(1, self.width - 1 - cell_width(GUTTER)) if self.width else 0
        return any(
            _is_more_lines(line) or (room and cell_width(printable(line)) > room)
            for line in preview.split("\n")
        )

    def ending_lines(self, event: TurnEnded, resume_hint: str) -> list[str]:
        """The turn's totals, then its outcome line (and how to resume a paused turn)."""
        s = self.styles
        outcome = event.outcome
        unfinished = [
            f"{s.red('✗')} {s.bold(tool.name)} {one_line(tool.summary, 200)} "
            + s.dim("· " + ("interrupted" if outcome.kind is OutcomeKind.PAUSED else "unfinished"))
            for tool in self.running.values()
            if not tool.agent
        ]
        self.running.clear()
        spent = token_counts(event.usage, ",") + cost_text(event.cost)
        totals = f"{requests(event.requests)} · {spent} · {format_elapsed(event.elapsed)}"
        colour = {
            OutcomeKind.FINISHED: s.green,
            OutcomeKind.PAUSED: s.yellow,
            OutcomeKind.WAITING: s.yellow,
        }.get(outcome.kind, s.red)
        line = s.bold(colour(one_line(outcome.screen_line, 2_000)))
        if outcome.resumable and resume_hint:
            line += s.dim(resume_hint)
        return [*unfinished, s.dim(totals), line]

    # The live rows -------------------------------------------------------------------

    def live_rows(self, now: float, width: int, height: int = 10_000) -> list[str]:
        """The running tools (a command's last lines under it), then the status line,
        each cut to ``width - 1`` columns; the commands' lines leave room in ``height``
        for the rest of the block."""
        s = self.styles
        frame = SPINNER[int(now * 10) % len(SPINNER)]
        rows: list[str] = []
        # The ask tool's question is on the screen with its prompt: no row of its own.
        tools = [tool for tool in self.running.values() if tool.name != "ask"]
        listed = tools[:MAX_TOOL_ROWS]
        others = len(listed) + (len(tools) > MAX_TOOL_ROWS) + bool(self.thinking_tail) + 1
        # What is left for output once the block has its rows and a prompt its own.
        output_room = max(0, min(OUTPUT_ROWS, height - others - 4))
        room_each = min(LIVE_LINES, output_room // max(1, sum(bool(t.output) for t in listed)))
        gutter = s.dim(GUTTER)
        for tool in listed:
            tag = f"[{tool.agent}] " if tool.agent else ""
            head = f"{frame} {tag}{tool.name} "
            tail = f" · {format_elapsed(tool.elapsed(now))}"
            room = width - 1 - cell_width(head) - cell_width(tail)
            summary = fit(one_line(tool.summary, 1_000), max(0, room))
            tag = s.magenta(tag) if tag else ""
            rows.append(s.cyan(frame) + " " + tag + s.bold(tool.name) + " " + summary + s.dim(tail))
            if room_each and tool.output:
                line_room = max(1, width - 1 - cell_width(GUTTER))
                for line in tool.output[-room_each:]:
                    rows.append(gutter + s.dim(fit(printable(line), line_room)))
        if len(tools) > MAX_TOOL_ROWS:
            rows.append(s.dim(f"  … and {len(tools) - MAX_TOOL_ROWS} more"))
        if self.thinking_tail:
            last = one_line(self.thinking_tail.rstrip().rsplit("\n", 1)[-1], 400)
            room = width - 1 - cell_width(THOUGHT) - 2
            shown, _ = fit_tail(last, max(0, room - 1))
            rows.append(s.dim(f"{THOUGHT} {'…' if shown != last else ''}{shown}"))
        activity = self.activity
        if self.retry_at is not None:
            left = math.ceil(max(0.0, self.retry_at - now))  # never "in 0 s" while waiting
            activity = f"retrying in {left} s — {self.retry_error}"
        background = status_part(self.background)
        counts = (
            *([background] if background else []),
            requests(self.requests),
            f"{self.usage.input_tokens:,} in / {self.usage.output_tokens:,} out tokens",
        )
        elapsed = format_elapsed(now - self.started)
        rows.append(s.dim(status_line(activity, counts, elapsed, width - 1)))
        return rows


# Events ----------------------------------------------------------------------------


@functools.singledispatch
def view_lines(event: TurnEvent, view: TurnView, now: float) -> list[str]:
    """The log lines ``event`` adds to ``view``'s screen, after it updated what the live
    rows show; a kind registered with none adds no line and changes nothing."""
    return []


@view_lines.register(TurnStarted)
def _task(event: TurnStarted, view: TurnView, now: float) -> list[str]:
    if event.agent:
        return []
    return [view.styles.bold("Task: ") + one_line(shown_task(event.task), 10_000)]


@view_lines.register(RequestSent)
def _request_sent(event: RequestSent, view: TurnView, now: float) -> list[str]:
    if not event.agent:
        view.requests += 1
        view.retry_at = None
        view.activity = (
            "continuing the answer"
            if event.continuation
            else f"asking the model again (attempt {event.attempt})"
            if event.attempt > 1
            else "waiting for the model"
        )
    return []


@view_lines.register(AnswerDelta)
def _answer(event: AnswerDelta, view: TurnView, now: float) -> list[str]:
    if not event.agent:
        view.activity = "writing the answer"
    return []


@view_lines.register(ResponseReceived)
def _response(event: ResponseReceived, view: TurnView, now: float) -> list[str]:
    if not event.agent:
        view.activity = "running tools" if event.tool_calls else "finishing"
    return []


@view_lines.register(UsageUpdated)
def _usage(event: UsageUpdated, view: TurnView, now: float) -> list[str]:
    if not event.agent:
        view.usage = event.turn
        view.requests = max(view.requests, event.requests)
    return []


@view_lines.register(PlanUpdated)
def _plan(event: PlanUpdated, view: TurnView, now: float) -> list[str]:
    return view._plan_lines(event)


@view_lines.register(ToolStarted)
def _tool_started(event: ToolStarted, view: TurnView, now: float) -> list[str]:
    name = one_line(event.call.name, 64)
    view.running[event.call.id] = RunningTool(event.agent, name, event.summary, now)
    if not event.agent:
        view.activity = f"running {name}"
    return []


@view_lines.register(BackgroundCount)
def _background(event: BackgroundCount, view: TurnView, now: float) -> list[str]:
    view.background = event.running
    return []


@view_lines.register(ToolOutput)
def _tool_output(event: ToolOutput, view: TurnView, now: float) -> list[str]:
    tool = view.running.get(event.call_id)
    if tool is not None and tool.agent == event.agent:
        tool.output = event.lines
    return []


@view_lines.register(ToolFinished)
def _tool_finished(event: ToolFinished, view: TurnView, now: float) -> list[str]:
    return view._tool_lines(event)


@view_lines.register(MessageAdded)
def _message(event: MessageAdded, view: TurnView, now: float) -> list[str]:
    message = event.message
    if message.role == "tool":
        key = (event.agent, message.tool_call_id or "")
        if key in view.folded:
            view.results[key] = message.text
    return []


@view_lines.register(RetryScheduled)
def _retry(event: RetryScheduled, view: TurnView, now: float) -> list[str]:
    yellow = view.styles.yellow
    if event.agent:
        return [yellow(line) for line in describe_event(event)]
    view.retry_at = now + event.pause
    view.retry_error = one_line(event.error, 80)
    return [yellow("↻ " + describe_event(event)[0])]


@view_lines.register(CompactionStarted)
def _compacting(event: CompactionStarted, view: TurnView, now: float) -> list[str]:
    if not event.agent:
        view.activity = "compacting the conversation"
    return []


# What shows as its plain lines (describe_event), in a colour.


@view_lines.register(ContinuationRequested)
@view_lines.register(Notice)
@view_lines.register(WindowFilled)
@view_lines.register(ContextWindowKnown)
def _warning(
    event: ContinuationRequested | Notice | WindowFilled | ContextWindowKnown,
    view: TurnView,
    now: float,
) -> list[str]:
    return [view.styles.yellow(line) for line in describe_event(event)]


@view_lines.register(SubAgentStarted)
def _sub_agent_started(event: SubAgentStarted, view: TurnView, now: float) -> list[str]:
    view.link(event.name, event.agent)  # the caller's agent call runs it: its clock
    return [view.styles.magenta(line) for line in describe_event(event)]


@view_lines.register(SubAgentFinished)
def _sub_agent(event: SubAgentFinished, view: TurnView, now: float) -> list[str]:
    return [view.styles.magenta(line) for line in describe_event(event)]


@view_lines.register(SubAgentProgress)
@view_lines.register(ContextPruned)
@view_lines.register(ContextCompacted)
def _aside(
    event: SubAgentProgress | ContextPruned | ContextCompacted, view: TurnView, now: float
) -> list[str]:
    return [view.styles.dim(line) for line in describe_event(event)]


def _is_more_lines(line: str) -> bool:
    return line.startswith("… ") and line.endswith((" more line", " more lines"))


def _rows_of(line: str, room: int) -> list[str]:
    """``line`` in rows of ``room`` columns (0: one row), broken where it reaches it."""
    if not room or cell_width(line) <= room:
        return [line]
    rows: list[str] = []
    while line:
        row, _ = fit_head(line, room)
        rows.append(row)
        line = line[len(row) :]
    return rows


def status_line(activity: str, counts: Sequence[str], elapsed: str, width: int) -> str:
    """The status line in ``width`` columns. It gives up its parts in the order a person
    needs them least: the counts (the last first), then the time; what is happening and
    ``Esc to stop`` stay, the activity cut to fit if it must be.

    >>> status_line("running bash", ["1 request", "9 in / 2 out tokens"], "3.0 s", 40)
    'running bash · 3.0 s · Esc to stop'
    """
    hint = "Esc to stop"
    kept = list(counts)
    while True:
        line = " · ".join([activity, *kept, elapsed, hint])
        if cell_width(line) <= width:
            return line
        if not kept:
            break
        kept.pop()
    line = f"{activity} · {hint}"
    if cell_width(line) <= width:
        return line
    return (
        fit(activity, width - cell_width(hint) - 3) + f" · {hint}"
        if width > 20
        else fit(activity, width)
    )


def resumed_lines(session_id: str, view: ResumedView, styles: Styles, width: int) -> list[str]:
    """A resumed session's opening: ``resumed <id>``, its task, the exchanges the view
    keeps (what the person said after ``›``, answers and calls indented, how each
    turn ended dimmed), each one row cut to ``width``."""
    s = styles
    rows = [s.bold(fit(f"resumed {printable(session_id)}", width))]
    if view.task:
        rows.append(s.bold("Task: ") + fit(view.task, max(1, width - 6)))
    for line in view.lines:
        match line.kind:
            case "said":
                rows.append(s.bold(s.cyan("› ")) + fit(line.text, max(1, width - 2)))
            case "answer":
                rows.append("  " + fit(line.text, max(1, width - 2)))
            case "call":
                rows.append(s.dim("  ▸ " + fit(line.text, max(1, width - 4))))
            case "ended" | "folded":
                rows.append(s.dim("  " + fit(line.text, max(1, width - 2))))
    return rows
