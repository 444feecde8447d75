"""A turn's hooks and notifications (issue 23): where the loop tells the ``Hooks``
port what happened, and what it does with what they decided.

The agent calls one method per moment; each does nothing, at no cost, when no hook
is set for it. A hook's problem (it failed, hung, wrote nonsense) is one notice and
never the turn's end::

    hooks = TurnHooks(ports.hooks, ports.notifier, agent.emit)
    verdict = await hooks.before_tool("bash", {"command": "rm -rf /"})
    verdict.blocked, verdict.reason     # True, "rm is not allowed here"
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from treadle.domain.rules.hook_turns import stop_feedback, stop_goes_on
from treadle.domain.values.events import Notice, TurnEvent
from treadle.domain.values.hooks import (
    NO_VERDICT,
    AttentionKind,
    CompactTrigger,
    HookEvent,
    HookInput,
    HookVerdict,
    SessionSource,
)
from treadle.domain.values.tools import ToolResult
from treadle.ports.hooks import Hooks
from treadle.ports.notify import Notifier

log = logging.getLogger(__name__)

SETTLE_TIMEOUT = 5.0
"""Seconds a session's end waits for its last notifications."""
REASON_SHOWN = 300
"""The most of a hook's reason a notice shows (the model reads all of it)."""


class TurnHooks:
    """The hooks of one agent: ``agent`` names it ("" : the main one)."""

    def __init__(
        self,
        hooks: Hooks | None,
        notifier: Notifier | None,
        emit: Callable[[TurnEvent], None],
        agent: str = "",
    ) -> None:
        self.hooks = hooks
        self.notifier = notifier
        self.emit = emit
        self.agent = agent
        self.stop_continued = 0
        """How often Stop hooks sent the current turn on."""
        self.session_started = False
        self._background: set[asyncio.Future[HookVerdict]] = set()

    async def _fire(self, happened: HookInput, *, said: bool = True) -> HookVerdict:
        hooks = self.hooks
        if hooks is None or not hooks.wants(happened.event, happened.subject):
            return NO_VERDICT
        verdict = await hooks.fire(happened)
        for problem in verdict.problems:
            self.emit(Notice("hook_failed", problem, self.agent))
        if verdict.blocked and said:
            reason = " ".join(verdict.reason.split())
            if len(reason) > REASON_SHOWN:
                reason = reason[: REASON_SHOWN - 1] + "…"
            subject = f" {happened.subject}" if happened.subject else ""
            self.emit(
                Notice("hook_refused", f"{happened.event.value}{subject}: {reason}", self.agent)
            )
        return verdict

    # The moments of a turn -------------------------------------------------------------

    async def session_start(self, source: SessionSource) -> tuple[str, ...]:
        """Once a session, as its first turn starts: what the hooks add to the context."""
        if self.session_started:
            return ()
        self.session_started = True
        verdict = await self._fire(HookInput(HookEvent.SESSION_START, source=source))
        return verdict.context

    async def prompt(self, prompt: str) -> HookVerdict:
        """A person's prompt, before it joins the conversation: refused, or with context."""
        return await self._fire(HookInput(HookEvent.USER_PROMPT_SUBMIT, prompt=prompt))

    async def before_tool(self, tool: str, arguments: Mapping[str, object]) -> HookVerdict:
        """Before a call runs (and before anyone is asked for it): refused (the reason
        is what the model reads), allowed without asking, or neither."""
        return await self._fire(
            HookInput(HookEvent.PRE_TOOL_USE, tool, arguments, agent=self.agent)
        )

    async def after_tool(
        self, tool: str, arguments: Mapping[str, object], result: ToolResult
    ) -> ToolResult:
        """After a call ran: the result, with what a refusing hook says added to it."""
        if self.hooks is None or not self.hooks.wants(HookEvent.POST_TOOL_USE, tool):
            return result
        response = {"output": result.text, "is_error": result.is_error, "status": result.status}
        verdict = await self._fire(
            HookInput(HookEvent.POST_TOOL_USE, tool, arguments, response, agent=self.agent)
        )
        if not verdict.blocked:
            return result
        said = f"{result.text}\n\nA PostToolUse hook says: {verdict.reason}"
        return ToolResult(
            said,
            result.is_error,
            result.status,
            result.diff,
            result.preview,
            result.interrupted,
            result.ending,
        )

    async def at_stop(self) -> str | None:
        """The turn is about to end: the message that sends it on, when a Stop hook
        refuses and has not done so already this turn (``stop_hook_active``)."""
        event = HookEvent.SUBAGENT_STOP if self.agent else HookEvent.STOP
        active = self.stop_continued > 0
        happened = HookInput(event, stop_hook_active=active, agent=self.agent)
        verdict = await self._fire(happened, said=not active)
        if not stop_goes_on(verdict, self.stop_continued):
            if verdict.blocked:
                self.emit(
                    Notice(
                        "hook_refused",
                        f"{event.value}: refused again; the turn ends (a Stop hook sends a "
                        "turn on once)",
                        self.agent,
                    )
                )
            return None
        self.stop_continued += 1
        return stop_feedback(verdict.reason)

    def turn_starts(self) -> None:
        self.stop_continued = 0

    async def before_compact(self, trigger: CompactTrigger = "auto") -> None:
        await self._fire(HookInput(HookEvent.PRE_COMPACT, trigger=trigger, agent=self.agent))

    def attention(self, kind: AttentionKind, message: str, last_answer: str = "") -> None:
        """The person is wanted: ring (or run their ``notify`` command), and fire the
        Notification hooks without waiting for them (a question is not held back by
        a slow hook; Esc and the session's end stop them with everything else)."""
        if self.notifier is not None:
            try:
                self.notifier.notify(kind, message, last_answer)
            except Exception:  # a bell is never worth a turn
                log.exception("the notification of %s failed", kind)
        hooks = self.hooks
        if hooks is None or not hooks.wants(HookEvent.NOTIFICATION, kind):
            return
        happened = HookInput(
            HookEvent.NOTIFICATION, message=message, notification_type=kind, agent=self.agent
        )
        task = asyncio.ensure_future(self._fire(happened))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def settle(self, timeout: float = SETTLE_TIMEOUT) -> None:
        """Wait, ``timeout`` seconds at most, for the Notification hooks and the
        ``notify`` command still running: the session ends (what still runs then is
        stopped with everything else)."""
        if self._background:
            await asyncio.wait(list(self._background), timeout=timeout)
        if self.notifier is not None:
            await self.notifier.settle(timeout)
