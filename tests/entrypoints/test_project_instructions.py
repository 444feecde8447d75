"""A session sends the project's instructions right after the system prompt, in every
request, whatever becomes of the history; ``treadle context`` shows what it reads."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from tests.processes import run_treadle, treadle_env, write_script
from treadle.adapters.fakes import RecordingTerminal, ScriptedModel, ScriptedResponse
from treadle.domain.loop.prompt import SYSTEM_PROMPT
from treadle.domain.rules.history import History
from treadle.domain.values.conversation import Message
from treadle.domain.values.events import Notice
from treadle.entrypoints.commands import run_subcommand
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.container import Container, end_session, start_session


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose package folder is the workspace, and a user with an AGENTS.md."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    (repo / "AGENTS.md").write_text("Run make test before you answer.\n")
    (repo / "pkg" / "CLAUDE.md").write_text("In pkg, keep functions short.\n")
    config = tmp_path / "config"
    config.mkdir()
    (config / "AGENTS.md").write_text("Answer in English.\n")
    monkeypatch.setenv("TREADLE_CONFIG_DIR", str(config))
    return repo / "pkg"


def session(workspace: Path, model: ScriptedModel, **values: Any) -> Container:
    container = Container()
    app = replace(AppConfig(model="demo", workspace=str(workspace)), **values)
    container.app.override(providers.Object(app))
    container.model.override(providers.Object(model))
    container.terminal.override(providers.Object(RecordingTerminal()))
    return container


async def test_the_instructions_follow_the_system_prompt_in_the_order_read(project: Path) -> None:
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    container = session(project, model)
    agent = await start_session(container)
    await agent.run_turn("go")
    await end_session(container)
    system = model.requests[0].system
    assert system.startswith(SYSTEM_PROMPT)
    rules = ["Answer in English.", "Run make test", "keep functions short"]
    assert [system.index(rule) for rule in rules] == sorted(system.index(rule) for rule in rules)
    assert str(project / "CLAUDE.md") in system


async def test_the_instructions_survive_a_compaction_of_the_history(project: Path) -> None:
    model = ScriptedModel([ScriptedResponse.saying("First."), ScriptedResponse.saying("Second.")])
    container = session(project, model)
    agent = await start_session(container)
    await agent.run_turn("first task")
    # A compaction replaces the history by a summary: the instructions are not part
    # of the history, so the next request carries them exactly as before.
    agent.history = History([Message.user("Summary: the first task is done.")])
    await agent.run_turn("second task")
    await end_session(container)
    before, after = (request.system for request in model.requests)
    assert after == before and "Run make test before you answer." in after
    assert not any("make test" in message.text for message in model.requests[1].messages)


async def test_instructions_can_be_turned_off(project: Path) -> None:
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    container = session(project, model, project_instructions=False)
    agent = await start_session(container)
    await agent.run_turn("go")
    await end_session(container)
    assert model.requests[0].system == SYSTEM_PROMPT


async def test_instructions_cut_by_the_limit_are_reported_once_on_the_screen(
    project: Path,
) -> None:
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    container = session(project, model, project_instructions_limit=30)
    terminal = container.terminal()
    assert isinstance(terminal, RecordingTerminal)
    agent = await start_session(container)
    await agent.run_turn("go")
    await end_session(container)
    notices = [event for event in terminal.events if isinstance(event, Notice)]
    assert [notice.kind for notice in notices] == ["instructions_cut"]
    assert "capped at 30 bytes" in notices[0].text


def test_treadle_context_lists_the_files_read_and_their_sizes(project: Path) -> None:
    out = io.StringIO()
    assert run_subcommand(["context", "--workspace", str(project)], out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == f"project root: {project.parent.resolve()}"
    listed = [line for line in lines if line.startswith("  ")]
    assert "19 bytes" in listed[0] and "(yours)" in listed[0]
    assert str(project.parent / "AGENTS.md") in listed[1]
    assert "stands in for AGENTS.md" in listed[2]
    assert any(line.startswith("sent after the system prompt:") for line in lines)


def test_treadle_context_says_when_instructions_are_off(project: Path) -> None:
    (project / ".treadle.toml").write_text("project_instructions = false\n")
    out = io.StringIO()
    assert run_subcommand(["context", "--workspace", str(project)], out) == 0
    assert "off (project_instructions = false, from project file" in out.getvalue()


@pytest.mark.slow
def test_the_command_line_sends_them_to_the_model(project: Path, tmp_path: Path) -> None:
    """The whole path: a real session, and the notice on its screen."""
    (project / ".treadle.toml").write_text("project_instructions_limit = 40\n")
    env = treadle_env(tmp_path)  # its config folder is the user's, with their AGENTS.md
    script = write_script(tmp_path, {"text": "Hello."})
    result = run_treadle("--model", f"script:{script}", "--print", "hi", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    assert "warning: project instructions are capped at 40 bytes" in result.stdout
