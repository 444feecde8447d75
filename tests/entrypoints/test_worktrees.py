"""``treadle --worktree``, ``treadle worktree list|remove`` and ``treadle batch --worktree``
(issue 27), on real git repositories."""

from __future__ import annotations

import doctest
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.processes import run_treadle, treadle_env
from treadle.domain.rules import background, fork, worktree
from treadle.domain.rules.worktree import (
    WorktreeEntry,
    check_name,
    include_patterns,
    name_for,
    read_worktree_list,
    sessions_worktrees,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@localhost",
}

# The rules, with plain values ----------------------------------------------------------


def test_the_rules_examples_hold() -> None:
    for module in (worktree, fork, background):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_a_name_must_make_a_branch_and_a_folder_that_stay_in_place() -> None:
    assert check_name("fix-login_2.b") is None
    for bad in ("", "-x", ".x", "a..b", "a/b", "x.lock", "a b", "x" * 81):
        assert check_name(bad) is not None, bad
    assert name_for("issue #7 / login") == "issue-7-login"
    assert check_name(name_for("../../etc")) is None


def test_only_treadles_worktrees_are_listed() -> None:
    listed = read_worktree_list(
        "worktree /r\nHEAD aa\nbranch refs/heads/main\n\n"
        "worktree /t/x\nHEAD bb\nbranch refs/heads/treadle/x\n\n"
        "worktree /d\nHEAD cc\ndetached\n\n"
    )
    assert sessions_worktrees(listed) == [WorktreeEntry("/t/x", "treadle/x", "bb")]


def test_the_main_checkout_on_a_treadle_branch_is_not_listed_as_one_of_treadles() -> None:
    # git lists the main worktree first; checked out on treadle/x (a branch looked at in
    # place), it is still the repository's own checkout, not a worktree to remove
    listed = read_worktree_list(
        "worktree /r\nHEAD aa\nbranch refs/heads/treadle/x\n\n"
        "worktree /t/y\nHEAD bb\nbranch refs/heads/treadle/y\n\n"
    )
    assert sessions_worktrees(listed) == [WorktreeEntry("/t/y", "treadle/y", "bb")]


def test_worktreeinclude_names_files_inside_the_repository_only() -> None:
    assert include_patterns(".env\n# no\n\n../x\n/etc/passwd\nsub/../../y\nlocal/*.toml\n") == [
        ".env",
        "local/*.toml",
    ]


# The commands, on a real repository ---------------------------------------------------


def _git(folder: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *arguments],
        capture_output=True,
        text=True,
        check=True,
        env={**treadle_env(), **IDENTITY},
    )
    return done.stdout.strip()


def _repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "f.txt").write_text("base\n")
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".worktreeinclude").write_text(".env\n")
    (repo / ".env").write_text("LOCAL_SETTING=1\n")
    _git(repo, "add", "f.txt", ".gitignore", ".worktreeinclude")
    _git(repo, "commit", "-qm", "base")
    return repo


def _script(folder: Path, name: str, command: str) -> str:
    path = folder / f"{name}.json"
    calls = [{"name": "bash", "arguments": {"command": command}}]
    path.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "Done."}]}))
    return f"script:{path}"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**treadle_env(tmp_path), **IDENTITY}


@pytest.mark.slow
def test_a_worktree_session_edits_its_branch_not_the_checkout_and_remove_removes_it(
    tmp_path: Path,
) -> None:
    repo = _repository(tmp_path)
    env = _env(tmp_path)
    edit = _script(tmp_path, "edit", "echo changed > f.txt && git commit -qam change && cat .env")
    done = run_treadle("--worktree", "w1", "--model", edit, "--print", "edit f", cwd=repo, env=env)
    assert done.returncode == 0, done.stderr
    tree = Path(_git(repo, "worktree", "list", "--porcelain").split("worktree ")[2].split()[0])
    assert tree.parent.parent == tmp_path / "state" / "worktrees"
    assert (tree / "f.txt").read_text() == "changed\n"
    assert (repo / "f.txt").read_text() == "base\n"  # the checkout is as it was
    assert _git(repo, "branch", "--show-current") == "main"
    assert _git(repo, "log", "-1", "--format=%s", "treadle/w1") == "change"
    assert "LOCAL_SETTING=1" in done.stdout  # .worktreeinclude brought .env in
    assert f"worktree w1: {tree}, branch treadle/w1 (made for this session)" in done.stderr
    assert "treadle worktree remove w1" in done.stderr and "git merge treadle/w1" in done.stderr

    again = _script(tmp_path, "again", "cat f.txt")
    reused = run_treadle("--worktree", "w1", "--model", again, "--print", "look", cwd=repo, env=env)
    assert reused.returncode == 0 and "changed" in reused.stdout
    assert "(reused)" in reused.stderr

    listed = run_treadle("worktree", "list", cwd=repo, env=env)
    assert listed.returncode == 0 and f"w1    treadle/w1  {tree}" in listed.stdout

    (tree / "f.txt").write_text("not committed\n")
    refused = run_treadle("worktree", "remove", "w1", cwd=repo, env=env)
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert tree.is_dir()
    (tree / "f.txt").write_text("changed\n")
    removed = run_treadle("worktree", "remove", "w1", cwd=repo, env=env)
    assert removed.returncode == 0, removed.stderr
    assert not tree.exists()
    assert str(tree) not in _git(repo, "worktree", "list")
    assert "branch treadle/w1 kept: it is not merged" in removed.stdout  # the work stays


@pytest.mark.slow
def test_a_folder_in_no_repository_gets_one_line(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    model = _script(tmp_path, "s", "true")
    done = run_treadle(
        "--worktree", "--model", model, "--print", "hi", cwd=plain, env=_env(tmp_path)
    )
    assert (done.returncode, done.stderr) == (
        2,
        f"treadle: --worktree: {plain.resolve()} is not in a git repository\n",
    )
    assert not (tmp_path / "state" / "sessions").exists()


@pytest.mark.slow
def test_two_batch_tasks_with_worktrees_edit_the_same_file_without_conflict(
    tmp_path: Path,
) -> None:
    repo = _repository(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    lines = [
        {"id": name, "task": "edit f.txt", "model": _script(tmp_path, name, command)}
        for name, command in (
            ("one", "echo one > f.txt && git commit -qam one"),
            ("two", "echo two > f.txt && git commit -qam two"),
        )
    ]
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_treadle(
        "batch", str(tasks), "--worktree", "--workers", "2", cwd=repo, env=_env(tmp_path)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = [
        json.loads(line)
        for line in (tmp_path / "tasks.results.jsonl").read_text().split("\n")
        if line
    ]
    assert [r["outcome"] for r in results] == ["finished", "finished"]
    assert "share the workspace" not in done.stdout + done.stderr
    assert (repo / "f.txt").read_text() == "base\n"
    for name in ("one", "two"):
        assert _git(repo, "show", f"treadle/{name}:f.txt") == name
        assert _git(repo, "log", "-1", "--format=%s", f"treadle/{name}") == name
