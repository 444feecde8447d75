"""Reasoning on the fakes: shown apart from the answer, kept with it exactly as it came,
never counted as answer text by the seed's retry rule, and carried through
continuations; token counts by kind, summed per turn, and what they cost."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import pytest
from returns.result import Result, Success

from treadle.adapters.fakes import FakeProcess, RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.stop import StopSignal
from treadle.domain.rules.history import History, is_sendable
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.conversation import Message, Reasoning, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    ReasoningDelta,
    ResponseReceived,
    RetryScheduled,
    TurnEnded,
)
from treadle.domain.values.model import (
    ModelError,
    ModelRequest,
    ReasoningReady,
    StreamEvent,
    ToolCallReady,
    TransportError,
)
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.prices import Prices

THOUGHT = Reasoning("thinking", "The tests live in tests/.", seal="sig-1")
SECOND = Reasoning("thinking", "Now I know.", seal="sig-2")
RESET = TransportError("connection_reset")
StreamItem = Result[StreamEvent, ModelError]


async def test_reasoning_is_shown_apart_and_kept_with_the_answer_it_led_to(rig):
    r = rig(
        [R.calling("bash", command="ls").thinking(THOUGHT), R.saying("Done.").thinking(SECOND)],
        {"ls": FakeProcess("a\n")},
    )
    outcome = await r.agent.run_turn("look")
    assert outcome.kind is OutcomeKind.FINISHED
    shown = [e.text for e in r.terminal.events if isinstance(e, ReasoningDelta)]
    assert shown == [THOUGHT.text, SECOND.text]
    assert r.terminal.answer_text() == "Done."
    first, last = (m for m in r.agent.history.messages if m.role == "assistant")
    assert first.reasoning == (THOUGHT,) and last.reasoning == (SECOND,)
    # The next request carries it back: the adapter decides what its protocol takes.
    assert r.model.requests[1].messages[1].reasoning == (THOUGHT,)
    received = [e for e in r.transcript if isinstance(e, ResponseReceived)]
    assert [e.reasoning for e in received] == [(THOUGHT,), (SECOND,)]


class ThinksAfterEachCall:
    """A model that, after each tool call it makes, thinks once more (interleaved)."""

    def __init__(self, inner: ScriptedModel, thought: Reasoning) -> None:
        self.inner = inner
        self.thought = thought

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        async for item in self.inner.stream(request):
            yield item
            if isinstance(item, Success) and isinstance(item.unwrap(), ToolCallReady):
                yield Success(ReasoningReady(self.thought))


async def test_reasoning_remembers_how_many_calls_came_before_it(rig):
    between = Reasoning("reasoning_item", "then", seal="{}")
    r = rig([R.calling("update_plan", steps=[]).thinking(THOUGHT), R.saying("ok")])
    r.agent.responder.model = ThinksAfterEachCall(r.model, between)
    await r.agent.run_turn("plan")
    message = next(m for m in r.agent.history.messages if m.tool_calls)
    assert [(t.text, t.position) for t in message.reasoning] == [(THOUGHT.text, 0), ("then", 1)]


async def test_shown_reasoning_does_not_stop_a_retry_and_the_failed_attempts_is_not_kept(rig):
    first_try = dataclasses.replace(R.failing(RESET), reasoning=(THOUGHT,))
    r = rig([first_try, R.saying("Fine.").thinking(SECOND)])
    outcome = await r.agent.run_turn("go")
    assert outcome.kind is OutcomeKind.FINISHED
    assert r.clock.slept == [1.0]
    assert any(isinstance(e, RetryScheduled) for e in r.terminal.events)
    # The answer shows once; each attempt's reasoning shows once, as its own.
    assert [e.text for e in r.terminal.events if isinstance(e, AnswerDelta)] == ["Fine."]
    shown = [e.text for e in r.terminal.events if isinstance(e, ReasoningDelta)]
    assert shown == [THOUGHT.text, SECOND.text]
    assert r.agent.history.messages[-1].reasoning == (SECOND,)


async def test_answer_text_shown_still_stops_a_retry_whatever_the_reasoning(rig):
    cut = dataclasses.replace(R.failing(RESET, after="Half"), reasoning=(THOUGHT,))
    r = rig([cut, R.saying("never")])
    outcome = await r.agent.run_turn("go")
    assert outcome.kind is OutcomeKind.FAILED
    assert r.terminal.answer_text() == "Half"
    assert r.model.remaining() == 1


async def test_a_continued_answer_keeps_the_reasoning_of_every_part_in_order(rig):
    settings = TurnSettings(session_dir="", budget=TokenBudget(100, 2.0, 400, 2))
    cut = dataclasses.replace(R.saying("The answer "), stop="max_tokens", reasoning=(THOUGHT,))
    r = rig([cut, R.saying("goes on.").thinking(SECOND)], settings=settings)
    await r.agent.run_turn("explain")
    assert r.terminal.answer_text() == "The answer goes on."
    assert r.agent.history.messages[-1].reasoning == (THOUGHT, SECOND)


async def test_an_answer_stopped_while_thinking_keeps_no_reasoning_and_stays_sendable(rig):
    terminal = RecordingTerminal(press_esc_when=lambda e: isinstance(e, ReasoningDelta))
    call = R.calling("bash", text="Running", command="ls").thinking(THOUGHT)
    r = rig([dataclasses.replace(call, chunk_delay=1.0)], terminal=terminal)
    outcome = await r.agent.run_turn("go")
    assert outcome.kind is OutcomeKind.PAUSED
    assert all(not m.reasoning for m in r.agent.history.messages)
    assert is_sendable(r.agent.history.messages)


async def test_every_request_carries_the_thinking_budget_inside_its_own(rig):
    settings = TurnSettings(session_dir="", budget=TokenBudget(8192, thinking=4096))
    r = rig([R.saying("ok")], settings=settings)
    await r.agent.run_turn("go")
    [request] = r.model.requests
    assert (request.max_tokens, request.thinking_budget) == (8192, 4096)


@pytest.mark.parametrize(
    ("thinking", "max_tokens", "asked"),
    [
        (4096, 8192, 4096),  # as configured
        (4096, 4097, 4096),  # still below the request's budget
        (4096, 4096, 2048),  # the window left less: thinking on, smaller
        (4096, 2048, 1024),  # half is still Anthropic's least
        (4096, 2047, 0),  # less than that cannot think at all
        (0, 100, 0),  # never asked for
    ],
)
def test_a_request_whose_window_left_less_thinks_less_rather_than_not_at_all(
    thinking, max_tokens, asked
):
    assert TokenBudget(8192, thinking=thinking).thinking_within(max_tokens) == asked


@pytest.mark.parametrize("thinking", [8192, 9000, -1])
def test_a_thinking_budget_must_leave_room_for_the_answer(thinking):
    with pytest.raises(ValueError, match="thinking"):
        TokenBudget(8192, thinking=thinking)


async def test_a_sub_agents_reasoning_tokens_count_in_its_callers_turn(rig):
    spent = Usage(100, 50, cache_read_tokens=80, cache_write_tokens=10, reasoning_tokens=30)
    script = {
        "*": [R.calling("agent", task="survey"), R.saying("done", usage=spent)],
        "survey": [R.saying("report", usage=spent)],
    }
    r = rig(script)
    await r.agent.run_turn("go")
    [ended] = [e for e in r.terminal.events if isinstance(e, TurnEnded) and not e.agent]
    assert ended.usage.reasoning_tokens == 60 + 0  # two of ``spent``, none from the call
    assert ended.usage.cache_read_tokens == 160 and ended.usage.cache_write_tokens == 20
    assert ended.cost is None  # no prices configured


async def test_a_turn_with_prices_ends_saying_what_it_cost(rig):
    prices = Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    spent = Usage(1_000_000, 100_000, cache_read_tokens=800_000, cache_write_tokens=100_000)
    r = rig([R.saying("ok", usage=spent)], settings=TurnSettings(session_dir="", prices=prices))
    await r.agent.run_turn("go")
    [ended] = [e for e in r.terminal.events if isinstance(e, TurnEnded)]
    # 100k uncached × 3 + 800k read × 0.3 + 100k written × 3.75 + 100k out × 15, per million.
    assert ended.cost == pytest.approx(0.3 + 0.24 + 0.375 + 1.5)


def test_usage_adds_up_by_kind_and_cached_input_is_part_of_the_input():
    one = Usage(1000, 10, cache_read_tokens=900, reasoning_tokens=5)
    two = Usage(500, 20, cache_write_tokens=400, reasoning_tokens=7)
    total = one + two
    assert total == Usage(1500, 30, 900, 400, 12)
    assert (total.total, total.uncached_input_tokens) == (1530, 200)


def test_prices_not_given_for_the_cache_are_the_inputs():
    usage = Usage(2_000_000, 0, cache_read_tokens=1_000_000)
    assert Prices(input=2.0, output=8.0).cost(usage) == pytest.approx(4.0)
    assert Prices(input=2.0, output=8.0, cache_read=0.5).cost(usage) == pytest.approx(2.5)


def test_reasoning_is_part_of_the_history_fingerprint():
    plain = Message.assistant("ok")
    thought = Message.assistant("ok", reasoning=(THOUGHT,))
    edited = Message.assistant("ok", reasoning=(dataclasses.replace(THOUGHT, seal="forged"),))
    digests = {History([m]).digest for m in (plain, thought, edited)}
    assert len(digests) == 3
    # A message without reasoning hashes as it always did (recorded digests still hold).
    assert History([plain]).digest == "ed1c4729e13ef074"


async def test_a_final_report_keeps_its_reasoning_before_the_text(rig):
    # The report may call no tool: a call made anyway is dropped, and the reasoning that
    # came after it now comes before the text, as every protocol wants it.
    r = rig([R.calling("bash", text="Report.", command="ls").thinking(THOUGHT)])
    r.agent.responder.model = ThinksAfterEachCall(r.model, SECOND)
    await r.agent.answer_without_tools("report now", StopSignal())
    message = r.agent.history.messages[-1]
    assert message.tool_calls == ()
    assert [(t.text, t.position) for t in message.reasoning] == [
        (THOUGHT.text, 0),
        (SECOND.text, 0),
    ]
