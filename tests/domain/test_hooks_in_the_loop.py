"""The turn's moments tell the hooks what happened (issue 23), on the fakes: a
PreToolUse refusal is the model's tool error, a Stop refusal sends the turn on once,
a UserPromptSubmit refusal keeps the prompt out, and a hook's problem is one notice."""

from __future__ import annotations

import asyncio

from tests.domain.test_long_turns import LOG, reading
from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    FakeWindow,
    RecordingNotifier,
    RecordingTerminal,
    ScriptedHooks,
    ScriptedModel,
)
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.stop import StopSignal
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.values.events import CompactionStarted, Notice
from treadle.domain.values.hooks import HookEvent, HookInput, HookVerdict
from treadle.domain.values.outcome import OutcomeKind

REFUSE = HookVerdict(blocked=True, reason="not here", ran=1)


def agent(script, hooks, processes=None, notifier=None):
    clock = FakeClock()
    model = ScriptedModel(script, clock)
    runner = FakeRunner(clock, processes or {})
    terminal = RecordingTerminal()
    ports = TurnPorts(model, clock, runner, terminal, hooks=hooks, notifier=notifier)
    return Agent(ports, TurnSettings(session_dir="")), model, runner, terminal


def notices(terminal, kind):
    return [e.text for e in terminal.events if isinstance(e, Notice) and e.kind == kind]


async def test_a_refusing_pre_tool_use_hook_keeps_the_call_from_running():
    def guard(happened: HookInput) -> HookVerdict:
        command = str(happened.tool_input.get("command", ""))
        return REFUSE if command.startswith("rm") else HookVerdict(ran=1)

    hooks = ScriptedHooks({HookEvent.PRE_TOOL_USE: guard})
    a, model, runner, terminal = agent(
        [
            R.calling("bash", command="rm -rf build"),
            R.calling("bash", command="ls"),
            R.saying("ok"),
        ],
        hooks,
        {"ls": FakeProcess("a\n")},
    )
    outcome = await a.run_turn("clean")
    assert outcome.kind is OutcomeKind.FINISHED
    assert [s.command for s in runner.specs] == ["ls"]
    refused = model.requests[1].messages[-1]
    assert refused.is_error and "a PreToolUse hook refused this call: not here" in refused.text
    assert notices(terminal, "hook_refused") == ["PreToolUse bash: not here"]
    assert [h.tool_name for h in hooks.fired] == ["bash", "bash"]


async def test_a_stop_hook_sends_the_turn_on_once_and_then_lets_it_end():
    hooks = ScriptedHooks({HookEvent.STOP: REFUSE})
    a, model, _, terminal = agent([R.saying("done?"), R.saying("done!")] * 2, hooks)
    outcome = await a.run_turn("work")
    assert outcome.kind is OutcomeKind.FINISHED
    assert len(model.requests) == 2
    assert "not here" in model.requests[1].messages[-1].text
    assert [h.stop_hook_active for h in hooks.fired] == [False, True]
    assert len(notices(terminal, "hook_refused")) == 2  # the second refusal is not obeyed
    await a.run_turn("again")  # a new turn may be sent on once more
    assert [h.stop_hook_active for h in hooks.fired] == [False, True, False, True]


async def test_a_refused_prompt_never_joins_the_conversation():
    hooks = ScriptedHooks({HookEvent.USER_PROMPT_SUBMIT: REFUSE})
    a, model, _, _ = agent([R.saying("never")], hooks)
    outcome = await a.run_turn("print the secrets")
    assert outcome.kind is OutcomeKind.BLOCKED
    assert (
        outcome.screen_line == "Turn blocked: a UserPromptSubmit hook refused the prompt: not here"
    )
    assert model.requests == [] and len(a.history) == 0


async def test_session_start_and_prompt_hooks_add_context_to_the_message():
    hooks = ScriptedHooks(
        {
            HookEvent.SESSION_START: HookVerdict(context=("branch: main",), ran=1),
            HookEvent.USER_PROMPT_SUBMIT: HookVerdict(context=("ticket: T-1",), ran=1),
        }
    )
    a, model, _, _ = agent([R.saying("ok"), R.saying("ok")], hooks)
    await a.run_turn("fix it")
    await a.run_turn("and this")
    first, second = model.requests[0].messages[-1].text, model.requests[1].messages[-1].text
    assert first.startswith("fix it\n\n<hook-context>") and "branch: main" in first
    assert "ticket: T-1" in first
    assert "branch: main" not in second  # once a session
    assert [h.source for h in hooks.fired if h.event is HookEvent.SESSION_START] == ["startup"]


async def test_post_tool_use_sees_the_result_and_its_refusal_reaches_the_model():
    hooks = ScriptedHooks({HookEvent.POST_TOOL_USE: HookVerdict(True, "lint: E501", ran=1)})
    a, model, _, _ = agent(
        [R.calling("bash", command="ls"), R.saying("ok")], hooks, {"ls": FakeProcess("a\n")}
    )
    await a.run_turn("list")
    (fired,) = hooks.fired
    assert "a" in str(fired.tool_response)
    assert model.requests[1].messages[-1].text.endswith("A PostToolUse hook says: lint: E501")


async def test_a_hook_s_problem_is_one_notice_and_the_turn_goes_on():
    broken = HookVerdict(problems=("PreToolUse hook 'x' failed with exit 1",), ran=1)
    hooks = ScriptedHooks({HookEvent.PRE_TOOL_USE: broken})
    a, _, runner, terminal = agent(
        [R.calling("bash", command="ls"), R.saying("ok")], hooks, {"ls": FakeProcess("a\n")}
    )
    assert (await a.run_turn("list")).kind is OutcomeKind.FINISHED
    assert [s.command for s in runner.specs] == ["ls"]
    assert notices(terminal, "hook_failed") == ["PreToolUse hook 'x' failed with exit 1"]


async def test_the_person_is_told_when_a_turn_ends_and_notification_hooks_fire():
    hooks = ScriptedHooks({HookEvent.NOTIFICATION: HookVerdict(ran=1)})
    notifier = RecordingNotifier()
    a, _, _, _ = agent([R.saying("Done.")], hooks, notifier=notifier)
    await a.run_turn("go")
    await a.hooks.settle()
    assert notifier.told == [("turn_ended", "Turn finished")]
    assert [(h.notification_type, h.message) for h in hooks.fired] == [
        ("turn_ended", "Turn finished")
    ]


async def test_no_hooks_cost_nothing_and_change_nothing():
    a, model, _, _ = agent([R.saying("ok")], ScriptedHooks())
    await a.run_turn("plain")
    assert model.requests[0].messages[-1].text == "plain"


async def test_esc_during_a_hook_pauses_the_turn_at_once():
    started = asyncio.Event()

    class HangingHooks(ScriptedHooks):
        async def fire(self, happened: HookInput) -> HookVerdict:
            started.set()
            await asyncio.Event().wait()  # a hook that never ends
            raise AssertionError("unreachable")

    a, _, runner, _ = agent(
        [R.calling("bash", command="ls"), R.saying("ok")],
        HangingHooks({HookEvent.PRE_TOOL_USE: REFUSE}),
        {"ls": FakeProcess("a\n")},
    )
    stop = StopSignal()
    turn = asyncio.ensure_future(a.run_turn("list", stop))
    await started.wait()
    stop.set("interrupted")
    outcome = await turn
    assert outcome.kind is OutcomeKind.PAUSED
    assert runner.specs == []


async def test_pre_compact_hooks_run_as_a_compaction_starts():
    clock = FakeClock()
    model = ScriptedModel(reading(40), clock, window=FakeWindow(8_192))
    runner = FakeRunner(clock, lambda command: FakeProcess(LOG))
    terminal = RecordingTerminal()
    seen: list[int] = []

    def before(happened: HookInput) -> HookVerdict:
        seen.append(len(terminal.of_type(CompactionStarted)))
        return HookVerdict(ran=1)

    hooks = ScriptedHooks({HookEvent.PRE_COMPACT: before})
    ports = TurnPorts(model, clock, runner, terminal, server=model, hooks=hooks)
    await Agent(ports, TurnSettings()).run_turn("read the logs")
    assert seen and seen[0] == 0  # before the compaction is said to start
    assert {h.trigger for h in hooks.fired} == {"auto"}


async def test_a_call_waiting_for_a_yes_rings_and_fires_notification_hooks():
    clock = FakeClock()
    terminal = RecordingTerminal(approvals=["yes"])
    notifier = RecordingNotifier()
    hooks = ScriptedHooks({HookEvent.NOTIFICATION: HookVerdict(ran=1)})
    ports = TurnPorts(
        ScriptedModel([R.calling("bash", command="make deploy"), R.saying("ok")], clock),
        clock,
        FakeRunner(clock, {"make deploy": FakeProcess()}),
        terminal,
        hooks=hooks,
        notifier=notifier,
    )
    agent = Agent(ports, TurnSettings(approval="ask"))
    await agent.run_turn("deploy")
    await agent.hooks.settle()
    assert notifier.told == [
        ("permission_prompt", "bash waits for a yes: make deploy"),
        ("turn_ended", "Turn finished"),
    ]
    assert [h.notification_type for h in hooks.fired] == ["permission_prompt", "turn_ended"]


async def test_a_sub_agent_s_calls_meet_the_same_hooks_and_its_end_is_subagent_stop():
    def no_bash(happened: HookInput) -> HookVerdict:
        return REFUSE if happened.tool_name == "bash" else HookVerdict(ran=1)

    hooks = ScriptedHooks(
        {HookEvent.PRE_TOOL_USE: no_bash, HookEvent.SUBAGENT_STOP: HookVerdict(ran=1)}
    )
    script = {
        "*": [R.calling("agent", task="clean up"), R.saying("done")],
        "clean up": [R.calling("bash", command="rm -rf x"), R.saying("could not")],
    }
    a, _, runner, _ = agent(script, hooks)
    await a.run_turn("go")
    assert runner.specs == []
    calls = [(h.tool_name, h.agent) for h in hooks.fired if h.event is HookEvent.PRE_TOOL_USE]
    assert calls == [("agent", ""), ("bash", "agent-1")]
    ends = [h.agent for h in hooks.fired if h.event is HookEvent.SUBAGENT_STOP]
    assert ends == ["agent-1"]


async def test_a_hook_s_allow_skips_the_yes_but_not_the_policy_s_no():
    hooks = ScriptedHooks({HookEvent.PRE_TOOL_USE: HookVerdict(ran=1, allowed=True)})
    clock = FakeClock()
    terminal = RecordingTerminal()  # it would block: nobody is there to say yes
    runner = FakeRunner(clock, {"make": FakeProcess()})

    def ports(script):
        return TurnPorts(ScriptedModel(script, clock), clock, runner, terminal, hooks=hooks)

    script = [R.calling("bash", command="make"), R.saying("ok")]
    asked = Agent(ports(script), TurnSettings(approval="ask"))
    assert (await asked.run_turn("build")).kind is OutcomeKind.FINISHED
    assert [s.command for s in runner.specs] == ["make"]
    read_only = Agent(ports(list(script)), TurnSettings(approval="read-only"))
    await read_only.run_turn("build")
    assert [s.command for s in runner.specs] == ["make"]  # not run again
