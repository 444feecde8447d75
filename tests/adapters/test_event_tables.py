"""The terminals dispatch each event by its kind, through one table each (a
``functools.singledispatch`` over the event union): the kinds that show no line are
named here, so that a new kind of event is a decision, not a silent default."""

from __future__ import annotations

from typing import get_args

import pytest

from treadle.adapters.blessed_terminal.display import view_lines
from treadle.adapters.blessed_terminal.terminal import shown_on
from treadle.adapters.terminal.plain_terminal import describe_event, json_record
from treadle.domain.values.events import TurnEvent

KINDS = frozenset(get_args(TurnEvent))


def names(kinds: object) -> set[str]:
    return {kind.__name__ for kind in kinds}  # type: ignore[attr-defined]


def left_to_default(table: object) -> set[str]:
    return names(KINDS - set(table.registry))  # type: ignore[attr-defined]


def test_the_kinds_with_no_plain_line_are_the_streams_and_the_bookkeeping():
    assert left_to_default(describe_event) == {
        "AnswerDelta",  # streams inline
        "BackgroundCount",  # the full screen's status line only
        "ReasoningDelta",  # streams inline, when asked
        "MessageAdded",
        "RequestFailed",  # its retry says it
        "RequestSent",
        "ResponseReceived",
        "ToolOutput",  # live rows only
        "UsageUpdated",  # the turn's end says the totals
    }


def test_the_full_screen_view_decides_on_every_kind_but_reasoning_and_the_end():
    # Reasoning is the view's think(), the end its ending_lines(), both the terminal's
    # to call; a failed request is said by its retry.
    assert left_to_default(view_lines) == {"ReasoningDelta", "RequestFailed", "TurnEnded"}


@pytest.mark.parametrize("table", [describe_event, json_record, view_lines, shown_on])
def test_a_table_holds_only_kinds_of_turn_events(table):
    assert set(table.registry) - {object} <= KINDS


@pytest.mark.parametrize("table", [describe_event, json_record, view_lines, shown_on])
def test_each_function_is_registered_for_the_kinds_its_event_parameter_names(table):
    # Registered by class, not by annotation: reading the annotations at import cost a
    # session's start some 1 ms; this keeps the two from telling different stories.
    for kind, function in table.registry.items():
        if kind is object:
            continue
        annotation = function.__annotations__["event"]
        assert kind.__name__ in annotation.split(" | "), (kind, function)
