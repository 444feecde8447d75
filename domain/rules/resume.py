"""Rebuilding a conversation from its recorded events, to continue a session.

The main agent's ``MessageAdded`` events, in order, are the conversation. A session
cut short (a kill, a crash) may end inside an answer or while tools ran: the answer
shown so far is kept as an interrupted message, and every call left without a result
gets the synthetic "interrupted" result, so the next request is valid.

Example::

    history = rebuild_history(read_transcript(path))
    agent = Agent(ports, settings, history=history)
    await agent.run_turn(RESUME_MESSAGE)
"""

from __future__ import annotations

from collections.abc import Iterable

from treadle.domain.rules.history import History, close_unanswered
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.events import (
    AnswerDelta,
    MessageAdded,
    RequestSent,
    ResponseReceived,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)

RESUME_MESSAGE = "Continue."
"""The next user message when a session is resumed without one."""


def rebuild_history(events: Iterable[TurnEvent], agent: str = "") -> History:
    """The conversation of ``agent`` (the main one by default), ready for its next request."""
    history = History(_recorded_conversation(events, agent))
    close_unanswered(history)
    return history


def repaired_messages(events: Iterable[TurnEvent], agent: str = "") -> list[Message]:
    """What :func:`rebuild_history` adds to the recorded messages (a cut answer, results).

    A session that continues records these first, so its transcript stays complete.
    """
    events = list(events)
    recorded = sum(isinstance(e, MessageAdded) and e.agent == agent for e in events)
    return list(rebuild_history(events, agent).messages[recorded:])


def _recorded_conversation(events: Iterable[TurnEvent], agent: str) -> list[Message]:
    messages: list[Message] = []
    shown = ""  # answer text on screen that has not become a message yet
    calls: tuple[ToolCall, ...] = ()
    for event in events:
        if event.agent != agent:
            continue
        match event:
            case MessageAdded(message=message):
                messages.append(message)
                shown, calls = "", ()
            case RequestSent(continuation=continuation):
                if not continuation:
                    shown = ""
                calls = ()
            case AnswerDelta(text=text):
                shown += text
            case ResponseReceived(tool_calls=tool_calls, stop_reason=stop_reason):
                # Calls of an answer cut by its budget never run; the others were asked for.
                calls = () if stop_reason == "max_tokens" else tool_calls
            case TurnStarted() | TurnEnded():
                shown, calls = "", ()
    if shown or calls:
        messages.append(Message.assistant(shown, calls, interrupted=True))
    return messages
