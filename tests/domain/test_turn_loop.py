"""The seed's turn loop, sentence by sentence, on the fakes."""

from __future__ import annotations

import logging

import pytest

from treadle.adapters.fakes import FakeProcess, RecordingTerminal
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.prompt import SYSTEM_PROMPT
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.history import is_sendable
from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.events import (
    MessageAdded,
    PlanUpdated,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnStarted,
)
from treadle.domain.values.model import CredentialsRejected, HttpStatusError, TransportError
from treadle.domain.values.outcome import FailureKind, OutcomeKind


async def test_one_turn_repeats_requests_until_the_model_answers_without_a_tool(rig):
    r = rig(
        [R.calling("bash", command="ls"), R.calling("bash", command="pwd"), R.saying("Done.")],
        {"ls": FakeProcess("a\n"), "pwd": FakeProcess("/w\n")},
    )
    outcome = await r.agent.run_turn("look around")
    assert outcome.kind is OutcomeKind.FINISHED
    assert len(r.model.requests) == 3
    assert [s.command for s in r.runner.specs] == ["ls", "pwd"]


async def test_tool_results_are_sent_back_with_the_next_request(rig):
    r = rig([R.calling("bash", command="ls"), R.saying("ok")], {"ls": FakeProcess("file.txt\n")})
    await r.agent.run_turn("list")
    second = r.model.requests[1].messages
    assert second[-1].role == "tool"
    assert "file.txt" in second[-1].text
    assert second[-1].tool_call_id == second[-2].tool_calls[0].id


async def test_nothing_caps_the_number_of_requests_in_a_turn(rig):
    rounds = 300
    script = [R.calling("update_plan", steps=[]) for _ in range(rounds)] + [R.saying("end")]
    r = rig(script)
    outcome = await r.agent.run_turn("many steps")
    assert outcome.kind is OutcomeKind.FINISHED
    assert len(r.model.requests) == rounds + 1


async def test_a_final_answer_ends_the_turn_finished_with_exit_0_and_no_completion_claim(rig):
    r = rig([R.saying("I could not fix it: the tests still fail.")])
    outcome = await r.agent.run_turn("fix the failing test")
    assert (outcome.screen_line, outcome.exit_code) == ("Turn finished", 0)
    assert "Task completed" not in r.terminal.outcome_line
    assert len(r.model.requests) == 1  # no checker request, no repair round


async def test_answer_text_is_never_parsed_as_a_completion_protocol(rig):
    for text in (
        "STATUS: FAILED",
        "Turn blocked: need a key",
        "<done>failed</done>",
        "TASK COMPLETE",
    ):
        r = rig([R.saying(text)])
        outcome = await r.agent.run_turn("x")
        assert outcome.kind is OutcomeKind.FINISHED


async def test_every_turn_starts_by_announcing_its_task(rig):
    r = rig([R.saying("hi")])
    await r.agent.run_turn("fix the failing test")
    assert r.terminal.events[0] == TurnStarted("fix the failing test")


async def test_the_model_is_told_to_plan_validate_and_report_plainly(rig):
    r = rig([R.saying("hi")])
    await r.agent.run_turn("x")
    request = r.model.requests[0]
    assert request.system == SYSTEM_PROMPT
    for words in ("announcing", "update_plan", "Validate your work", "partial", "needs the user"):
        assert words in request.system
    assert {t.name for t in request.tools} >= {"bash", "update_plan", "ask", "agent"}


async def test_a_published_plan_reaches_the_terminal(rig):
    steps = [{"step": "read", "status": "completed"}, {"step": "fix", "status": "in_progress"}]
    r = rig([R.calling("update_plan", steps=steps), R.saying("ok")])
    await r.agent.run_turn("x")
    (plan,) = r.terminal.of_type(PlanUpdated)
    assert [(s.step, s.status) for s in plan.steps] == [
        ("read", "completed"),
        ("fix", "in_progress"),
    ]


async def test_transport_error_after_all_attempts_fails_the_turn_with_exit_1(rig):
    reset = R.failing(TransportError("connection_reset", "connection reset by peer"))
    r = rig([reset, reset, reset])
    outcome = await r.agent.run_turn("x")
    assert outcome.exit_code == 1
    assert outcome.screen_line == "Turn failed: TransportError: connection reset by peer"


async def test_a_non_retryable_status_fails_at_once(rig):
    r = rig([R.failing(HttpStatusError(400, "bad request: max_tokens too large"))])
    outcome = await r.agent.run_turn("x")
    assert (
        outcome.screen_line == "Turn failed: HttpError: HTTP 400: bad request: max_tokens too large"
    )
    assert len(r.model.requests) == 1
    assert r.clock.slept == []


async def test_rejected_credentials_block_the_turn_with_exit_3(rig):
    r = rig([R.failing(CredentialsRejected("credentials rejected (HTTP 401): set OPENAI_API_KEY"))])
    outcome = await r.agent.run_turn("x")
    assert outcome.exit_code == 3
    assert outcome.screen_line.startswith("Turn blocked: credentials rejected")


async def test_the_ask_tool_without_anyone_to_answer_ends_waiting_for_input(rig):
    r = rig([R.calling("ask", question="Which branch?")])
    outcome = await r.agent.run_turn("x")
    assert (outcome.screen_line, outcome.exit_code) == ("Turn waiting for input: Which branch?", 4)
    assert is_sendable(r.agent.history.messages)


async def test_the_ask_tool_answered_goes_back_to_the_model(rig):
    r = rig(
        [R.calling("ask", question="Which branch?"), R.saying("ok")],
        terminal=RecordingTerminal(answers=["main"]),
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert "main" in r.model.requests[1].messages[-1].text


async def test_outcomes_each_read_differently_and_none_says_task_completed(rig):
    r1 = rig([R.saying("x")])
    r2 = rig([R.failing(HttpStatusError(404, "no such model"))])
    r3 = rig([R.failing(CredentialsRejected("set KEY"))])
    r4 = rig([R.calling("ask", question="?")])
    r5 = rig(
        [R.calling("bash", command="sleep 9")],
        {"sleep 9": FakeProcess(duration=9)},
        terminal=RecordingTerminal(press_esc_when=lambda e: True),
    )
    lines = set()
    for r in (r1, r2, r3, r4, r5):
        outcome = await r.agent.run_turn("x")
        lines.add(outcome.screen_line.split(":")[0])
        assert "Task completed" not in outcome.screen_line
    assert len(lines) == 5


async def test_usage_is_counted_per_request_and_per_turn(rig):
    r = rig(
        [
            R(("a",), (ToolCall("1", "update_plan", '{"steps": []}'),), Usage(100, 10)),
            R(("b",), usage=Usage(150, 20)),
        ]
    )
    await r.agent.run_turn("x")
    ended = r.terminal.of_type(TurnEnded)[-1]
    assert ended.usage == Usage(250, 30)
    assert ended.requests == 2


async def test_every_message_of_the_conversation_is_recorded_as_an_event(rig):
    r = rig([R.calling("bash", command="ls"), R.saying("ok")], {"ls": FakeProcess("x")})
    await r.agent.run_turn("x")
    recorded = [e.message for e in r.transcript if isinstance(e, MessageAdded)]
    assert recorded == list(r.agent.history.messages)


async def test_a_second_turn_continues_the_same_conversation(rig):
    r = rig([R.saying("first"), R.saying("second")])
    await r.agent.run_turn("one")
    await r.agent.run_turn("two")
    texts = [m.text for m in r.model.requests[1].messages]
    assert texts == ["one", "first", "two"]


async def test_a_crashing_tool_ends_the_turn_as_an_internal_error_with_its_traceback_logged(
    rig, caplog
):
    r = rig([R.calling("bash", command="ls"), R.saying("never")])

    async def boom(spec):  # the runner itself breaks: a bug in an adapter
        raise RuntimeError("runner exploded")

    r.runner.run = boom
    with caplog.at_level(logging.ERROR, logger="treadle"):
        outcome = await r.agent.run_turn("x")
    assert (outcome.kind, outcome.reason) == (OutcomeKind.FAILED, FailureKind.INTERNAL)
    assert outcome.screen_line == "Turn failed: InternalError: RuntimeError: runner exploded"
    assert len(r.model.requests) == 1
    assert r.terminal.of_type(ToolFinished)[0].status == "crashed"
    assert is_sendable(r.agent.history.messages)
    (record,) = caplog.records
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


async def test_a_crash_names_the_log_that_holds_its_traceback(rig):
    r = rig([R.calling("bash", command="ls")], settings=TurnSettings(log_path="/s/treadle.log"))

    async def boom(spec):
        raise KeyError("gone")

    r.runner.run = boom
    outcome = await r.agent.run_turn("x")
    assert outcome.detail == "KeyError: 'gone' (traceback in /s/treadle.log)"


async def test_an_empty_history_given_to_the_agent_is_the_one_it_keeps(rig):
    from treadle.domain.loop.turn import Agent
    from treadle.domain.rules.history import History

    r = rig([R.saying("hi")])
    history = History()
    agent = Agent(r.agent.ports, history=history)
    await agent.run_turn("x")
    assert [m.text for m in history.messages] == ["x", "hi"]


@pytest.mark.parametrize(
    "script",
    [
        [R.saying("done")],
        [R.failing(HttpStatusError(400, "bad"))],
        [R.failing(CredentialsRejected("set KEY"))],
        [R.calling("ask", question="?")],
        [R.calling("bash", command="deploy")],
        [
            R(
                (),
                (
                    ToolCall("c1", "bash", '{"command": "sleep 9"}'),
                    ToolCall("c2", "bash", '{"command": "ls"}'),
                ),
            )
        ],
        [R(("cut",), (ToolCall("c1", "bash", "{"),), stop="max_tokens")] * 5,
    ],
    ids=[
        "finished",
        "failed",
        "blocked-credentials",
        "waiting",
        "blocked-approval",
        "paused",
        "truncated",
    ],
)
async def test_whatever_the_outcome_the_conversation_is_sendable(rig, script):
    from treadle.domain.loop.settings import TurnSettings
    from treadle.domain.rules.history import is_sendable

    r = rig(
        script,
        {"sleep 9": FakeProcess(duration=9), "ls": FakeProcess(), "deploy": FakeProcess()},
        settings=TurnSettings(approval="ask"),
        terminal=RecordingTerminal(
            press_esc_when=lambda e: isinstance(e, ToolStarted) and e.call.id == "c1",
            approvals=["yes"] if "sleep" in str(script) else [],
        ),
    )
    await r.agent.run_turn("x")
    assert is_sendable(r.agent.history.messages)


async def test_the_projects_instructions_follow_the_system_prompt_in_every_request(rig):
    settings = TurnSettings(instructions="# AGENTS.md\nRun make test before you answer.")
    r = rig([R.calling("bash", command="ls"), R.saying("done")], settings=settings)
    await r.agent.run_turn("x")
    systems = {request.system for request in r.model.requests}
    assert systems == {SYSTEM_PROMPT + "\n\n# AGENTS.md\nRun make test before you answer."}


async def test_two_calls_with_one_id_both_run_and_both_results_reach_the_model(rig):
    first = ToolCall("same", "bash", '{"command": "echo one"}')
    second = ToolCall("same", "bash", '{"command": "echo two"}')
    processes = {"echo one": FakeProcess("one\n"), "echo two": FakeProcess("two\n")}
    r = rig([R((), (first, second)), R.saying("done")], processes)
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    sent = r.model.requests[1].messages
    assert is_sendable(sent)
    calls = sent[1].tool_calls
    assert [c.id for c in calls] == ["same", "same_2"]
    results = {m.tool_call_id: m.text for m in sent if m.role == "tool"}
    assert "one" in results["same"] and "two" in results["same_2"]


async def test_an_id_the_model_used_in_an_earlier_answer_gets_one_of_its_own(rig):
    again = ToolCall("call_0", "bash", '{"command": "ls"}')
    r = rig([R((), (again,)), R((), (again,)), R.saying("done")], {"ls": FakeProcess()})
    await r.agent.run_turn("x")
    ids = [c.id for m in r.model.requests[-1].messages for c in m.tool_calls]
    assert ids == ["call_0", "call_0_2"]
    assert is_sendable(r.model.requests[-1].messages)


async def test_a_lone_surrogate_anywhere_in_the_model_output_is_kept_well_formed(rig):
    command = ToolCall("c\ud800", "bash", '{"command": "echo \\ud800"}')
    r = rig(
        [R(("say \ud800",), (command,)), R.saying("done \udfff")], {"echo \ufffd": FakeProcess()}
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert [s.command for s in r.runner.specs] == ["echo \ufffd"]
    texts = [m.text for m in r.agent.history.messages] + [
        c.id for c in r.agent.history.messages[1].tool_calls
    ]
    assert all(text.encode("utf-8") is not None for text in texts)
    assert r.terminal.answer_text().endswith("done \ufffd")
