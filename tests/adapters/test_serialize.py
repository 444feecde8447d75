"""Every event survives the trip to a JSON record and back."""

from __future__ import annotations

import json

import pytest

from treadle.adapters.transcript.serialize import (
    EVENT_BY_NAME,
    event_to_record,
    old_sub_agent_ending,
    old_tool_ending,
    record_to_event,
)
from treadle.domain.values.conversation import Message, Reasoning, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    MessageAdded,
    PlanStep,
    PlanUpdated,
    ReasoningDelta,
    ResponseReceived,
    SubAgentEnding,
    SubAgentFinished,
    SubAgentProgress,
    ToolFinished,
    TurnEnded,
)
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome
from treadle.domain.values.tools import ToolEnding

CALL = ToolCall("c1", "bash", '{"command": "ls"}')
THOUGHT = Reasoning("thinking", "pondered", seal="sig", position=1)
EVENTS = [
    ReasoningDelta("pondering", "agent-1"),
    MessageAdded(Message.assistant("x", (CALL,), reasoning=(THOUGHT,))),
    ResponseReceived(4, "", (CALL,), Usage(9, 8, 7, 1, 5), "tool_use", (THOUGHT,)),
    TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(1, 1), 1, 1.0, cost=0.25),
    AnswerDelta("héllo", "agent-1"),
    MessageAdded(Message.assistant("x", (CALL,), interrupted=True)),
    MessageAdded(Message.tool("c1", "out", is_error=True)),
    ResponseReceived(3, "text", (CALL,), Usage(1, 2), "max_tokens"),
    PlanUpdated((PlanStep("a", "completed"), PlanStep("b")), "why"),
    ToolFinished(CALL, "exit 0 · 0.1 s", False, 0.1),
    ToolFinished(CALL, "declined by you", True, 0.0, ending=ToolEnding.REFUSED),
    SubAgentProgress("agent-1", "running bash: ls", 2, Usage(5, 6), 1.5),
    SubAgentFinished("agent-1", SubAgentEnding.DEADLINE, 2, Usage(5, 6), 1.5),
    SubAgentFinished("agent-1", SubAgentEnding.FAILED, 2, Usage(5, 6), 1.5, line="Turn failed: x"),
    TurnEnded(
        TurnOutcome(OutcomeKind.FAILED, "3", FailureKind("ResponseTruncated")), Usage(1, 1), 4, 2.0
    ),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_an_event_round_trips_through_json(event):
    record = json.loads(json.dumps(event_to_record(event)))
    assert record_to_event(record) == event


def test_records_name_their_type_in_snake_case():
    assert event_to_record(AnswerDelta("x"))["type"] == "answer_delta"
    assert "turn_ended" in EVENT_BY_NAME


@pytest.mark.parametrize(
    "record", [{"type": "nonsense"}, {"type": "answer_delta", "bogus": 1}, {"type": "answer_delta"}]
)
def test_a_bad_record_is_a_value_error(record):
    with pytest.raises(ValueError):
        record_to_event(record)


def test_fields_that_hold_nothing_are_left_out_and_read_back_as_nothing():
    record = event_to_record(MessageAdded(Message.user("hi")))
    assert "reasoning" not in record["message"]
    assert "cost" not in event_to_record(
        TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(), 0, 0)
    )
    old = {
        "type": "response_received",
        "number": 1,
        "text": "",
        "tool_calls": [],
        "usage": {"input_tokens": 3, "output_tokens": 4},
        "stop_reason": "end_turn",
    }
    event = record_to_event(old)  # a record written before usage had kinds
    assert isinstance(event, ResponseReceived)
    assert (event.usage, event.reasoning) == (Usage(3, 4), ())


# How a call ended, in records written before ``ending`` was --------------------------

OLD_LINES = [
    ("refused", True, ToolEnding.REFUSED),
    ("blocked", True, ToolEnding.BLOCKED),
    ("waiting for input", False, ToolEnding.WAITING),
    ("interrupted", True, ToolEnding.INTERRUPTED),
    ("deadline", False, ToolEnding.DEADLINE),
    ("stopped", True, ToolEnding.STOPPED),
    ("crashed", True, ToolEnding.CRASHED),
    ("finished", False, ToolEnding.FINISHED),
    ("exit 0 · 0.05 s", False, ToolEnding.FINISHED),
    ("exit 2 · 0.05 s", True, ToolEnding.FAILED),
    ("deadline 10 s", True, ToolEnding.FAILED),  # a command's deadline is its own line
    ("Turn failed: HttpError: HTTP 500", True, ToolEnding.FAILED),  # a sub-agent's failure
    ("", False, ToolEnding.FINISHED),
]


@pytest.mark.parametrize(("status", "is_error", "ending"), OLD_LINES)
def test_an_old_records_line_says_how_its_call_ended(status, is_error, ending):
    assert old_tool_ending(status, is_error) == ending


def test_an_old_tool_finished_line_reads_back_with_its_ending():
    # As the transcripts of 0.x wrote it: a status, no ending.
    line = (
        '{"type": "tool_finished", "call": {"id": "c1", "name": "bash", "arguments": "{}"}, '
        '"status": "interrupted", "is_error": true, "duration": 0.2, "agent": "", "diff": ""}'
    )
    event = record_to_event(json.loads(line))
    assert isinstance(event, ToolFinished)
    assert (event.status, event.ending) == ("interrupted", ToolEnding.INTERRUPTED)


def test_a_new_record_says_its_ending_whatever_its_line():
    event = ToolFinished(CALL, "declined by you", True, 0.0, ending=ToolEnding.REFUSED)
    record = event_to_record(event)
    assert record["ending"] == "refused"
    assert record_to_event(record) == event


@pytest.mark.parametrize(
    ("ending", "then"),
    [
        ("Turn failed: HttpError: HTTP 500", SubAgentEnding.FAILED),
        ("Turn blocked: approval needed to run bash: make", SubAgentEnding.ENDS_CALLER),
        ("Turn waiting for input: Which?", SubAgentEnding.ENDS_CALLER),
    ],
)
def test_an_old_sub_agent_ending_that_was_its_outcome_line_reads_back_as_kind_and_line(
    ending, then
):
    record = {
        "type": "sub_agent_finished",
        "name": "agent-1",
        "ending": ending,
        "requests": 1,
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "elapsed": 1.0,
        "agent": "",
    }
    event = record_to_event(record)
    assert isinstance(event, SubAgentFinished)
    assert (event.ending, event.line, event.said) == (then, ending, ending)
    assert old_sub_agent_ending(ending) == {"ending": then.value, "line": ending}


def test_an_old_sub_agent_ending_that_was_a_kind_reads_back_as_it_was():
    record = event_to_record(SubAgentFinished("a", SubAgentEnding.STOPPED, 1, Usage(1, 1), 1.0))
    assert "line" not in record  # records of the usual endings stay as they were
    assert record_to_event(record) == SubAgentFinished(
        "a", SubAgentEnding.STOPPED, 1, Usage(1, 1), 1.0
    )


def test_a_notice_of_an_unknown_kind_is_a_damaged_record():
    with pytest.raises(ValueError, match=r"notice\.kind"):
        record_to_event({"type": "notice", "kind": "made_up", "text": "x", "agent": ""})
