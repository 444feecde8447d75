"""Skills (issue 23): a repository laid out for Claude Code or for Codex offers its
skills in every request, and the ``skill`` tool loads one's body and lists its files."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from treadle.adapters.fakes import RecordingTerminal, ScriptedModel, ScriptedResponse
from treadle.adapters.fakes.window import FakeWindow
from treadle.domain.rules.skills import HEADING
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import Notice
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.container import Container, end_session, start_session

FIXTURES = Path(__file__).parents[1] / "fixtures" / "workflows"


def repository(tmp_path: Path, layout: str) -> Path:
    """A copy of a fixture repository, its own project root."""
    repo = tmp_path / layout
    shutil.copytree(FIXTURES / layout, repo)
    (repo / ".git").mkdir()
    return repo


@pytest.fixture(autouse=True)
def user_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty configuration folder and home: the user's own skills are the test's."""
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("TREADLE_CONFIG_DIR", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path / "state"))
    return config


def session(
    workspace: Path, model: ScriptedModel, **values: Any
) -> tuple[Container, RecordingTerminal]:
    container = Container()
    app = replace(AppConfig(model="demo", workspace=str(workspace)), **values)
    terminal = RecordingTerminal()
    container.app.override(providers.Object(app))
    container.model.override(providers.Object(model))
    container.terminal.override(providers.Object(terminal))
    return container, terminal


async def one_turn(workspace: Path, model: ScriptedModel, task: str = "go") -> RecordingTerminal:
    container, terminal = session(workspace, model)
    agent = await start_session(container)
    await agent.run_turn(task)
    await end_session(container)
    return terminal


def call_skill(**arguments: str) -> ScriptedResponse:
    """A call of the skill tool (its ``name`` argument is ``calling``'s own)."""
    return ScriptedResponse((), (ToolCall("", "skill", json.dumps(arguments)),), Usage(10, 5))


def notices(terminal: RecordingTerminal, kind: str) -> list[str]:
    return [e.text for e in terminal.events if isinstance(e, Notice) and e.kind == kind]


def tool_results(model: ScriptedModel) -> list[Message]:
    return [m for m in model.requests[-1].messages if m.role == "tool"]


async def test_a_claude_code_repository_offers_its_skills_in_every_request(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    terminal = await one_turn(repo, model)
    system = model.requests[0].system
    assert HEADING.splitlines()[0] in system  # marked as the repository's
    assert "- release-notes: Write release notes from the git log" in system
    assert "- pdf-forms: Fill in PDF forms" in system
    assert system.index("Use the release-notes skill") < system.index(HEADING.splitlines()[0])
    assert "skill" in [spec.name for spec in model.requests[0].tools]
    assert notices(terminal, "skills_offered") == [
        "skills offered to the model: pdf-forms, release-notes"
    ]


async def test_the_skill_tool_returns_the_body_and_lists_the_files_beside_it(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path, "claude_code")
    model = ScriptedModel([call_skill(name="release-notes"), ScriptedResponse.saying("Done.")])
    terminal = await one_turn(repo, model, "write the release notes")
    (result,) = tool_results(model)
    assert not result.is_error
    assert "1. Run `git describe --tags --abbrev=0`" in result.text
    assert "name: release-notes" not in result.text  # the front matter is not the body
    assert "- template.md" in result.text and "- SKILL.md" not in result.text
    loaded = notices(terminal, "skill_loaded")
    assert loaded == [
        f"skill release-notes loaded from {repo}/.claude/skills/release-notes/SKILL.md"
    ]


async def test_the_skill_tool_reads_a_file_beside_a_skill(tmp_path: Path) -> None:
    repo = repository(tmp_path, "codex")
    model = ScriptedModel(
        [
            call_skill(name="changelog", file="references/style.md"),
            call_skill(name="changelog", file="../../../AGENTS.md"),
            ScriptedResponse.saying("Done."),
        ]
    )
    await one_turn(repo, model)
    style, outside = tool_results(model)
    assert style.text == "One line per change, in the past tense.\n"
    assert outside.is_error and "outside the skill's folder" in outside.text


async def test_a_skill_s_allowed_tools_are_said_to_change_nothing(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    model = ScriptedModel([call_skill(name="pdf-forms"), ScriptedResponse.saying("Done.")])
    await one_turn(repo, model)
    (result,) = tool_results(model)
    assert "allowed-tools: Read, Bash(sh:*)" in result.text
    assert "changes nothing" in result.text
    assert "- scripts/fill.sh" in result.text


async def test_an_unknown_skill_is_a_tool_error_naming_the_known_ones(tmp_path: Path) -> None:
    repo = repository(tmp_path, "codex")
    model = ScriptedModel([call_skill(name="deploy"), ScriptedResponse.saying("Done.")])
    await one_turn(repo, model)
    (result,) = tool_results(model)
    assert result.is_error and "unknown skill 'deploy'; the skills are: changelog" in result.text


async def test_a_codex_repository_sends_agents_md_and_its_skills(tmp_path: Path) -> None:
    repo = repository(tmp_path, "codex")
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    await one_turn(repo, model)
    system = model.requests[0].system
    assert "Keep the changelog up to date" in system
    assert "- changelog: Add an entry to CHANGELOG.md in the house style." in system


async def test_the_user_s_skill_of_a_name_wins_over_the_repository_s(
    tmp_path: Path, user_folders: Path
) -> None:
    repo = repository(tmp_path, "codex")
    mine = user_folders / "skills" / "changelog"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("---\ndescription: My own changelog rules.\n---\nMine.\n")
    model = ScriptedModel([call_skill(name="changelog"), ScriptedResponse.saying("Done.")])
    await one_turn(repo, model)
    system = model.requests[0].system
    assert "- changelog (the user's): My own changelog rules." in system
    assert "house style" not in system
    (result,) = tool_results(model)
    assert "Mine." in result.text


async def test_the_list_is_capped_at_two_percent_of_the_window_and_says_so(tmp_path: Path) -> None:
    repo = repository(tmp_path, "codex")
    skills = repo / ".agents" / "skills"
    for number in range(40):
        folder = skills / f"skill-{number:02}"
        folder.mkdir()
        (folder / "SKILL.md").write_text(f"---\ndescription: {'Does a thing. ' * 8}\n---\nBody.\n")
    # 2% of a 20,000-token window is 1,400 bytes: a few skills of 40.
    model = ScriptedModel([ScriptedResponse.saying("Done.")], window=FakeWindow(20_000))
    terminal = await one_turn(repo, model)
    system = model.requests[0].system
    assert "- changelog:" in system
    assert "- skill-39:" not in system
    assert "more skills left out: the list is capped at 2% of the context window" in system
    (line,) = notices(terminal, "skills_offered")
    assert "left out by the cap of 1,400 bytes" in line and "skill-39" in line


async def test_a_repository_without_skills_has_no_list_and_no_skill_tool(tmp_path: Path) -> None:
    repo = tmp_path / "plain"
    (repo / ".git").mkdir(parents=True)
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    terminal = await one_turn(repo, model)
    assert HEADING.splitlines()[0] not in model.requests[0].system
    assert "skill" not in [spec.name for spec in model.requests[0].tools]
    assert notices(terminal, "skills_offered") == []


async def test_a_skill_without_a_description_is_said_and_not_offered(tmp_path: Path) -> None:
    repo = repository(tmp_path, "codex")
    bad = repo / ".claude" / "skills" / "broken"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\nname: broken\n---\nNo description.\n")
    model = ScriptedModel([ScriptedResponse.saying("Done.")])
    terminal = await one_turn(repo, model)
    assert "broken" not in model.requests[0].system
    (line,) = notices(terminal, "workflows_unreadable")
    assert f"{bad}/SKILL.md: description is missing" in line


async def test_slash_skills_lists_them_with_paths_and_sizes_in_a_session(tmp_path: Path) -> None:
    from tests.entrypoints.test_interactive_loop import TypedTasks
    from treadle.entrypoints.interactive import run_interactive, workflow_commands

    repo = repository(tmp_path, "claude_code")
    prompt = TypedTasks("/skills")
    container, _ = session(repo, ScriptedModel([]))
    container.terminal.override(providers.Object(prompt))
    agent = await start_session(container)
    commands = workflow_commands(container, agent, prompt)
    assert await run_interactive(agent, prompt, commands=commands) == 0
    await end_session(container)
    ((lines, problem),) = prompt.said
    assert not problem and lines[0].startswith("skills: 2, offered in")
    skill = repo / ".claude" / "skills" / "release-notes" / "SKILL.md"
    assert any(
        line.split()
        == ["release-notes", f"{skill.stat().st_size}", "bytes", str(skill), "(project)"]
        for line in lines
    )


def test_treadle_context_lists_the_skills_with_paths_and_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from treadle.entrypoints.commands import run_subcommand

    repo = repository(tmp_path, "codex")
    assert run_subcommand(["context", "--workspace", str(repo)]) == 0
    out = capsys.readouterr().out
    skill = repo / ".agents" / "skills" / "changelog" / "SKILL.md"
    assert f"{skill.stat().st_size} bytes  {skill}  (project)" in out
    assert "skills: 1, offered in" in out and "2% of a 128,000-token window" in out
