"""Background processes in a session (issue 27): ``/processes`` lists them, the status
line counts them, the session's end stops what still runs and says so."""

from __future__ import annotations

from pathlib import Path

from tests.entrypoints.test_interactive_loop import TypedTasks
from treadle.adapters.blessed_terminal.display import TurnView
from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.domain.values.events import BackgroundCount, Notice
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.container import Container, end_session, start_session
from treadle.entrypoints.injector import providers
from treadle.entrypoints.interactive import process_commands, run_interactive


async def test_slash_processes_lists_them_and_the_end_of_the_session_stops_them(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    prompt = TypedTasks("start the server", "/processes")
    container = Container()
    container.app.override(providers.Object(AppConfig(model="demo", workspace=str(tmp_path))))
    container.model.override(
        providers.Object(
            ScriptedModel(
                [R.calling("bash", command="serve", background=True), R.saying("It runs.")]
            )
        )
    )
    container.clock.override(providers.Object(clock))
    container.runner.override(
        providers.Object(FakeRunner(clock, {"serve": FakeProcess(duration=10_000.0)}))
    )
    container.terminal.override(providers.Object(prompt))
    agent = await start_session(container)
    commands = process_commands(container, prompt)
    assert await run_interactive(agent, prompt, commands=commands) == 0
    ((lines, problem),) = prompt.said
    assert not problem
    (line,) = lines
    assert line.startswith("bg1  running for ") and line.endswith("  serve")
    await end_session(container)
    (notice,) = [e for e in prompt.events if isinstance(e, Notice)]
    assert notice.kind == "background_stopped"
    assert notice.text == "stopped 1 background process as the session ended: bg1 (serve)"
    assert [view.state.value for view in container.background().views()] == ["stopped"]


def test_the_status_line_counts_the_background_processes_from_turn_to_turn() -> None:
    view = TurnView()
    view.lines_for(BackgroundCount(2), 0.0)
    view.begin(1.0)  # the next turn: they still run
    (status,) = view.live_rows(2.0, 200)
    assert "2 background" in status
    view.lines_for(BackgroundCount(0), 3.0)
    assert "background" not in view.live_rows(4.0, 200)[-1]
