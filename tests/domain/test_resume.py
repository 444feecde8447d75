"""domain/resume.py: the conversation rebuilt from recorded events (pure, no fakes)."""

from __future__ import annotations

import pytest

from treadle.domain.rules.history import INTERRUPTED_RESULT, History, is_sendable
from treadle.domain.rules.resume import rebuild_history, repaired_messages, subagents_started
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    MessageAdded,
    RequestSent,
    ResponseReceived,
    SubAgentStarted,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome

LS = ToolCall("c1", "bash", '{"command": "ls"}')
CAT = ToolCall("c2", "bash", '{"command": "cat x"}')
ASKED = Message.assistant("Looking.", (LS, CAT))


def sent(number: int = 1, *, continuation: bool = False, agent: str = "") -> RequestSent:
    return RequestSent(number, 1, 100, 1, "d", continuation, agent)


def received(
    text: str, calls: tuple[ToolCall, ...] = (), stop: str = "tool_use"
) -> ResponseReceived:
    return ResponseReceived(1, text, calls, Usage(), stop)  # type: ignore[arg-type]


START: list[TurnEvent] = [TurnStarted("task"), MessageAdded(Message.user("task")), sent()]


def test_a_finished_session_is_its_recorded_messages() -> None:
    events = [
        *START,
        AnswerDelta("Done."),
        received("Done.", stop="end_turn"),
        MessageAdded(Message.assistant("Done.")),
        TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(), 1, 1.0),
    ]
    history = rebuild_history(events)
    assert list(history.messages) == [Message.user("task"), Message.assistant("Done.")]
    assert repaired_messages(events) == []


def test_the_digest_is_the_one_the_live_history_had() -> None:
    live = History([Message.user("task"), ASKED, Message.tool("c1", "a"), Message.tool("c2", "b")])
    events = [MessageAdded(m) for m in live.messages]
    assert rebuild_history(events).digest == live.digest


def test_a_kill_during_the_stream_keeps_the_answer_shown_as_interrupted() -> None:
    events = [*START, AnswerDelta("I will "), AnswerDelta("look")]
    history = rebuild_history(events)
    assert history.messages[-1] == Message.assistant("I will look", interrupted=True)
    assert is_sendable(history.messages)


def test_a_kill_during_tools_answers_every_call_as_interrupted() -> None:
    events = [*START, AnswerDelta("Looking."), received("Looking.", (LS, CAT)), MessageAdded(ASKED)]
    history = rebuild_history(events)
    assert [m.tool_call_id for m in history.messages[-2:]] == ["c1", "c2"]
    assert all(m.text == INTERRUPTED_RESULT and m.interrupted for m in history.messages[-2:])
    assert is_sendable(history.messages)


def test_a_kill_between_the_response_and_its_message_keeps_the_calls_it_asked_for() -> None:
    events = [*START, AnswerDelta("Looking."), received("Looking.", (LS,))]
    history = rebuild_history(events)
    assert history.messages[1] == Message.assistant("Looking.", (LS,), interrupted=True)
    assert history.messages[2].tool_call_id == "c1"
    assert is_sendable(history.messages)


def test_calls_of_an_answer_cut_by_its_budget_are_dropped_and_its_text_kept() -> None:
    events = [
        *START,
        AnswerDelta("Part one, "),
        received("Part one, ", (LS,), stop="max_tokens"),
        sent(2, continuation=True),
        AnswerDelta("part two"),
    ]
    history = rebuild_history(events)
    assert history.messages[-1] == Message.assistant("Part one, part two", interrupted=True)


def test_a_failed_attempt_before_a_retry_leaves_nothing_behind() -> None:
    events = [*START, sent(2), AnswerDelta("Fresh")]
    assert rebuild_history(events).messages[-1].text == "Fresh"


@pytest.mark.parametrize(
    "ending", [TurnEnded(TurnOutcome(OutcomeKind.PAUSED), Usage(), 1, 1.0), TurnStarted("next")]
)
def test_text_is_not_carried_past_the_end_of_a_turn(ending: TurnEvent) -> None:
    events = [*START, AnswerDelta("stray"), ending]
    assert len(rebuild_history(events)) == 1


def test_sub_agent_events_are_not_the_main_conversation() -> None:
    events = [
        *START,
        MessageAdded(Message.user("sub task"), "agent-1"),
        AnswerDelta("sub text", "agent-1"),
    ]
    assert list(rebuild_history(events).messages) == [Message.user("task")]
    assert list(rebuild_history(events, "agent-1").messages) == [
        Message.user("sub task"),
        Message.assistant("sub text", interrupted=True),
    ]


def test_repairs_are_exactly_what_the_recording_lacks() -> None:
    events = [*START, AnswerDelta("Looking."), received("Looking.", (LS, CAT)), MessageAdded(ASKED)]
    repairs = repaired_messages(events)
    assert [m.tool_call_id for m in repairs] == ["c1", "c2"]
    # Recorded, the repairs make the transcript whole: rebuilding again adds nothing.
    assert repaired_messages(events + [MessageAdded(m) for m in repairs]) == []


def test_the_last_sub_agent_number_is_read_from_the_main_agent_s_starts() -> None:
    events = [
        SubAgentStarted("agent-1", "a", 30.0, 600.0),
        SubAgentStarted("agent-1/agent-7", "nested", 30.0, 600.0, agent="agent-1"),
        SubAgentStarted("agent-3", "b", 30.0, 600.0),
        SubAgentStarted("agent-" + "9" * 5000, "edited by hand", 30.0, 600.0),
        SubAgentStarted("agent-²", "edited by hand", 30.0, 600.0),
    ]
    assert subagents_started(events) == 3
    assert subagents_started(events, "agent-1") == 7
    assert subagents_started([]) == 0
