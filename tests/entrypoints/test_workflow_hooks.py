"""Hooks (issue 23): a repository laid out for Claude Code, its hooks in
``.claude/settings.json``, drives turns against the scripted model with the session's
real runner: a PreToolUse hook that exits 2 blocks ``rm``, a Stop hook sends the turn
on once, a hook that sleeps for ever is killed at its deadline and leaves nothing, and
none of it runs in a folder the user has not trusted — until ``treadle trust``."""

from __future__ import annotations

import io
import json
import os
from dataclasses import replace
from pathlib import Path

from tests.entrypoints.test_workflow_skills import notices, repository, session, user_folders
from tests.processes import gone_within, wait_for_pid
from treadle.adapters.fakes import ScriptedModel, ScriptedResponse
from treadle.domain.values.conversation import Message
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome
from treadle.entrypoints.commands import run_subcommand, trust
from treadle.entrypoints.config import load_config
from treadle.entrypoints.container import end_session, start_session
from treadle.entrypoints.hooks import hook_lines, read_session_hooks

__all__ = ["user_folders"]  # autouse: the user's folders are the test's own

R = ScriptedResponse


async def turn(repo: Path, model: ScriptedModel, task: str = "go"):
    container, terminal = session(repo, model, approval="auto")
    agent = await start_session(container)
    try:
        outcome = await agent.run_turn(task)
    finally:
        await end_session(container)
    return outcome, terminal


def trusted(repo: Path) -> None:
    out = io.StringIO()
    assert trust(str(repo), out) == 0
    assert ".claude/settings.json" in out.getvalue()


def results(model: ScriptedModel) -> list[Message]:
    return [m for m in model.requests[-1].messages if m.role == "tool"]


async def test_a_pre_tool_use_hook_that_exits_2_blocks_rm(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    (repo / "build").mkdir()
    trusted(repo)
    model = ScriptedModel(
        [R.calling("bash", command="rm -rf build"), R.calling("bash", command="ls"), R.saying("ok")]
    )
    outcome, terminal = await turn(repo, model)
    assert outcome.kind is OutcomeKind.FINISHED
    assert (repo / "build").is_dir()  # it never ran
    refused, listed = results(model)
    assert refused.is_error
    assert "rm is not allowed in this repository; use git rm or git clean" in refused.text
    assert "build" in listed.text and not listed.is_error
    assert notices(terminal, "hook_refused") == [
        "PreToolUse bash: rm is not allowed in this repository; use git rm or git clean"
    ]


async def test_a_stop_hook_makes_the_turn_go_on_once(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    (repo / "TODO.md").write_text("- [x] read the code\n- [ ] write the test\n")
    trusted(repo)
    model = ScriptedModel([R.saying("Done."), R.saying("Still not done, sorry.")])
    outcome, _ = await turn(repo, model)
    assert outcome.kind is OutcomeKind.FINISHED
    assert len(model.requests) == 2  # on once, and then it may end
    went_on = model.requests[1].messages[-1]
    assert went_on.role == "user"
    assert "TODO.md still has open items: write the test" in went_on.text


async def test_a_hook_that_sleeps_forever_is_killed_at_its_deadline_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path, "claude_code")
    pid = tmp_path / "hook.pid"
    hanging = f"sleep 1000 & echo $! > {pid}; sleep 1000"
    local = {"hooks": {"PostToolUse": [{"hooks": [{"command": hanging, "timeout": 0.5}]}]}}
    (repo / ".claude" / "settings.local.json").write_text(json.dumps(local))
    trusted(repo)
    model = ScriptedModel([R.calling("bash", command="echo hello"), R.saying("ok")])
    outcome, terminal = await turn(repo, model)
    assert outcome.kind is OutcomeKind.FINISHED
    (result,) = results(model)
    assert "hello" in result.text and not result.is_error
    (failed,) = notices(terminal, "hook_failed")
    assert failed.startswith("PostToolUse hook 'sleep 1000 &") and failed.endswith(
        "was stopped at its deadline of 0.5 s"
    )
    assert gone_within(wait_for_pid(pid))


async def test_an_untrusted_folder_s_hooks_do_not_run_and_after_treadle_trust_they_do(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path, "claude_code")
    (repo / "build").mkdir()
    model = ScriptedModel([R.calling("bash", command="rm -rf build"), R.saying("ok")])
    _, terminal = await turn(repo, model)
    assert not (repo / "build").exists()  # no hook stood in its way
    (line,) = notices(terminal, "hooks_untrusted")
    assert line == (
        f"hooks of {repo}/.claude/settings.json (PreToolUse, Stop): not run, as this "
        f"folder is not trusted; if they are yours: treadle trust {repo}"
    )

    (repo / "build").mkdir()
    trusted(repo)
    model = ScriptedModel([R.calling("bash", command="rm -rf build"), R.saying("ok")])
    _, terminal = await turn(repo, model)
    assert (repo / "build").is_dir()
    assert notices(terminal, "hooks_untrusted") == []


async def test_settings_changed_since_the_folder_was_trusted_are_asked_again(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path, "claude_code")
    trusted(repo)
    settings = repo / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace("no_rm.py", "no_rm.py; curl evil"))
    model = ScriptedModel([R.saying("ok")])
    _, terminal = await turn(repo, model)
    (line,) = notices(terminal, "hooks_untrusted")
    assert "they changed since you trusted this folder" in line


async def test_a_user_prompt_submit_hook_refuses_the_prompt(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    guard = "grep -q 'to prod' && { echo 'no deploys from an agent' >&2; exit 2; } || true"
    local = {"hooks": {"UserPromptSubmit": [{"hooks": [{"command": guard}]}]}}
    (repo / ".claude" / "settings.local.json").write_text(json.dumps(local))
    trusted(repo)
    model = ScriptedModel([R.saying("deploying")])
    outcome, _ = await turn(repo, model, "deploy to prod now")
    assert outcome == TurnOutcome(
        OutcomeKind.BLOCKED, "a UserPromptSubmit hook refused the prompt: no deploys from an agent"
    )
    assert model.requests == []


def test_trust_records_the_claude_settings_beside_the_project_file(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    trusted(repo)
    record = Path(os.environ["TREADLE_CONFIG_DIR"]) / "trusted-folders"
    (line,) = record.read_text().splitlines()
    assert line.startswith("none,claude=sha256:") and line.endswith(f" {os.path.realpath(repo)}")


def test_treadle_context_lists_the_hooks_and_what_trust_left_out(tmp_path: Path) -> None:
    repo = repository(tmp_path, "claude_code")
    out = io.StringIO()
    assert run_subcommand(["context", "--workspace", str(repo)], out) == 0
    shown = out.getvalue().splitlines()
    assert "hooks: 0" in shown
    assert any(line.startswith("  hooks of ") and "not run" in line for line in shown)
    trusted(repo)
    out = io.StringIO()
    assert run_subcommand(["context", "--workspace", str(repo)], out) == 0
    shown = out.getvalue().splitlines()
    assert "hooks: 2" in shown
    assert (
        '  PreToolUse Bash: python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/no_rm.py  '
        f"(20 s; {repo}/.claude/settings.json)"
    ) in shown


async def test_what_treadle_cannot_run_of_claude_code_s_settings_is_said_once(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path, "claude_code")
    settings = repo / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"].append(
        {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Is this safe?"}]}
    )
    data["hooks"]["SessionEnd"] = [{"hooks": [{"type": "command", "command": "bye"}]}]
    settings.write_text(json.dumps(data))
    (repo / ".claude" / "settings.local.json").write_text("{not json")
    trusted(repo)
    model = ScriptedModel([R.saying("ok")])
    outcome, terminal = await turn(repo, model)
    assert outcome.kind is OutcomeKind.FINISHED
    (line,) = notices(terminal, "hooks_unreadable")
    assert "PreToolUse[1].hooks[0].type: 'prompt' hooks are not run by treadle" in line
    assert "SessionEnd: not an event treadle runs hooks at" in line
    assert f"{repo}/.claude/settings.local.json: cannot be read" in line


def test_each_hook_is_listed_with_the_file_that_set_it(tmp_path: Path, user_folders: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    stop = '[[hooks.Stop]]\nhooks = [{{ type = "command", command = "{}" }}]\n'
    (user_folders / "config.toml").write_text(stop.format("mine"))
    (work / ".treadle.toml").write_text(stop.format("theirs"))
    trusted(work)
    app = load_config(flags={}, environ=os.environ, cwd=str(work))
    lines = hook_lines(read_session_hooks(replace(app, workspace=str(work))))
    assert lines == [
        "hooks: 2",
        f"  Stop: mine  (60 s; user file {user_folders / 'config.toml'})",
        f"  Stop: theirs  (60 s; project file {work / '.treadle.toml'})",
    ]
