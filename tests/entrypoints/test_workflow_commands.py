"""Slash commands from files (issue 23): ``/name args`` in a session and ``treadle
--command name args`` headless send the command's prompt with its arguments filled
in; a skill is a command too; ``/help`` lists them with where each came from; a
repository's ``model`` counts only in a trusted folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dependency_injector import providers

from tests.entrypoints.test_interactive_loop import TypedTasks
from tests.entrypoints.test_workflow_skills import repository, session, user_folders
from tests.processes import run_treadle, treadle_env, write_script
from treadle.adapters.fakes import ScriptedModel, ScriptedResponse
from treadle.domain.values.events import Notice
from treadle.entrypoints.container import end_session, start_session
from treadle.entrypoints.interactive import run_interactive
from treadle.entrypoints.trust import trust_folder
from treadle.ports.model import Model

__all__ = ["user_folders"]  # autouse: the user's folders are the test's own

REVIEW = "Review src/app.py and report problems of thread safety only."


async def typed(
    repo: Path, *lines: str, other: ScriptedModel | None = None
) -> tuple[TypedTasks, ScriptedModel]:
    """A session in ``repo`` where the person types ``lines``."""
    model = ScriptedModel([ScriptedResponse.saying("Done.")] * len(lines))
    prompt = TypedTasks(*lines)
    container, _ = session(repo, model)
    container.terminal.override(providers.Object(prompt))
    made: list[str] = []

    def models(name: str) -> Model:
        made.append(name)
        assert other is not None, f"no other model for {name}"
        return other

    container.models.override(providers.Object(models))
    agent = await start_session(container)
    found = container.workflows()
    await run_interactive(agent, prompt, found=found, models=container.models())
    await end_session(container)
    return prompt, model


def notices(prompt: TypedTasks, kind: str) -> list[str]:
    return [e.text for e in prompt.events if isinstance(e, Notice) and e.kind == kind]


async def test_slash_name_args_sends_the_expanded_prompt(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    prompt, model = await typed(repo, '/review src/app.py "thread safety"')
    (request,) = model.requests
    assert request.messages[0].text == (
        f'{REVIEW} Everything you were given: src/app.py "thread safety"'
    )
    path = repo / ".claude" / "commands" / "review.md"
    assert notices(prompt, "command_run") == [f"/review from {path}"]


async def test_a_skill_is_a_command_that_has_the_model_load_it(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    _, model = await typed(repo, "/release-notes for v2.0")
    text = model.requests[0].messages[0].text
    assert "call the skill tool with name 'release-notes'" in text
    assert text.endswith("ARGUMENTS: for v2.0")


async def test_help_lists_the_commands_and_skills_with_where_each_came_from(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    prompt, model = await typed(repo, "/help")
    assert not model.requests
    ((listing, _),) = prompt.said
    review = next(line for line in listing if line.startswith("/review FILE CONCERN"))
    assert review.endswith(
        f"Review a file for one concern  [project: {repo}/.claude/commands/review.md]"
    )
    skill = next(line for line in listing if line.startswith("/pdf-forms"))
    assert "skill: Fill in PDF forms" in skill and "[project: " in skill
    assert listing[0].startswith("/help")


async def test_a_repository_s_command_model_is_ignored_and_said_in_an_untrusted_folder(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path, "claude_code")
    prompt, model = await typed(repo, "/quick what is 2+2")
    assert model.requests[0].messages[0].text.startswith("Answer in one sentence.")
    (line,) = notices(prompt, "workflows_untrusted")
    assert line.startswith(
        "model of command /quick, agent fast-helper: ignored, as this folder is not trusted"
    )
    assert line.endswith(f"treadle trust {repo.resolve()}")


async def test_in_a_trusted_folder_the_command_runs_on_its_model(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    trust_folder(str(repo), os.environ)
    other = ScriptedModel([ScriptedResponse.saying("Four.")])
    prompt, model = await typed(repo, "/quick what is 2+2", "and then?", other=other)
    assert [r.messages[-1].text for r in other.requests] == [
        "Answer in one sentence.\n\nARGUMENTS: what is 2+2"
    ]
    assert model.requests[0].messages[-1].text == "and then?"  # the session's model after
    assert notices(prompt, "workflows_untrusted") == []
    assert notices(prompt, "command_run")[0].endswith("on openai:gpt-4.1-mini")


async def test_a_built_in_command_wins_over_a_file_of_its_name(tmp_path: Path) -> None:
    repo = repository(tmp_path, "codex")
    (repo / ".claude" / "commands").mkdir(parents=True)
    (repo / ".claude" / "commands" / "help.md").write_text("Never sent.\n")
    prompt, model = await typed(repo, "/help")
    assert not model.requests and prompt.said


@pytest.mark.slow
def test_treadle_command_runs_one_headless(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    script = write_script(tmp_path, {"text": "Reviewed."})
    env = treadle_env(tmp_path, HOME=str(tmp_path / "home"))
    args = [
        "--model",
        f"script:{script}",
        "--json",
        "--command",
        "review",
        'src/app.py "thread safety"',
    ]
    result = run_treadle(*args, cwd=repo, env=env)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    started = next(e for e in events if e["type"] == "turn_started")
    assert started["task"].startswith(REVIEW)
    unknown = run_treadle(
        "--model", f"script:{script}", "--print", "--command", "nope", cwd=repo, env=env
    )
    assert unknown.returncode == 2
    assert unknown.stderr.strip().startswith(
        "treadle: unknown command /nope; the commands are: /quick, /review"
    )
    assert "Traceback" not in unknown.stderr
