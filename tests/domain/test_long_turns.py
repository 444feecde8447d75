"""Long turns on small windows, on the fakes: a scripted model that keeps to its window
and refuses, like each provider, any request that does not fit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import pytest

from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    FakeWindow,
    RecordingTerminal,
    ScriptedModel,
)
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.fakes.refusals import PROVIDERS, Provider
from treadle.adapters.fakes.window import request_tokens
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.compaction import COMPACT_REQUEST, PLAN_HEADER
from treadle.domain.rules.context_window import ContextSettings
from treadle.domain.rules.history import History, is_sendable
from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.events import (
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    ContinuationRequested,
    RequestFailed,
    RetryScheduled,
    SubAgentFinished,
    ToolFinished,
    TurnEvent,
    WindowFilled,
)
from treadle.domain.values.model import ContextWindow
from treadle.domain.values.outcome import FailureKind, OutcomeKind

E = TypeVar("E")
TASK = "read every log and say which service fails"
LONG = 160
"""Reads that make a turn compact at least twice on an 8k window."""
LOG = ("2025-01-01 12:00:00 service=api status=ok latency=12ms\n" * 500)[:20_000]


@dataclass
class Run:
    clock: FakeClock
    model: ScriptedModel
    runner: FakeRunner
    terminal: RecordingTerminal
    agent: Agent

    def of(self, kind: type[E]) -> list[E]:
        return [event for event in self.terminal.events if isinstance(event, kind)]


def run_on(
    script: Sequence[R],
    window: FakeWindow,
    *,
    settings: TurnSettings | None = None,
    output: str = LOG,
    summaries: Sequence[R] = (),
) -> Run:
    clock = FakeClock()
    model = ScriptedModel(script, clock, window=window, summaries=summaries)
    runner = FakeRunner(clock, lambda command: FakeProcess(output))
    terminal = RecordingTerminal()
    ports = TurnPorts(model, clock, runner, terminal, server=model)
    return Run(clock, model, runner, terminal, Agent(ports, settings or TurnSettings()))


def reading(count: int, *, plan_first: bool = False) -> list[R]:
    script = [R.calling("bash", command=f"cat /var/log/service-{n}.log") for n in range(count)]
    if plan_first:
        steps = [{"step": "Read the logs", "status": "in_progress"}, {"step": "Report"}]
        steps[1]["status"] = "pending"
        script.insert(0, R.calling("update_plan", steps=steps))
    return [*script, R.saying("The api service fails.")]


def configured(tokens: int) -> TurnSettings:
    return TurnSettings(context=ContextSettings(window=ContextWindow(tokens, "configuration")))


def within_window(run: Run, tokens: int) -> bool:
    return all(request_tokens(r) + r.max_tokens <= tokens for r in run.model.requests)


@pytest.mark.slow
async def test_a_500_request_turn_of_large_outputs_finishes_on_a_small_configured_window() -> None:
    run = run_on(reading(500), FakeWindow(16_384, advertised=False), settings=configured(16_384))
    outcome = await run.agent.run_turn(TASK)
    assert outcome.screen_line == "Turn finished"
    assert run.model.refusals == 0
    assert within_window(run, 16_384)  # prompt + output budget: never past the window
    assert all(r.messages[0] == Message.user(TASK) for r in run.model.requests)
    assert run.of(ContextCompacted)
    assert run.of(ContextPruned)
    assert is_sendable(run.agent.history.messages)
    assert len(run.agent.history) < 150  # what is held in memory is bounded by the window


@pytest.mark.parametrize("like", PROVIDERS)
async def test_a_long_turn_learns_the_window_from_a_refusal_of_each_provider(
    like: Provider,
) -> None:
    run = run_on(reading(80), FakeWindow(8_192, like, advertised=False))
    outcome = await run.agent.run_turn(TASK)
    assert outcome.screen_line == "Turn finished"
    assert 1 <= run.model.refusals <= 2
    learned = [e for e in run.of(ContextWindowKnown) if "refusal" in e.origin]
    assert learned
    if like != "openai-new":  # the others name the window
        assert learned[-1].window == 8_192
    # A refusal is not one of the seed's transient errors: no pause, no retry counted.
    assert not run.of(RetryScheduled)
    assert run.clock.now() == 0.0
    assert all(r.attempt == 1 for r in run.model.requests)
    assert all(r.messages[0] == Message.user(TASK) for r in run.model.requests)


async def test_the_window_the_server_says_is_kept_to_and_recorded_with_its_origin() -> None:
    run = run_on(reading(60), FakeWindow(8_192, "vllm"))
    assert (await run.agent.run_turn(TASK)).kind is OutcomeKind.FINISHED
    assert run.model.refusals == 0
    assert within_window(run, 8_192)
    [known] = run.of(ContextWindowKnown)
    assert (known.window, known.origin) == (8_192, "the scripted server (vllm)")


async def test_the_configured_window_wins_over_the_servers() -> None:
    run = run_on(reading(30), FakeWindow(32_768), settings=configured(8_192))
    await run.agent.run_turn(TASK)
    [known] = run.of(ContextWindowKnown)
    assert (known.window, known.origin) == (8_192, "configuration")
    assert within_window(run, 8_192)


async def test_the_latest_plan_survives_compaction() -> None:
    run = run_on(reading(LONG, plan_first=True), FakeWindow(8_192))
    await run.agent.run_turn(TASK)
    compactions = run.of(ContextCompacted)
    assert len(compactions) >= 2
    after = [r for r in run.model.requests if any(PLAN_HEADER in m.text for m in r.messages)]
    assert after, "no request carried the plan after a compaction"
    summary = next(m for m in after[-1].messages if PLAN_HEADER in m.text)
    assert "[>] Read the logs\n[ ] Report" in summary.text


async def test_the_system_prompt_and_the_instructions_go_untouched_and_count() -> None:
    instructions = "Project rules: " + "always run make check. " * 100
    settings = TurnSettings(
        instructions=instructions,
        context=ContextSettings(window=ContextWindow(8_192, "configuration")),
    )
    run = run_on(reading(LONG), FakeWindow(8_192, advertised=False), settings=settings)
    await run.agent.run_turn(TASK)
    assert run.of(ContextCompacted)
    assert {r.system for r in run.model.requests} == {run.agent.responder.system}
    assert instructions in run.agent.responder.system
    assert run.model.refusals == 0 and within_window(run, 8_192)


def long_history(exchanges: int) -> History:
    """A conversation far past an 8k window that pruning alone cannot shrink: the
    model's own long words between its calls (a session resumed on a smaller server)."""
    thought = "I compared the latencies of the previous log line by line. " * 12
    messages = [Message.user(TASK)]
    for number in range(exchanges):
        call = ToolCall(f"old{number}", "bash", json.dumps({"command": f"cat old-{number}"}))
        messages += [Message.assistant(thought, (call,)), Message.tool(call.id, "x" * 3000)]
    return History(messages)


@pytest.mark.parametrize("chars_per_token", [4.0, 2.0])
async def test_a_compaction_whose_summary_request_is_too_long_still_ends_well(
    chars_per_token: float,
) -> None:
    # The summary request leaves the oldest exchanges out to fit, and says so; a
    # server that counts denser than the estimate refuses it anyway, and it is cut more.
    clock = FakeClock()
    window = FakeWindow(8_192, "anthropic", chars_per_token=chars_per_token)
    model = ScriptedModel([R.saying("Done.")], clock, window=window)
    terminal = RecordingTerminal()
    ports = TurnPorts(model, clock, FakeRunner(clock), terminal, server=model)
    agent = Agent(ports, TurnSettings(), history=long_history(40))
    outcome = await agent.run_turn("Continue.")
    assert outcome.screen_line == "Turn finished"
    [compacted] = terminal.of_type(ContextCompacted)
    assert compacted.dropped > 0
    assert "oldest messages did not fit" in compacted.messages[1].text
    assert model.summary_refusals == (1 if chars_per_token == 2.0 else 0)
    assert compacted.messages[0] == Message.user(TASK)
    assert is_sendable(agent.history.messages)


async def test_a_summary_the_model_cannot_write_is_made_from_the_record() -> None:
    summaries = [R.failing(__import__("treadle").domain.values.model.MalformedStream("bad"))] * 9
    run = run_on(reading(LONG), FakeWindow(8_192), summaries=summaries)
    outcome = await run.agent.run_turn(TASK)
    assert outcome.screen_line == "Turn finished"
    made = [c for c in run.of(ContextCompacted) if not c.summarized]
    assert made, "no compaction fell back on the record"
    assert "bash `cat /var/log/service-" in made[0].messages[1].text


async def test_after_two_refusals_for_one_request_the_turn_fails_with_context_exceeded() -> None:
    run = run_on([R.saying("never")], FakeWindow(2_048, "anthropic", advertised=False))
    outcome = await run.agent.run_turn("x" * 20_000)  # the task alone is past the window
    assert outcome.kind is OutcomeKind.FAILED and outcome.reason is FailureKind.CONTEXT
    assert outcome.exit_code == 1
    assert outcome.screen_line.startswith("Turn failed: ContextExceeded: ")
    assert run.model.refusals <= 2
    assert not run.of(RetryScheduled)


async def test_a_task_the_window_cannot_hold_fails_before_it_is_sent() -> None:
    run = run_on([R.saying("never")], FakeWindow(4_096), settings=configured(4_096))
    outcome = await run.agent.run_turn("y" * 40_000)
    assert outcome.reason is FailureKind.CONTEXT
    assert "the task alone take about" in outcome.detail
    assert "llama-server -c" in outcome.detail and "context_window" in outcome.detail
    assert run.model.requests == []


async def test_a_refusal_for_the_output_budget_only_lowers_the_budget() -> None:
    settings = TurnSettings(context=ContextSettings(follow_window=False))
    run = run_on(reading(3), FakeWindow(8_192, "vllm-old", advertised=False), settings=settings)
    assert (await run.agent.run_turn(TASK)).kind is OutcomeKind.FINISHED
    assert run.model.refusals == 1
    refused, resent = run.model.requests[0], run.model.requests[1]
    assert refused.max_tokens == 8_192 and resent.max_tokens < 8_192
    assert resent.messages == refused.messages  # nothing needed compacting
    assert within_window(run, 8_192) is False  # only the refused one was past it
    assert all(request_tokens(r) + r.max_tokens <= 8_192 for r in run.model.requests[1:])


# Cuts at the window (issue 16) ------------------------------------------------------------

RAMBLING = "and so on " * 8_000


async def test_a_cut_at_the_window_is_said_and_no_continuation_that_cannot_fit_is_sent() -> None:
    settings = TurnSettings(context=ContextSettings(follow_window=False))  # max_tokens 8192
    run = run_on([R.saying(RAMBLING, chunks=40)] * 4, FakeWindow(8_192), settings=settings)
    outcome = await run.agent.run_turn("write the whole story")
    assert outcome.reason is FailureKind.CONTEXT
    assert "8,192 tokens (the scripted server (llama.cpp))" in outcome.detail
    assert "llama-server -c" in outcome.detail and "max_tokens" in outcome.detail
    assert within_window(run, 8_192)


async def test_an_anthropic_context_full_stop_is_said_not_blamed_on_the_budget() -> None:
    settings = TurnSettings(context=ContextSettings(follow_window=False))
    run = run_on([R.saying(RAMBLING)] * 3, FakeWindow(8_192, "anthropic", False), settings=settings)
    outcome = await run.agent.run_turn("write")
    assert run.of(WindowFilled)
    assert not run.of(ContinuationRequested)
    assert outcome.reason is FailureKind.CONTEXT and "filled" in outcome.detail
    assert len(run.model.requests) == 1


async def test_a_continuation_compacts_the_conversation_to_fit_when_it_can() -> None:
    story = "chapter " * 1_600  # more than the budget, less than the window
    script = [*reading(12)[:-1], R.saying(story), R.saying(" The end.")]
    settings = TurnSettings(context=ContextSettings(window=ContextWindow(8_192, "configuration")))
    run = run_on(script, FakeWindow(8_192, advertised=False), settings=settings)
    outcome = await run.agent.run_turn(TASK)
    assert outcome.screen_line == "Turn finished"
    continued = [r for r in run.model.requests if r.continuation]
    assert continued and within_window(run, 8_192)
    assert run.terminal.answer_text().endswith(" The end.")


async def test_a_continuation_is_announced_with_the_budget_it_really_gets() -> None:
    script = [R(("part one ",), stop="max_tokens"), R.saying("part two")]
    run = run_on(script, FakeWindow(4_096), settings=TurnSettings())
    await run.agent.run_turn("write")
    [continued] = run.of(ContinuationRequested)
    assert continued.max_tokens == run.model.requests[1].max_tokens
    assert request_tokens(run.model.requests[1]) + continued.max_tokens <= 4_096


# The rest of the turn ----------------------------------------------------------------------


async def test_tool_output_is_bounded_by_a_share_of_the_window_too() -> None:
    run = run_on(reading(2), FakeWindow(16_384))
    await run.agent.run_turn(TASK)
    assert {spec.output_limit for spec in run.runner.specs} == {9_830}
    unknown = run_on(reading(2), FakeWindow(16_384, advertised=False))
    await unknown.agent.run_turn(TASK)
    assert {spec.output_limit for spec in unknown.runner.specs} == {30_000}


async def test_a_huge_result_from_a_tool_that_ignores_the_bound_is_cut_to_it() -> None:
    class Flood:
        spec = __import__("treadle").domain.values.model.ToolSpec(
            "flood", "Prints a lot.", {"type": "object", "properties": {}}
        )
        access = "read"

        def describe(self, arguments: object) -> str:
            return ""

        async def run(self, arguments: object, context: object) -> object:
            from treadle.domain.values.tools import ToolResult

            return ToolResult("z" * 200_000)

    clock = FakeClock()
    model = ScriptedModel([R.calling("flood"), R.saying("ok")], clock, window=FakeWindow(16_384))
    terminal = RecordingTerminal()
    agent = Agent(
        TurnPorts(model, clock, FakeRunner(clock), terminal, server=model),
        TurnSettings(),
        [Flood()],  # type: ignore[list-item]
    )
    assert (await agent.run_turn("flood")).kind is OutcomeKind.FINISHED
    result = agent.history.messages[2]
    assert len(result.text) < 12_000 and "cut to fit the context window" in result.text


async def test_sub_agents_keep_their_own_conversations_within_the_window() -> None:
    sub_task = "read the logs of the api service"
    script = {
        "*": [R.calling("agent", task=sub_task), R.saying("It is the api.")],
        sub_task: reading(LONG),
    }
    clock = FakeClock()
    model = ScriptedModel(script, clock, window=FakeWindow(8_192))
    runner = FakeRunner(clock, lambda command: FakeProcess(LOG))
    terminal = RecordingTerminal()
    agent = Agent(TurnPorts(model, clock, runner, terminal, server=model), TurnSettings())
    outcome = await agent.run_turn("find the failing service")
    assert outcome.screen_line == "Turn finished"
    assert model.refusals == 0
    compacted = [e for e in terminal.of_type(ContextCompacted) if e.agent == "agent-1"]
    assert compacted, "the sub-agent never compacted its conversation"
    assert not [e for e in terminal.of_type(ContextCompacted) if e.agent == ""]
    [finished] = terminal.of_type(SubAgentFinished)
    assert finished.ending == "finished"
    sub_requests = [r for r in model.requests if r.messages[0].text == sub_task]
    assert all(request_tokens(r) + r.max_tokens <= 8_192 for r in sub_requests)


async def test_a_stop_during_a_compaction_pauses_with_the_conversation_unchanged() -> None:
    slow = [R(("## Task\n", "carry on"), chunk_delay=5.0)]
    run = run_on(reading(LONG), FakeWindow(8_192), summaries=slow)
    run.terminal._press_esc_when = lambda event: isinstance(event, CompactionStarted)
    before: list[int] = []
    original = run.terminal.show

    def show(event: TurnEvent) -> None:
        if isinstance(event, CompactionStarted):
            before.append(len(run.agent.history))
        original(event)

    run.terminal.show = show  # type: ignore[method-assign]
    outcome = await run.agent.run_turn(TASK)
    assert outcome.kind is OutcomeKind.PAUSED
    assert not run.of(ContextCompacted)
    assert is_sendable(run.agent.history.messages)
    assert len(run.agent.history) >= before[0]


async def test_the_screen_says_each_pruning_and_compaction_in_one_line() -> None:
    from treadle.adapters.terminal.plain_terminal import describe_event

    run = run_on(reading(LONG), FakeWindow(8_000))
    await run.agent.run_turn(TASK)
    [line] = describe_event(run.of(ContextCompacted)[0])
    assert line.startswith("context ") and "/8k · compacted to " in line
    [pruned] = describe_event(run.of(ContextPruned)[0])
    assert "/8k · pruned " in pruned and "old tool result" in pruned


async def test_a_malformed_tool_call_is_refused_quoting_what_the_model_wrote() -> None:
    broken = ToolCall("", "bash", '{"command": "ls')
    run = run_on([R((), (broken,)), R.saying("Sorry.")], FakeWindow(8_192))
    assert (await run.agent.run_turn("list")).kind is OutcomeKind.FINISHED
    result = run.agent.history.messages[2]
    assert result.is_error and "not valid JSON" in result.text
    assert 'They are sent back as {}; what you wrote was: {"command": "ls' in result.text
    [refused] = run.of(ToolFinished)
    assert refused.status == "refused"


async def test_the_summary_request_allows_no_tool_and_carries_no_answer_text_to_the_screen() -> (
    None
):
    run = run_on(reading(LONG), FakeWindow(8_192))
    await run.agent.run_turn(TASK)
    summaries = [r for r in run.model.requests if r.messages[-1].text == COMPACT_REQUEST]
    assert summaries and all(not r.tools_allowed and r.tools for r in summaries)
    assert "## Task" not in run.terminal.answer_text()
    assert not [e for e in run.of(RequestFailed)]
    assert json.dumps(run.terminal.answer_text()) == json.dumps("The api service fails.")


async def test_a_continuation_fits_by_the_servers_count_of_what_it_carries() -> None:
    # A model's own text can tokenize far denser than the estimate (llama.cpp counts
    # "<|im_end|>" as six tokens): the server's count of the cut request and its answer
    # decides whether the continuation fits.
    dense = FakeWindow(4_096, chars_per_token=2.0)
    run = run_on([R.saying("<|im_end|>\n" * 900)] * 6, dense)
    outcome = await run.agent.run_turn("say hi")
    assert outcome.reason is FailureKind.CONTEXT
    continued = [r for r in run.model.requests if r.continuation]
    assert continued
    assert all(request_tokens(r, 2.0) + r.max_tokens <= 4_096 for r in continued)


async def test_a_request_refused_again_after_making_room_twice_ends_the_turn() -> None:
    # A server that refuses with no figure and counts far denser than the estimate:
    # each refusal teaches a smaller bound and makes room; after the second, no more.
    clock = FakeClock()
    window = FakeWindow(8_192, "openai-new", advertised=False, chars_per_token=0.5)
    model = ScriptedModel([R.saying("Done.")], clock, window=window)
    terminal = RecordingTerminal()
    ports = TurnPorts(model, clock, FakeRunner(clock), terminal, server=model)
    agent = Agent(ports, TurnSettings(), history=long_history(40))
    outcome = await agent.run_turn("Continue.")
    assert outcome.reason is FailureKind.CONTEXT
    assert outcome.detail.startswith("the server still refused the request as too long")
    assert "after making room 2 times" in outcome.detail
    answers = [r for r in model.requests if r.messages[-1].text != COMPACT_REQUEST]
    assert len(answers) == 3  # the request, and two more at once after making room
    assert not terminal.of_type(RetryScheduled) and clock.now() == 0.0
    assert is_sendable(agent.history.messages)


async def test_an_answer_that_filled_the_window_goes_on_once_room_is_made() -> None:
    # Anthropic says the window filled (model_context_window_exceeded); compacting the
    # results read before makes room, and the answer goes on, said as a fill.
    story = "chapter " * 3000
    script = [*reading(12)[:-1], R.saying(story), R.saying(" The end.")]
    run = run_on(script, FakeWindow(8_192, "anthropic", chars_per_token=2.5))
    outcome = await run.agent.run_turn(TASK)
    assert outcome.screen_line == "Turn finished"
    assert run.of(WindowFilled)
    assert not run.of(ContinuationRequested)  # not blamed on the budget
    assert any(r.continuation for r in run.model.requests)
    assert run.terminal.answer_text().endswith(" The end.")


async def test_on_a_tiny_window_the_newest_result_is_cut_to_what_the_window_has_left() -> None:
    # 2,000 tokens, of which the system prompt and tools take half: the newest result's
    # usual share (2 kB at the least) does not fit beside them and the older stubs, what
    # is left of the window does; the turn goes on instead of ending ContextExceeded.
    run = run_on(reading(8), FakeWindow(2_000, advertised=False), settings=configured(2_000))
    outcome = await run.agent.run_turn(TASK)
    assert outcome.screen_line == "Turn finished", outcome.detail
    assert run.model.refusals == 0
    assert within_window(run, 2_000)
    assert is_sendable(run.agent.history.messages)
