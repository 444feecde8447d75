"""A sub-agent with ``isolation: "worktree"`` (issue 27): it works in a git worktree of
its own, and its caller reads its changes as a diff; one that changed nothing leaves no
worktree behind. A real repository, real commands, a scripted model."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from treadle.adapters.fakes import RecordingTerminal, ScriptedModel
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.system_clock import SystemClock
from treadle.adapters.worktree_isolation import WorktreeIsolation
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.values.events import MessageAdded
from treadle.domain.values.outcome import OutcomeKind

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@localhost"]


def _git(folder: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *IDENTITY, *arguments], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "f.txt").write_text("base\n")
    _git(repo, "add", "f.txt")
    _git(repo, "commit", "-qm", "base")
    return repo


async def _turn(workspace: Path, root: Path, sub_agent_runs: str) -> tuple[Agent, str]:
    model = ScriptedModel(
        [
            R.calling("agent", task="change f.txt", isolation="worktree"),
            R.calling("bash", command=sub_agent_runs),  # the sub-agent's
            R.saying("Changed it."),  # its report
            R.saying("Done."),
        ]
    )
    terminal = RecordingTerminal()
    ports = TurnPorts(
        model, SystemClock(), SubprocessRunner(), terminal, isolation=WorktreeIsolation(str(root))
    )
    agent = Agent(ports, TurnSettings(workspace=str(workspace), approval="auto"), core_tools())
    outcome = await agent.run_turn("delegate")
    assert outcome.kind is OutcomeKind.FINISHED
    (result,) = [
        e.message.text
        for e in terminal.of_type(MessageAdded)
        if not e.agent and e.message.role == "tool"
    ]
    return agent, result


async def test_its_changes_stay_in_its_worktree_and_come_back_as_a_diff(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    root = tmp_path / "worktrees"
    agent, result = await _turn(repo, root, "echo changed > f.txt && echo new > g.txt")
    assert "isolation" in agent.tools["agent"].spec.parameters["properties"]
    assert result.startswith("Changed it.")
    assert "-base\n+changed" in result and "+new" in result and "b/g.txt" in result
    (tree,) = [p for p in root.rglob("f.txt")]
    assert tree.read_text() == "changed\n"
    assert (repo / "f.txt").read_text() == "base\n" and not (repo / "g.txt").exists()
    branch = _git(tree.parent, "branch", "--show-current")
    assert branch.startswith("treadle/agent-1-") and f"on the branch {branch}" in result


async def test_one_that_changed_nothing_leaves_no_worktree(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    root = tmp_path / "worktrees"
    _, result = await _turn(repo, root, "cat f.txt")
    assert "changed nothing there (the worktree is removed)" in result
    assert not list(root.rglob("f.txt"))
    assert "treadle/" not in _git(repo, "branch", "--list")
    assert _git(repo, "worktree", "list").count("\n") == 0  # the main checkout alone


async def test_outside_a_repository_the_call_is_refused_and_the_turn_goes_on(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    model = ScriptedModel([R.calling("agent", task="x", isolation="worktree"), R.saying("ok")])
    terminal = RecordingTerminal()
    isolation = WorktreeIsolation(str(tmp_path / "worktrees"))
    ports = TurnPorts(model, SystemClock(), SubprocessRunner(), terminal, isolation=isolation)
    agent = Agent(ports, TurnSettings(workspace=str(plain), approval="auto"), core_tools())
    assert (await agent.run_turn("go")).kind is OutcomeKind.FINISHED
    (result,) = [e.message.text for e in terminal.of_type(MessageAdded) if e.message.role == "tool"]
    assert (
        result
        == f'Error: isolation "worktree": the workspace {plain.resolve()} is in no git repository'
    )
