"""Lifecycle hooks (issue 23): when they run, what they are told, what they decided —
what the turn needs of them, whether any is set or none. The table they are read into
and a command's ending are :mod:`treadle.domain.values.hook_table`'s, loaded only
where hooks are set.

These are the nouns; :mod:`treadle.domain.rules.hooks` reads a table, matches a group
and decides what a command's ending means; :mod:`treadle.adapters.workflows.hooks`
runs the commands; :mod:`treadle.domain.loop.hooks` calls them from the turn.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


class HookEvent(enum.StrEnum):
    """When a hook runs; the value is Claude Code's name of the event."""

    SESSION_START = "SessionStart"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    PRE_COMPACT = "PreCompact"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"
    NOTIFICATION = "Notification"


DEFAULT_HOOK_TIMEOUT = 60.0
"""A hook's deadline in seconds when its ``timeout`` is not given (Claude Code's)."""

AttentionKind = Literal["turn_ended", "permission_prompt", "question"]
"""Why the person is wanted at the terminal: a turn ended, a call waits for a yes, the
model asked a question. The Notification hook's ``notification_type``."""

SessionSource = Literal["startup", "resume"]
"""How a session began, as SessionStart's ``source`` (and its matcher) says it."""

CompactTrigger = Literal["auto", "manual"]


@dataclass(frozen=True, slots=True)
class HookInput:
    """What happened, as a hook is told it (the session's fields are the adapter's).

    ``tool_name`` and ``tool_input`` are treadle's; the hook reads Claude Code's
    names (:func:`treadle.domain.rules.hooks.hook_payload`). ``subject`` is what a
    matcher is tested against: the tool's name, a session's source, a compaction's
    trigger, a notification's type."""

    event: HookEvent
    tool_name: str = ""
    tool_input: Mapping[str, object] = field(default_factory=dict)
    tool_response: Mapping[str, object] | None = None
    prompt: str = ""
    stop_hook_active: bool = False
    source: str = ""
    trigger: str = ""
    message: str = ""
    notification_type: str = ""
    agent: str = ""

    @property
    def subject(self) -> str:
        match self.event:
            case HookEvent.PRE_TOOL_USE | HookEvent.POST_TOOL_USE:
                return self.tool_name
            case HookEvent.SESSION_START:
                return self.source
            case HookEvent.PRE_COMPACT:
                return self.trigger
            case HookEvent.NOTIFICATION:
                return self.notification_type
        return ""


@dataclass(frozen=True, slots=True)
class HookVerdict:
    """What the hooks of one event said, all together.

    ``blocked``: one refused (the call, the prompt, the turn's end); ``reason`` is
    what it said, for the model (or the person). ``context`` is text the hooks add to
    the conversation (SessionStart, UserPromptSubmit). ``problems`` are one line each:
    a hook that failed, hung, or wrote what cannot be read. ``ran`` counts the
    commands run."""

    blocked: bool = False
    reason: str = ""
    context: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    ran: int = 0
    allowed: bool = False
    """A PreToolUse hook said yes for the person (``permissionDecision: allow``): the
    call needs no one's yes. A refusal from another hook still wins."""


NO_VERDICT = HookVerdict()
