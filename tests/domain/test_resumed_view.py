"""What a resumed session shows before its prompt: the task and the last exchanges,
folded (plain values in, lines out)."""

from __future__ import annotations

import json

from treadle.domain.rules.resumed_view import ResumedView, Shown, call_line, resumed_view
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import MessageAdded, TurnEnded, TurnEvent, TurnStarted
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome


def bash(command: str) -> ToolCall:
    return ToolCall("c", "bash", json.dumps({"command": command}))


def turn(said: str, *replies: Message, kind: OutcomeKind = OutcomeKind.FINISHED) -> list[TurnEvent]:
    return [
        TurnStarted(said),
        MessageAdded(Message.user(said)),
        *(MessageAdded(reply) for reply in replies),
        TurnEnded(TurnOutcome(kind), Usage(), 1, 1.0),
    ]


def test_a_short_session_shows_its_task_once_then_what_came_back() -> None:
    events = turn(
        "fix the test",
        Message.assistant("Running it.", (bash("make test"),)),
        Message.tool("c", "ok"),
        Message.assistant("Fixed."),
    )
    assert resumed_view(events) == ResumedView(
        "fix the test",
        (
            Shown("answer", "Running it."),
            Shown("call", "bash make test"),
            Shown("answer", "Fixed."),
            Shown("ended", "Turn finished"),
        ),
    )


def test_only_the_last_three_exchanges_are_shown_and_the_earlier_ones_counted() -> None:
    events = [
        *turn("one", Message.assistant("1")),
        *turn("two", Message.assistant("2")),
        *turn("three", Message.assistant("3")),
        *turn("four", Message.assistant("4"), kind=OutcomeKind.PAUSED),
        *turn("five", Message.assistant("5")),
    ]
    view = resumed_view(events)
    assert view.task == "one"
    assert view.lines[0] == Shown("folded", "… 2 earlier exchanges")
    assert [line.text for line in view.lines if line.kind == "said"] == ["three", "four", "five"]
    assert Shown("ended", "Turn paused") in view.lines


def test_a_long_answer_is_folded_and_sub_agents_stay_out() -> None:
    answer = "\n".join(f"line {n}" for n in range(1, 8))
    events: list[TurnEvent] = [
        TurnStarted("task"),
        TurnStarted("sub-task", agent="agent-1"),
        MessageAdded(Message.assistant("from the sub-agent"), agent="agent-1"),
        MessageAdded(Message.assistant(answer)),
    ]
    view = resumed_view(events)
    assert [line.text for line in view.lines] == [
        "line 1",
        "line 2",
        "line 3",
        "line 4",
        "… 3 more lines",
    ]  # and a turn cut short (no end recorded) says nothing it does not know


def test_a_call_is_one_line_of_its_tool_and_first_text_argument() -> None:
    assert call_line(bash("make\n  test")) == "bash make test"
    assert call_line(ToolCall("c", "read_file", '{"limit": 3, "path": "a.py"}')) == "read_file a.py"
    assert call_line(ToolCall("c", "list", "not json")) == "list"


def test_nothing_recorded_shows_nothing() -> None:
    assert resumed_view([]) == ResumedView("")
