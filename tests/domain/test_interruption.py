"""Esc, Ctrl-C or a caller's stop: everything stops, and the conversation stays sendable."""

from __future__ import annotations

import asyncio

from treadle.adapters.fakes import FakeProcess, RecordingTerminal
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.stop import STOPPED, StopSignal
from treadle.domain.rules.history import INTERRUPTED_RESULT, is_sendable
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import AnswerDelta, ToolFinished, ToolOutput, ToolStarted
from treadle.domain.values.outcome import OutcomeKind


def esc_after(kind, count=1):
    seen = []

    def predicate(event):
        if isinstance(event, kind):
            seen.append(event)
        return len(seen) >= count

    return RecordingTerminal(press_esc_when=predicate)


async def test_esc_while_the_answer_streams_pauses_and_keeps_the_partial_text(rig):
    slow = R(("Hel", "lo ", "wor", "ld"), chunk_delay=1.0)
    r = rig([slow], terminal=esc_after(AnswerDelta, 2))
    outcome = await r.agent.run_turn("x")
    assert (outcome.screen_line, outcome.exit_code) == ("Turn paused", 130)
    kept = r.agent.history.messages[-1]
    assert (kept.role, kept.text, kept.interrupted) == ("assistant", "Hello ", True)


async def test_no_tool_call_from_a_cancelled_stream_ever_runs(rig):
    call = ToolCall("c1", "bash", '{"command": "touch x"}')
    streaming = R(("a", "b", "c"), (call,), chunk_delay=1.0)
    r = rig([streaming], {"touch x": FakeProcess()}, terminal=esc_after(AnswerDelta, 2))
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.PAUSED
    assert r.runner.specs == []
    assert is_sendable(r.agent.history.messages)


async def test_esc_during_a_tool_stops_it_and_gives_every_unfinished_call_an_interrupted_result(
    rig,
):
    calls = (
        ToolCall("c1", "bash", '{"command": "make"}'),
        ToolCall("c2", "bash", '{"command": "make test"}'),
    )
    r = rig(
        [R((), calls)],
        {"make": FakeProcess("building", duration=60), "make test": FakeProcess()},
        terminal=esc_after(ToolStarted),
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.PAUSED
    assert [s.command for s in r.runner.specs] == ["make"]
    results = [m for m in r.agent.history.messages if m.role == "tool"]
    # The command that ran says it was stopped, and why; the one that never ran, only that.
    assert [(m.tool_call_id, m.interrupted) for m in results] == [("c1", True), ("c2", True)]
    assert results[0].text == (
        "The command was stopped before it ended: the user interrupted the turn, after 0.00 s."
        "\n(no output)"
    )
    assert results[1].text == INTERRUPTED_RESULT
    assert is_sendable(r.agent.history.messages)
    assert r.clock.now() < 60  # the stop came at once, not at the command's end


async def test_a_command_stopped_by_esc_gives_the_model_what_it_printed_so_far(rig):
    call = ToolCall("c1", "bash", '{"command": "./ticks"}')
    ticking = FakeProcess("never printed\n", duration=60, early="tick 1\ntick 2\ntick 3\n")
    r = rig(
        [R((), (call,)), R.saying("It stopped after three ticks.")],
        {"./ticks": ticking},
        terminal=esc_after(ToolOutput),
    )
    outcome = await r.agent.run_turn("count")
    assert outcome.kind is OutcomeKind.PAUSED
    shown = [e for e in r.terminal.events if isinstance(e, ToolOutput)]
    assert shown == [ToolOutput("c1", ("tick 1", "tick 2", "tick 3"))]
    finished = next(e for e in r.terminal.events if isinstance(e, ToolFinished))
    assert (finished.status, finished.preview) == ("interrupted", "tick 1\ntick 2\ntick 3")
    # The next turn's request carries the partial output, with the reason.
    await r.agent.run_turn("go on")
    sent = r.model.requests[-1].messages
    result = next(m for m in sent if m.role == "tool" and m.tool_call_id == "c1")
    assert "the user interrupted the turn" in result.text
    assert "tick 1\ntick 2\ntick 3\n" in result.text and "never printed" not in result.text
    # The live glimpses are the screen's: the transcript keeps the result, not them.
    assert not any(isinstance(e, ToolOutput) for e in r.transcript)
    assert any(isinstance(e, ToolFinished) and e.preview for e in r.transcript)


async def test_calls_that_finished_before_the_stop_keep_their_real_results(rig):
    calls = (
        ToolCall("c1", "bash", '{"command": "ls"}'),
        ToolCall("c2", "bash", '{"command": "sleep 9"}'),
    )
    r = rig(
        [R((), calls)],
        {"ls": FakeProcess("a.txt"), "sleep 9": FakeProcess(duration=9)},
        terminal=esc_after(ToolStarted, 2),
    )
    await r.agent.run_turn("x")
    results = {m.tool_call_id: m for m in r.agent.history.messages if m.role == "tool"}
    assert "a.txt" in results["c1"].text and not results["c1"].interrupted
    assert results["c2"].interrupted


async def test_esc_while_waiting_to_retry_pauses_without_another_attempt(rig):
    from treadle.domain.values.events import RetryScheduled
    from treadle.domain.values.model import HttpStatusError

    r = rig(
        [R.failing(HttpStatusError(503)), R.saying("never")], terminal=esc_after(RetryScheduled)
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.PAUSED
    assert len(r.model.requests) == 1


async def test_after_a_pause_the_next_turn_sends_a_valid_conversation(rig):
    r = rig(
        [R((), (ToolCall("c1", "bash", '{"command": "sleep 9"}'),)), R.saying("resumed")],
        {"sleep 9": FakeProcess(duration=9)},
        terminal=esc_after(ToolStarted),
    )
    await r.agent.run_turn("x")
    outcome = await r.agent.run_turn("go on")
    assert outcome.kind is OutcomeKind.FINISHED
    assert is_sendable(r.model.requests[-1].messages)


async def test_a_stop_set_before_the_race_cancels_nothing_started():
    stop = StopSignal()
    stop.set()
    ran = []

    async def work():
        ran.append(1)

    assert await stop.race(work()) is STOPPED
    assert ran == []


async def test_a_parent_stop_reaches_its_children_with_the_reason():
    parent = StopSignal()
    child = StopSignal(parent)
    parent.set("interrupted")
    assert child.is_set and child.reason == "interrupted"
    late = StopSignal(parent)
    assert late.is_set


async def test_a_cancelled_race_cancels_its_work_too():
    stop = StopSignal()
    cancelled = asyncio.Event()

    async def work():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.ensure_future(stop.race(work()))
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert cancelled.is_set()


class StallAfterCall:
    """Streams a complete tool call, then waits (for Esc) before its end."""

    def __init__(self, clock):
        self.clock = clock

    async def stream(self, request):
        from returns.result import Success

        from treadle.domain.values.model import TextDelta, ToolCallReady

        yield Success(TextDelta("Running it"))
        yield Success(ToolCallReady(ToolCall("c1", "bash", '{"command": "rm -rf build"}')))
        await self.clock.sleep(3600)


async def test_esc_after_a_call_arrived_leaves_the_history_sendable_at_once(rig):
    r = rig([], {"rm -rf build": FakeProcess()}, terminal=esc_after(AnswerDelta))
    r.agent.responder.model = StallAfterCall(r.clock)
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.PAUSED
    assert r.runner.specs == []
    assert is_sendable(r.agent.history.messages)
    kept = r.agent.history.messages[-2]
    assert (kept.text, kept.interrupted, kept.tool_calls[0].id) == ("Running it", True, "c1")


async def test_a_tool_stopped_midway_is_shown_as_interrupted(rig):
    from treadle.domain.values.events import ToolFinished

    r = rig(
        [R.calling("bash", command="sleep 9")],
        {"sleep 9": FakeProcess(duration=9)},
        terminal=esc_after(ToolStarted),
    )
    await r.agent.run_turn("x")
    (finished,) = r.terminal.of_type(ToolFinished)
    assert (finished.status, finished.is_error) == ("interrupted", True)
