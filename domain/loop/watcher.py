"""One sub-agent at work, driven by its watch: the loop's half of
:mod:`treadle.domain.rules.watching`.

The watcher runs the sub-agent, feeds the watch its events (the clock, the end of the
work or of the report, the caller's stop) and carries out what the watch says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from treadle.domain.loop.prompt import REPORT_REQUEST
from treadle.domain.loop.response import Answer
from treadle.domain.loop.stop import StopSignal
from treadle.domain.rules.history import History
from treadle.domain.rules.watching import (
    AskForReport,
    CallerStopped,
    Finish,
    PersonAnswered,
    PersonAsked,
    ReportEnded,
    ReportProgress,
    StopReport,
    StopWork,
    Tick,
    Watch,
    WatchEvent,
    WorkEnded,
    start_watch,
    step,
)
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import (
    SubAgentEnding,
    SubAgentFinished,
    SubAgentProgress,
    SubAgentStarted,
)
from treadle.domain.values.outcome import SubAgentEnded, TurnEnding, TurnOutcome
from treadle.domain.values.tools import EndTurn, ToolEnding, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext


class SubAgent(Protocol):
    """What a sub-agent is to the one watching it (an :class:`~.turn.Agent`)."""

    @property
    def name(self) -> str: ...

    @property
    def history(self) -> History: ...

    @property
    def usage(self) -> Usage: ...

    @property
    def requests(self) -> int: ...

    @property
    def doing(self) -> str: ...

    person_listener: Callable[[bool], None] | None

    async def run_turn(self, task: str, stop: StopSignal) -> TurnOutcome: ...

    async def answer_without_tools(self, task: str, stop: StopSignal) -> Answer | TurnEnding: ...


class SubAgentWatcher:
    """One sub-agent at work, driven by its :class:`~treadle.domain.rules.watching.Watch`."""

    def __init__(
        self,
        child: SubAgent,
        task: str,
        context: ToolContext,
        *,
        check_interval: float,
        deadline: float,
        grace: float,
        add_usage: Callable[[Usage], None],
    ) -> None:
        self.child, self.task, self.context = child, task, context
        self.add_usage = add_usage
        self.check_interval, self.deadline = check_interval, deadline
        self.clock = context.clock
        self.started = self.clock.now()
        self.watch: Watch = start_watch(
            now=self.started, check_interval=check_interval, deadline=deadline, grace=grace
        )
        self._work_stop = StopSignal()
        self._report_stop = StopSignal()
        self._work: asyncio.Future[TurnOutcome] | None = None
        self._report: asyncio.Future[Answer | TurnEnding] | None = None
        self._caller: asyncio.Future[None] | None = None
        self._report_text = ""
        self._person: list[bool] = []
        self._person_changed = asyncio.Event()
        child.person_listener = self._waiting_on_person

    def _waiting_on_person(self, waiting: bool) -> None:
        """The sub-agent waits for the person, or stops waiting: its watch hears it, and
        so does whoever watches its caller (the person is waited on all the way up)."""
        self._person.append(waiting)
        self._person_changed.set()
        self.context.on_person(waiting)

    async def run(self) -> ToolOutcome:
        child, context = self.child, self.context
        context.emit(
            SubAgentStarted(
                child.name, self.task, self.check_interval, self.deadline, context.agent
            )
        )
        self._work = asyncio.ensure_future(child.run_turn(self.task, self._work_stop))
        self._caller = asyncio.ensure_future(context.until_stopped())
        finish: Finish | None = None
        ending, line = SubAgentEnding.STOPPED, ""
        try:
            while finish is None:
                self.watch, actions = step(self.watch, await self._next_event())
                for action in actions:
                    match action:
                        case ReportProgress():
                            context.emit(
                                SubAgentProgress(
                                    child.name,
                                    child.doing,
                                    child.requests,
                                    child.usage,
                                    self.watch.worked(self.clock.now(), self.started),
                                    context.agent,
                                )
                            )
                        case StopWork():
                            self._work_stop.set("deadline")
                        case AskForReport():
                            self._report = asyncio.ensure_future(
                                child.answer_without_tools(REPORT_REQUEST, self._report_stop)
                            )
                        case StopReport():
                            self._report_stop.set("deadline")
                        case Finish():
                            finish = action
            ending, line = finish.ending, self._line(finish)
            return self._result(finish)
        finally:
            await _cancel(self._work, self._report, self._caller)
            self.add_usage(child.usage)
            context.emit(
                SubAgentFinished(
                    child.name,
                    ending,
                    child.requests,
                    child.usage,
                    self.watch.worked(self.clock.now(), self.started),
                    context.agent,
                    line,
                )
            )

    async def _next_event(self) -> WatchEvent:
        """Wait for whatever comes first: the person asked or answered, the work's end,
        the report's, the caller's stop, or the next time the watch wakes."""
        if self._person:
            return self._person_event()
        pending: set[asyncio.Future[Any]] = {
            future for future in (self._work, self._report, self._caller) if future is not None
        }
        timer: asyncio.Future[None] | None = None
        wakes_at = self.watch.wakes_at
        if wakes_at != float("inf"):
            timer = asyncio.ensure_future(self.clock.sleep(max(0.0, wakes_at - self.clock.now())))
            pending.add(timer)
        person = asyncio.ensure_future(self._person_changed.wait())
        pending.add(person)
        try:
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in (timer, person):
                if future is not None and not future.done():
                    future.cancel()
        if self._person:
            return self._person_event()
        return self._event_of_what_ended()

    def _person_event(self) -> WatchEvent:
        waiting = self._person.pop(0)
        if not self._person:
            self._person_changed.clear()
        now = self.clock.now()
        return PersonAsked(now) if waiting else PersonAnswered(now)

    def _event_of_what_ended(self) -> WatchEvent:
        now = self.clock.now()
        if self._work is not None and self._work.done():
            outcome = self._work.result()
            self._work = None
            return WorkEnded(outcome, now)
        if self._report is not None and self._report.done():
            answer = self._report.result()
            self._report = None
            self._report_text = answer.text if isinstance(answer, Answer) else ""
            return ReportEnded(self._report_text)
        if self._caller is not None and self._caller.done():
            self._caller = None
            return CallerStopped()
        return Tick(now)

    def _line(self, finish: Finish) -> str:
        """The outcome's own line, for a sub-agent that failed or ended its caller."""
        if finish.ending in (SubAgentEnding.FAILED, SubAgentEnding.ENDS_CALLER):
            return finish.outcome.screen_line
        return ""

    def _result(self, finish: Finish) -> ToolOutcome:
        child = self.child
        match finish.ending:
            case SubAgentEnding.FINISHED:
                text = child.history.last_assistant_text() or "(the sub-agent answered nothing)"
                return ToolResult(text, status="finished")
            case SubAgentEnding.DEADLINE:
                report = self._report_text if finish.report == "report" else self._summary()
                text = (
                    f"The sub-agent was stopped at its deadline of {self.deadline:g} s. "
                    f"Its report:\n{report}"
                )
                return ToolResult(text, status="deadline", ending=ToolEnding.DEADLINE)
            case SubAgentEnding.STOPPED:
                text = f"The sub-agent was stopped by its caller. {self._summary()}"
                return ToolResult(text, True, "stopped", ending=ToolEnding.STOPPED)
        line = finish.outcome.screen_line
        text = f"The sub-agent ended without finishing ({line}). {self._summary()}"
        if finish.ending is SubAgentEnding.ENDS_CALLER:
            return EndTurn(SubAgentEnded(child.name, finish.outcome), text)
        return ToolResult(text, is_error=True, status=line)

    def _summary(self) -> str:
        """A report made from the record, when the sub-agent could not write one."""
        child = self.child
        said = child.history.last_assistant_text() or "nothing"
        return (
            f"{child.requests} requests, {child.usage.total} tokens. "
            f"It was {child.doing}. The last thing it said: {said}"
        )


async def _cancel(*futures: asyncio.Future[Any] | None) -> None:
    """Cancel what is still running and wait for its cleanup (a stopped turn's record)."""
    running = [future for future in futures if future is not None and not future.done()]
    for future in running:
        future.cancel()
    await asyncio.gather(*running, return_exceptions=True)
