"""A truncated answer is continued with a grown budget, then reported as ResponseTruncated."""

from __future__ import annotations

import pytest

from treadle.adapters.fakes import FakeProcess
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.truncation import (
    Continue,
    TokenBudget,
    continue_truncated,
)
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import ContinuationRequested
from treadle.domain.values.model import StreamEnd
from treadle.domain.values.outcome import OutcomeKind, Truncated


def cut(text: str) -> R:
    return R((text,), stop="max_tokens")


def test_the_budget_grows_by_its_factor_up_to_its_cap():
    budget = TokenBudget(initial=1000, growth=2.0, cap=3000, continuations=5)
    assert continue_truncated(budget, current=1000, done=0) == Continue(2000, 1)
    assert continue_truncated(budget, current=2000, done=1) == Continue(3000, 2)
    assert continue_truncated(budget, current=3000, done=2) == Continue(3000, 3)


def test_after_the_configured_continuations_the_answer_is_truncated():
    budget = TokenBudget(initial=10, continuations=2)
    assert continue_truncated(budget, current=40, done=2) == Truncated(2)


@pytest.mark.parametrize(
    "values", [dict(initial=0), dict(initial=10, cap=5), dict(growth=0.5), dict(continuations=-1)]
)
def test_a_budget_that_makes_no_sense_is_refused(values):
    with pytest.raises(ValueError, match="token budget"):
        TokenBudget(**values)


async def test_a_cut_answer_is_continued_and_the_user_sees_one_unbroken_answer(rig):
    settings = TurnSettings(budget=TokenBudget(initial=100, growth=2.0, cap=1000, continuations=3))
    r = rig(
        [cut("The quick brown "), cut("fox jumps "), R.saying("over the dog.")], settings=settings
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert r.terminal.answer_text() == "The quick brown fox jumps over the dog."
    assert r.agent.history.messages[-1].text == "The quick brown fox jumps over the dog."
    assert [q.max_tokens for q in r.model.requests] == [100, 200, 400]
    assert [q.continuation for q in r.model.requests] == [
        "",
        "The quick brown ",
        "The quick brown fox jumps ",
    ]
    assert [e.continuation for e in r.terminal.of_type(ContinuationRequested)] == [1, 2]


async def test_continuation_requests_carry_the_history_without_the_partial_answer(rig):
    r = rig([cut("half "), R.saying("whole")])
    await r.agent.run_turn("x")
    assert [m.text for m in r.model.requests[1].messages] == ["x"]


async def test_too_many_continuations_fail_the_turn_as_response_truncated(rig):
    settings = TurnSettings(budget=TokenBudget(initial=100, continuations=2))
    r = rig([cut("a"), cut("b"), cut("c"), R.saying("never")], settings=settings)
    outcome = await r.agent.run_turn("x")
    assert outcome.exit_code == 1
    assert outcome.screen_line.startswith("Turn failed: ResponseTruncated: ")
    assert len(r.model.requests) == 3
    assert r.agent.history.messages[-1].text == "abc"


async def test_a_tool_call_in_a_truncated_response_is_never_run(rig):
    half = R(
        ("Let me run it",),
        (ToolCall("c1", "bash", '{"command": "rm -rf /tmp/x'),),
        stop="max_tokens",
    )
    r = rig(
        [half, R.calling("bash", text=" now.", command="ls"), R.saying("done")],
        {"ls": FakeProcess("ok")},
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert [s.command for s in r.runner.specs] == ["ls"]
    assert r.model.requests[1].max_tokens > r.model.requests[0].max_tokens


@pytest.mark.parametrize(
    ("end", "said"),
    [
        (StreamEnd("end_turn"), ""),
        (StreamEnd("tool_use"), ""),
        (StreamEnd("max_tokens"), ""),  # continued, or named by the turn's end
        (StreamEnd("context_full"), ""),
        (StreamEnd("refusal"), "the model refused: its answer stops where it is shown"),
        (StreamEnd("other", "pause_turn"), "a reason treadle does not know (pause_turn)"),
        (StreamEnd("other"), "(none given)"),
    ],
)
def test_only_an_answer_that_stopped_unusually_has_something_to_say(end, said):
    assert (said in end.unusual()) if said else end.unusual() == ""
