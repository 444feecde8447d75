"""The bash tool tells the model how the command ended and what it printed."""

from __future__ import annotations

from treadle.adapters.fakes import FakeProcess
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.loop.builtin_tools import describe_process, process_status
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.values.events import ToolFinished
from treadle.domain.values.process import ProcessResult
from treadle.domain.values.tools import ToolLimits


async def run_bash(rig, process: FakeProcess, limits: ToolLimits | None = None, **arguments):
    r = rig(
        [R.calling("bash", command="cmd", **arguments), R.saying("ok")],
        {"cmd": process},
        settings=TurnSettings(limits=limits or ToolLimits()),
    )
    await r.agent.run_turn("x")
    return r, r.model.requests[1].messages[-1]


async def test_a_command_past_its_deadline_is_stopped_and_says_so(rig):
    r, result = await run_bash(rig, FakeProcess("started\n", duration=50), timeout=5)
    assert result.is_error
    assert result.text.startswith("The command hit its deadline of 5 s and was stopped.")
    assert r.clock.now() == 5.0
    assert r.terminal.of_type(ToolFinished)[0].status == "deadline 5 s · 5.00 s"


async def test_the_models_deadline_is_capped_by_configuration(rig):
    limits = ToolLimits(default_timeout=10, max_timeout=20)
    r, _ = await run_bash(rig, FakeProcess(duration=100), limits, timeout=999)
    assert r.runner.specs[0].timeout == 20
    r, _ = await run_bash(rig, FakeProcess(duration=100), limits)
    assert r.runner.specs[0].timeout == 10


async def test_a_failing_command_is_an_error_with_its_exit_code_and_output(rig):
    _, result = await run_bash(rig, FakeProcess("boom\n", exit_code=2))
    assert result.is_error
    assert result.text == "Exit code 2. Duration 0.00 s.\nboom\n"


async def test_long_output_keeps_head_and_tail_and_counts_what_was_left_out(rig):
    output = "".join(f"line {n}\n" for n in range(10_000))
    _, result = await run_bash(rig, FakeProcess(output), ToolLimits(output_limit=200))
    assert "Output was cut:" in result.text
    assert "line 0\n" in result.text and "line 9999\n" in result.text
    assert len(result.text) < 600


def test_a_signal_and_a_saved_full_output_are_named():
    killed = ProcessResult(
        "", None, 9, 1.0, truncated=True, omitted_bytes=10, full_output_path="/s/o.log"
    )
    assert process_status(killed, 5) == "signal 9 · 1.00 s · output cut"
    text = describe_process(killed, 5)
    assert "killed by signal 9" in text
    assert "10 bytes left out. The full output is in /s/o.log." in text
    assert text.endswith("(no output)")


async def test_a_command_that_cannot_start_is_a_tool_error(rig):
    r = rig([R.calling("bash", command="  "), R.saying("ok")])
    await r.agent.run_turn("x")
    assert "could not start the command: empty command" in r.model.requests[1].messages[-1].text
