"""A sub-agent runs the same loop on its caller's two clocks and reports back."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from treadle.adapters.fakes import FakeClock, FakeProcess, RecordingTerminal
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.prompt import REPORT_REQUEST
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.history import is_sendable
from treadle.domain.values.conversation import ToolCall, Usage
from treadle.domain.values.events import (
    SubAgentFinished,
    SubAgentProgress,
    SubAgentStarted,
    ToolStarted,
    TurnEnded,
)
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.tools import Access, ApprovalAnswer, ApprovalRequest, ToolResult


def spawn(task: str, call_id: str = "a1", **clocks: float) -> ToolCall:
    return ToolCall(call_id, "agent", json.dumps({"task": task, **clocks}))


async def test_a_sub_agent_reports_progress_every_check_interval_on_the_clock(rig):
    script = {
        "*": [R((), (spawn("build it", check_interval=2, deadline=100),)), R.saying("thanks")],
        "build it": [R.calling("bash", command="make"), R.saying("built")],
    }
    r = rig(script, {"make": FakeProcess("ok", duration=7)})
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    progress = r.terminal.of_type(SubAgentProgress)
    assert [p.elapsed for p in progress] == [2.0, 4.0, 6.0]
    assert all(p.name == "agent-1" for p in progress)
    assert progress[0].doing == "running bash: make"
    assert progress[0].requests == 1


async def test_a_finished_sub_agents_answer_is_what_the_caller_reads(rig):
    script = {
        "*": [R((), (spawn("count files"),)), R.saying("thanks")],
        "count files": [R.saying("There are 12 files.")],
    }
    r = rig(script)
    await r.agent.run_turn("x")
    result = r.model.requests[-1].messages[-1]
    assert (result.role, result.text) == ("tool", "There are 12 files.")
    (finished,) = r.terminal.of_type(SubAgentFinished)
    assert finished.ending == "finished"


async def test_at_its_deadline_a_sub_agent_stops_its_tools_and_writes_its_final_report(rig):
    script = {
        "*": [R((), (spawn("slow job", check_interval=1, deadline=3),)), R.saying("ok")],
        "slow job": [
            R.calling("bash", command="sleep 30"),
            R.saying("Report: sleep was cut short."),
        ],
    }
    r = rig(script, {"sleep 30": FakeProcess(duration=30)})
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    report_request = r.model.requests[2]
    assert report_request.messages[-1].text == REPORT_REQUEST
    assert not report_request.tools_allowed
    assert {t.name for t in report_request.tools} >= {"bash"}  # a history with calls needs them
    assert is_sendable(report_request.messages)
    result = r.model.requests[3].messages[-1]
    assert "deadline of 3 s" in result.text and "Report: sleep was cut short." in result.text
    (finished,) = r.terminal.of_type(SubAgentFinished)
    assert (finished.ending, finished.elapsed) == ("deadline", 3.0)
    assert [p.elapsed for p in r.terminal.of_type(SubAgentProgress)] == [1.0, 2.0]
    assert r.clock.now() < 30


async def test_a_sub_agent_that_cannot_report_in_its_grace_gets_a_report_from_the_record(rig):
    script = {
        "*": [R((), (spawn("slow job", deadline=3),)), R.saying("ok")],
        "slow job": [
            R.calling("bash", text="Starting the sleep.", command="sleep 30"),
            R(("...",), chunk_delay=1000.0),
        ],
    }
    r = rig(script, {"sleep 30": FakeProcess(duration=30)})
    await r.agent.run_turn("x")
    result = r.model.requests[-1].messages[-1].text
    assert "The last thing it said: Starting the sleep." in result
    (finished,) = r.terminal.of_type(SubAgentFinished)
    assert finished.elapsed == 6.0  # its deadline, then a grace as long as the deadline


async def test_a_sub_agents_tokens_are_added_to_the_calling_turn(rig):
    script = {
        "*": [R((), (spawn("t"),), Usage(100, 10)), R(("ok",), usage=Usage(200, 20))],
        "t": [R(("done",), usage=Usage(1000, 50))],
    }
    r = rig(script)
    await r.agent.run_turn("x")
    main_end = [e for e in r.terminal.of_type(TurnEnded) if not e.agent][-1]
    assert main_end.usage == Usage(1300, 80)


async def test_several_sub_agents_in_one_response_run_at_the_same_time(rig):
    script = {
        "*": [R((), (spawn("a", "a1"), spawn("b", "a2"))), R.saying("both done")],
        "a": [R.calling("bash", command="job a"), R.saying("a done")],
        "b": [R.calling("bash", command="job b"), R.saying("b done")],
    }
    r = rig(script, {"job a": FakeProcess(duration=10), "job b": FakeProcess(duration=10)})
    await r.agent.run_turn("x")
    assert r.clock.now() == 10.0  # side by side: 10 s, not 20
    results = [m.text for m in r.model.requests[-1].messages if m.role == "tool"]
    assert results == ["a done", "b done"]
    names = {e.name for e in r.terminal.of_type(SubAgentStarted)}
    assert names == {"agent-1", "agent-2"}


async def test_a_callers_stop_reaches_its_sub_agents_and_their_tools(rig):
    def on_child_tool(event):
        return isinstance(event, ToolStarted) and event.agent == "agent-1"

    script = {
        "*": [R((), (spawn("job"),))],
        "job": [R.calling("bash", command="sleep 100")],
    }
    r = rig(
        script,
        {"sleep 100": FakeProcess(duration=100)},
        terminal=RecordingTerminal(press_esc_when=on_child_tool),
    )
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.PAUSED
    assert r.clock.now() < 100
    (finished,) = r.terminal.of_type(SubAgentFinished)
    assert finished.ending == "stopped"
    report = r.agent.history.messages[-1]
    assert report.text.startswith("The sub-agent was stopped by its caller.")
    assert "running bash: sleep 100" in report.text
    assert is_sendable(r.agent.history.messages)


async def test_a_callers_own_deadline_stops_its_sub_agent_which_still_reports(rig):
    script = {
        "*": [R((), (spawn("outer", deadline=3),)), R.saying("ok")],
        "outer": [
            R((), (spawn("inner", "a9", deadline=100),)),
            R.saying("Outer report: inner was stopped."),
        ],
        "inner": [R.calling("bash", text="Sleeping.", command="sleep 100")],
    }
    r = rig(script, {"sleep 100": FakeProcess(duration=100)})
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert r.clock.now() == 3.0
    endings = {e.name: e.ending for e in r.terminal.of_type(SubAgentFinished)}
    assert endings == {"agent-1/agent-1": "stopped", "agent-1": "deadline"}
    outer_report_request = r.model.requests[-2]
    inner_result = outer_report_request.messages[-2]
    assert inner_result.text.startswith("The sub-agent was stopped by its caller.")
    assert "The last thing it said: Sleeping." in inner_result.text
    assert "Outer report: inner was stopped." in r.model.requests[-1].messages[-1].text


async def test_a_sub_agent_can_call_its_own_sub_agent(rig):
    script = {
        "*": [R((), (spawn("outer"),)), R.saying("ok")],
        "outer": [R((), (spawn("inner", "a9"),)), R.saying("outer done")],
        "inner": [R.saying("inner done")],
    }
    r = rig(script)
    await r.agent.run_turn("x")
    assert {e.name for e in r.terminal.of_type(SubAgentStarted)} == {"agent-1", "agent-1/agent-1"}


async def test_a_sub_agent_that_needs_a_yes_nobody_can_give_blocks_the_whole_turn(rig):
    from treadle.domain.loop.settings import TurnSettings

    script = {
        "*": [R((), (spawn("deploy"),)), R.saying("never")],
        "deploy": [R.calling("bash", command="make deploy")],
    }
    r = rig(script, {"make deploy": FakeProcess()}, settings=TurnSettings(approval="ask"))
    outcome = await r.agent.run_turn("x")
    assert (outcome.kind, outcome.exit_code) == (OutcomeKind.BLOCKED, 3)
    assert outcome.detail == "approval needed to run bash: make deploy (in agent-1)"
    assert r.runner.specs == []
    assert is_sendable(r.agent.history.messages)


async def test_a_sub_agents_unanswered_question_makes_the_turn_wait_for_input(rig):
    script = {
        "*": [R((), (spawn("pick"),)), R.saying("never")],
        "pick": [R.calling("ask", question="Which branch?")],
    }
    r = rig(script)
    outcome = await r.agent.run_turn("x")
    assert outcome.screen_line == "Turn waiting for input: Which branch? (in agent-1)"
    assert "Which branch?" in r.agent.history.messages[-1].text


class _LibraryTool:
    """A library's own tool that happens to be called ``agent``: it only waits."""

    spec = ToolSpec("agent", "waits a long time", {"type": "object", "properties": {}})
    access: Access = "none"

    def describe(self, arguments):
        return "waiting"

    async def run(self, arguments, context):
        await context.clock.sleep(1000)
        return ToolResult("waited")


async def test_a_library_tool_called_agent_is_an_ordinary_tool_that_esc_stops(rig):
    from treadle.domain.loop.turn import Agent

    r = rig([R.calling("agent"), R.saying("never")])
    terminal = RecordingTerminal(press_esc_when=lambda e: isinstance(e, ToolStarted))
    ports = replace(r.agent.ports, terminal=terminal)
    agent = Agent(ports, tools=[_LibraryTool()])
    outcome = await agent.run_turn("x")
    assert outcome.kind is OutcomeKind.PAUSED
    assert r.clock.now() < 1000
    assert terminal.of_type(SubAgentStarted) == []
    assert is_sendable(agent.history.messages)


async def test_sub_agents_nest_no_deeper_than_the_setting_and_the_call_past_it_is_refused(rig):
    from treadle.domain.loop.settings import TurnSettings

    script = {
        "*": [R((), (spawn("one"),)), R.saying("ok")],
        "one": [R((), (spawn("two", "a2"),)), R.saying("one done")],
        "two": [R((), (spawn("three", "a3"),)), R.saying("two done")],
        "three": [R.saying("never")],
    }
    r = rig(script, settings=TurnSettings(subagent_depth=2))
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert {e.name for e in r.terminal.of_type(SubAgentStarted)} == {"agent-1", "agent-1/agent-1"}
    refused = [m for m in r.model.requests[-3].messages if m.role == "tool"][-1]
    assert refused.is_error and "sub-agents may nest at most 2 deep" in refused.text


async def test_with_no_depth_allowed_the_agent_tool_is_not_offered(rig):
    from treadle.domain.loop.settings import TurnSettings

    r = rig([R.saying("ok")], settings=TurnSettings(subagent_depth=0))
    await r.agent.run_turn("x")
    assert "agent" not in {tool.name for tool in r.model.requests[0].tools}


class SlowPerson(RecordingTerminal):
    """A person who takes ``seconds`` on the clock to answer each question or approval."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.clock: FakeClock = FakeClock()  # the rig's, once it is built

    async def ask_question(self, question: str) -> str | None:
        self.questions.append(question)
        await self.clock.sleep(self.seconds)
        return "a.py"

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        self.approval_requests.append(request)
        await self.clock.sleep(self.seconds)
        return "yes"


ASKS = {
    "a question": R.calling("ask", question="Which file?"),
    "an approval": R.calling("bash", command="rm -f build.log"),
}


def waiting_rig(rig, asks: str, deadline: float, then: str, duration: float):
    """A sub-agent that first waits ten seconds for the person (``asks``), then runs
    ``then`` for ``duration`` seconds, then answers."""
    script = {
        "*": [R((), (spawn("ask first", check_interval=1, deadline=deadline),)), R.saying("ok")],
        "ask first": [ASKS[asks], R.calling("bash", command=then), R.saying("Done with a.py.")],
    }
    person = SlowPerson(10.0)
    processes = {then: FakeProcess("ok", duration=duration), "rm -f build.log": FakeProcess()}
    r = rig(script, processes, terminal=person, settings=TurnSettings(approval="ask"))
    person.clock = r.clock
    return r, person


@pytest.mark.parametrize("asks", ASKS)
async def test_a_sub_agent_waiting_on_the_person_is_not_stopped_by_its_deadline(rig, asks):
    r, person = waiting_rig(rig, asks, deadline=3, then="ls", duration=1.5)
    outcome = await r.agent.run_turn("x")
    assert outcome.kind is OutcomeKind.FINISHED
    assert len(person.questions) + len(person.approval_requests) >= 1
    (finished,) = r.terminal.of_type(SubAgentFinished)
    assert finished.ending == "finished"
    assert finished.elapsed == 1.5  # the ten seconds of waiting are not its own
    assert [p.elapsed for p in r.terminal.of_type(SubAgentProgress)] == [1.0]
    assert r.model.requests[-1].messages[-1].text == "Done with a.py."


async def test_the_deadline_still_comes_once_the_answer_is_in(rig):
    r, _ = waiting_rig(rig, "a question", deadline=3, then="sleep 30", duration=30)
    started = r.clock.now()
    await r.agent.run_turn("x")
    (finished,) = r.terminal.of_type(SubAgentFinished)
    assert finished.ending == "deadline"
    assert finished.elapsed == 3.0
    assert r.clock.now() - started >= 13.0  # three seconds of its own after ten of waiting
