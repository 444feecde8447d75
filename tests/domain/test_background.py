"""Background processes (issue 27): the rules as plain values, the loop on fakes.

The real processes (a python http.server fetched with curl, treadle's exit, kill -9)
are in tests/entrypoints/test_background_processes.py.
"""

from __future__ import annotations

import asyncio

from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    RecordingTerminal,
    ScriptedModel,
)
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.background import BackgroundProcesses
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.stop import StopSignal
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.background import (
    listing_lines,
    over_limit,
    status_part,
    stopped_at_session_end,
)
from treadle.domain.values.events import BackgroundCount, MessageAdded
from treadle.domain.values.outcome import OutcomeKind
from treadle.domain.values.process import BackgroundState, BackgroundView
from treadle.domain.values.tools import ToolLimits

RUNNING = BackgroundView("bg1", "serve", BackgroundState.RUNNING, 0.0)
EXITED = BackgroundView("bg2", "make", BackgroundState.EXITED, 1.0, 4.0, exit_code=2)


# The rules, with plain values ----------------------------------------------------------


def test_one_more_process_is_refused_only_at_the_limit() -> None:
    assert over_limit(running=3, limit=4) is None
    refused = over_limit(running=4, limit=4)
    assert refused is not None and "at most 4" in refused and "background_limit" in refused
    assert over_limit(running=0, limit=0) == (
        "background processes are turned off here (background_limit = 0)"
    )


def test_the_session_end_stops_what_still_runs() -> None:
    assert stopped_at_session_end([RUNNING, EXITED]) == ("bg1",)


def test_the_listing_and_the_status_say_what_runs() -> None:
    assert listing_lines([RUNNING, EXITED], 10.0) == [
        "bg1  running for 10.0 s  serve",
        "bg2  exited with code 2 after 3.0 s  make",
    ]
    assert status_part(1) == "1 background"
    assert status_part(0) == ""


# The loop, on fakes ----------------------------------------------------------------


Rig = tuple[Agent, BackgroundProcesses, RecordingTerminal, FakeClock, FakeRunner]


def _rig(script: list[R], processes: dict[str, FakeProcess], limit: int = 4) -> Rig:
    clock = FakeClock()
    runner = FakeRunner(clock, processes)
    terminal = RecordingTerminal()
    background = BackgroundProcesses()
    settings = TurnSettings(approval="auto", limits=ToolLimits(background_limit=limit))
    ports = TurnPorts(ScriptedModel(script), clock, runner, terminal)
    agent = Agent(ports, settings, core_tools(background))
    return agent, background, terminal, clock, runner


def _results(terminal: RecordingTerminal) -> list[str]:
    return [e.message.text for e in terminal.of_type(MessageAdded) if e.message.role == "tool"]


SERVER = FakeProcess(early="Serving on 8000\n", output="bye\n", duration=1_000.0)


async def test_a_background_command_returns_at_once_is_read_and_stopped() -> None:
    agent, background, terminal, clock, _ = _rig(
        [
            R.calling("bash", command="serve", background=True),
            R.calling("process_output", id="bg1"),
            R.calling("process_output", id="bg1"),
            R.calling("process_stop", id="bg1"),
            R.saying("done"),
        ],
        {"serve": SERVER},
    )
    outcome = await agent.run_turn("serve and stop")
    assert outcome.kind is OutcomeKind.FINISHED
    started, first, second, stopped = _results(terminal)
    assert started.startswith("Started in the background as bg1: serve")
    assert "is running" in first and "Serving on 8000" in first
    assert "Nothing new since the last read." in second  # what was read is gone
    assert "stopped after" in stopped
    assert clock.now() < 1_000.0  # nobody waited for the server's end
    assert background.views()[0].state is BackgroundState.STOPPED
    counts = [e.running for e in terminal.of_type(BackgroundCount)]
    assert counts == [1, 0]


async def test_over_the_limit_the_call_is_a_tool_error_and_the_turn_goes_on() -> None:
    agent, background, terminal, _, _ = _rig(
        [
            R.calling("bash", command="serve", background=True),
            R.calling("bash", command="serve", background=True),
            R.saying("one is enough"),
        ],
        {"serve": SERVER},
        limit=1,
    )
    outcome = await agent.run_turn("two servers")
    assert outcome.kind is OutcomeKind.FINISHED
    assert _results(terminal)[1].startswith("Not started: at most 1 background process may run")
    assert background.running == 1
    await background.stop_all()
    assert background.running == 0


async def test_a_process_that_ends_by_itself_says_how() -> None:
    agent, _, terminal, _, _ = _rig(
        [
            R.calling("bash", command="make", background=True),
            R.calling("bash", command="wait"),
            R.calling("process_output", id="bg1"),
            R.calling("process_output", id="bg9"),
            R.saying("ok"),
        ],
        {
            "make": FakeProcess("built\n", exit_code=2, duration=5.0),
            "wait": FakeProcess(duration=9),
        },
    )
    await agent.run_turn("build")
    _, _, read, unknown = _results(terminal)
    assert "exited with code 2 after 5.0 s" in read and "built" in read
    assert unknown == "no background process 'bg9'; the session's are: bg1"


async def test_a_stopped_turn_leaves_it_running_until_the_session_stops_it() -> None:
    stop = StopSignal()
    agent, background, _, clock, runner = _rig(
        [R.calling("bash", command="serve", background=True), R.calling("bash", command="slow")],
        {"serve": SERVER, "slow": FakeProcess(duration=50.0)},
    )
    agent.ports.terminal.bind_interrupt(lambda: None)

    async def press_esc_during_slow() -> None:
        while not any(spec.command == "slow" for spec in runner.specs):
            await clock.sleep(1.0)
        stop.set("interrupted")

    pressing = asyncio.ensure_future(press_esc_during_slow())
    outcome = await agent.run_turn("serve, then something slow", stop)
    await pressing
    assert outcome.kind is OutcomeKind.PAUSED
    assert background.running == 1  # Esc stopped the turn, not the server
    await background.stop_all()
    assert [view.state for view in background.views()] == [BackgroundState.STOPPED]
