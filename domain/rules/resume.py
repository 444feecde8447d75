"""Rebuilding a conversation from its recorded events, to continue a session.

The main agent's ``MessageAdded`` events, in order, are the conversation; a
``ContextCompacted`` replaces it with the compacted one, and a ``ContextPruned`` puts
its stubs in place of old results. A session cut short (a kill, a crash) may end
inside an answer or while tools ran: the answer shown so far is kept as an interrupted
message, and every call left without a result gets the synthetic "interrupted" result,
so the next request is valid. Cut during a compaction, it goes on from the
conversation as it was before, and compacts again if it must.

Example::

    history = rebuild_history(read_transcript(path))
    agent = Agent(ports, settings, history=history)
    await agent.run_turn(RESUME_MESSAGE)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from treadle.domain.rules.context_window import ContextState, fold
from treadle.domain.rules.history import History, close_unanswered
from treadle.domain.rules.pruning import with_stubs
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.events import (
    AnswerDelta,
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    MessageAdded,
    RequestSent,
    ResponseReceived,
    SubAgentStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.model import CUT_STOPS

RESUME_MESSAGE = "Continue."
"""The next user message when a session is resumed without one."""


def rebuild_history(events: Iterable[TurnEvent], agent: str = "") -> History:
    """The conversation of ``agent`` (the main one by default), ready for its next request."""
    recorded, cut = _recorded_conversation(events, agent)
    history = History(recorded + cut)
    close_unanswered(history)
    return history


def repaired_messages(events: Iterable[TurnEvent], agent: str = "") -> list[Message]:
    """What :func:`rebuild_history` adds to the recorded messages (a cut answer, results).

    A session that continues records these first, so its transcript stays complete.
    """
    events = list(events)
    recorded, _ = _recorded_conversation(events, agent)
    return list(rebuild_history(events, agent).messages[len(recorded) :])


def rebuild_context(events: Iterable[TurnEvent], history: History, agent: str = "") -> ContextState:
    """What the accounting of ``agent`` knew at the end of ``events`` (the server's last
    count of a prompt, the last compaction), for the conversation rebuilt as ``history``."""
    state = ContextState()
    for event in events:
        if event.agent == agent:
            state = fold(state, event)
    return replace(state, messages=len(history), pending=None, compacting=False)


def subagents_started(events: Iterable[TurnEvent], agent: str = "") -> int:
    """The highest number among the sub-agents ``agent`` started (``agent-3``: 3).

    A continued session numbers its next one after it, as one process does from turn
    to turn: names stay unique in the transcript, which tells conversations apart by
    them (and a replay, one process, numbers them on).
    """
    prefix = f"{agent}/agent-" if agent else "agent-"
    highest = 0
    for event in events:
        if isinstance(event, SubAgentStarted) and event.agent == agent:
            number = event.name.removeprefix(prefix)
            if number != event.name and number.isascii() and number.isdigit() and len(number) < 10:
                highest = max(highest, int(number))
    return highest


def _recorded_conversation(
    events: Iterable[TurnEvent], agent: str
) -> tuple[list[Message], list[Message]]:
    """The conversation as recorded, and the answer a cut left on the screen (if any)."""
    messages: list[Message] = []
    shown = ""  # answer text on screen that has not become a message yet
    calls: tuple[ToolCall, ...] = ()
    compacting = False  # the requests of a compaction are not the conversation's
    for event in events:
        if event.agent != agent:
            continue
        match event:
            case MessageAdded(message=message):
                messages.append(message)
                shown, calls = "", ()
            case ContextCompacted(messages=compacted):
                messages, compacting = list(compacted), False
            case ContextPruned(positions=positions, results=stubs):
                messages = with_stubs(messages, positions, stubs)
            case CompactionStarted():
                compacting = True
            case RequestSent() | ResponseReceived() if compacting:
                pass
            case RequestSent(continuation=continuation):
                if not continuation:
                    shown = ""
                calls = ()
            case AnswerDelta(text=text):
                shown += text
            case ResponseReceived(tool_calls=tool_calls, stop_reason=stop_reason):
                # Calls of an answer cut by its budget never run; the others were asked for.
                calls = () if stop_reason in CUT_STOPS else tool_calls
            case TurnStarted() | TurnEnded():
                shown, calls, compacting = "", (), False
    cut = [Message.assistant(shown, calls, interrupted=True)] if shown or calls else []
    return messages, cut
