"""A whole turn taken back: the file tools and bash change a workspace, ``treadle undo``
puts it back, ``treadle redo`` takes the undo back, and the user's repository never
changes, byte for byte."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.processes import run_treadle, treadle_env, write_script
from tests.trees import dot_git_bytes, tree_state, user_git, write

pytestmark = pytest.mark.slow

BASH = (
    "rm old.txt; echo more >> notes.txt; mkdir -p made/by/bash; echo x > made/by/bash/f; "
    "chmod +x tool.sh; mv a.txt moved.txt; rmdir empty"
)


def a_turn_that_changes_everything(folder: Path) -> Path:
    """The model edits, creates and replaces with the file tools, then deletes, appends,
    creates, moves and changes a mode with bash."""

    def call(name: str, **arguments: object) -> dict[str, object]:
        return {"name": name, "arguments": arguments}

    return write_script(
        folder,
        {
            "tool_calls": [
                call("edit_file", path="calc.py", old_string="a - b", new_string="a + b"),
                call("write_file", path="docs/new/guide.md", content="# Guide\n"),
                call("write_file", path="README.md", content="rewritten\n"),
                call("bash", command=BASH),
            ]
        },
        {"text": "Done."},
    )


def populate(workspace: Path) -> None:
    write(workspace / "calc.py", "def sub(a, b):\n    return a - b\n")
    write(workspace / "README.md", "# Calc\n")
    write(workspace / "old.txt", "to be deleted\n")
    write(workspace / "notes.txt", "notes\n")
    write(workspace / "a.txt", "to be moved\n")
    write(workspace / "tool.sh", "#!/bin/sh\n", 0o644)
    (workspace / "empty").mkdir()


def make_repository_with_work_in_progress(workspace: Path) -> None:
    user_git(workspace, "init", "-q")
    user_git(workspace, "add", "-A")
    user_git(workspace, "commit", "-qm", "initial")
    write(workspace / "calc.py", "def sub(a, b):\n    return a - b  # staged\n")
    user_git(workspace, "add", "calc.py")
    write(workspace / "notes.txt", "notes, not staged\n")
    write(workspace / "untracked.txt", "untracked\n")


@pytest.mark.parametrize("repository", [True, False], ids=["git-repository", "plain-folder"])
def test_undo_takes_back_what_the_file_tools_and_bash_did_and_redo_takes_back_the_undo(
    tmp_path: Path, repository: bool
) -> None:
    workspace = tmp_path / "work"
    populate(workspace)
    if repository:
        make_repository_with_work_in_progress(workspace)
        status = user_git(workspace, "--no-optional-locks", "status", "--porcelain=v2")
        repository_bytes = dot_git_bytes(workspace)
    before = tree_state(workspace)
    env = treadle_env(tmp_path)
    script = a_turn_that_changes_everything(tmp_path)
    turn = run_treadle(
        "--model", f"script:{script}", "--approval", "auto", "--print", "change it all",
        cwd=workspace, env=env,
    )  # fmt: skip
    assert turn.returncode == 0, turn.stdout + turn.stderr
    assert "+    return a + b" in turn.stdout  # the edit's diff, plain
    after = tree_state(workspace)
    assert (workspace / "moved.txt").exists() and not (workspace / "old.txt").exists()

    diff = run_treadle("diff", cwd=workspace, env=env)
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.startswith("Changes since the start of the turn “change it all”")
    for path in ("calc.py", "docs/new/guide.md", "old.txt", "made/by/bash/f", "moved.txt"):
        assert path in diff.stdout

    undo = run_treadle("undo", cwd=workspace, env=env)
    assert undo.returncode == 0, undo.stderr
    assert tree_state(workspace) == before
    lines = undo.stdout.splitlines()
    assert lines[0].startswith("Undid the turn “change it all” (session ")
    for path in ("calc.py", "README.md", "old.txt", "notes.txt", "a.txt", "tool.sh"):
        assert f"  restored  {path}" in lines
    for path in ("docs/new/guide.md", "made/by/bash/f", "moved.txt", "docs/", "made/by/"):
        assert f"  removed   {path}" in lines
    if repository:
        assert dot_git_bytes(workspace) == repository_bytes
        assert user_git(workspace, "--no-optional-locks", "status", "--porcelain=v2") == status
        assert user_git(workspace, "stash", "list") == ""
        assert "treadle" not in user_git(workspace, "for-each-ref")

    redo = run_treadle("redo", cwd=workspace, env=env)
    assert redo.returncode == 0, redo.stderr
    assert tree_state(workspace) == after
    again = run_treadle("undo", cwd=workspace, env=env)
    assert again.returncode == 0 and tree_state(workspace) == before
    nothing = run_treadle("undo", cwd=workspace, env=env)
    assert nothing.returncode == 1
    assert nothing.stderr.startswith("treadle: nothing left to undo in")
    if repository:
        assert dot_git_bytes(workspace) == repository_bytes


def test_the_diff_of_a_write_is_a_field_of_the_json_tool_event_and_kept_in_the_transcript(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "work"
    populate(workspace)
    env = treadle_env(tmp_path)
    script = a_turn_that_changes_everything(tmp_path)
    turn = run_treadle("--model", f"script:{script}", "--json", "change it", cwd=workspace, env=env)
    assert turn.returncode == 0, turn.stderr
    finished = [json.loads(line) for line in turn.stdout.splitlines()]
    diffs = {
        json.loads(record["call"]["arguments"])["path"]: record["diff"]
        for record in finished
        if record["type"] == "tool_finished" and record["call"]["name"] != "bash"
    }
    assert diffs["calc.py"].endswith("-    return a - b\n+    return a + b\n")
    assert diffs["docs/new/guide.md"].startswith("--- /dev/null\n+++ b/docs/new/guide.md\n")
    assert "-# Calc\n+rewritten\n" in diffs["README.md"]
    transcript = next((tmp_path / "state" / "sessions").glob("*/transcript.jsonl"))
    kept = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [r["diff"] for r in kept if r["type"] == "tool_finished"][:3] == list(diffs.values())


def test_undo_with_no_turn_yet_says_so_and_fails(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    undone = run_treadle("undo", cwd=workspace, env=treadle_env(tmp_path))
    assert undone.returncode == 1
    assert (
        undone.stderr
        == f"treadle: nothing to undo in {workspace}: treadle records it before each turn\n"
    )
    assert shlex.split(undone.stdout) == []


def test_undo_waits_while_a_turn_is_running_in_the_folder(tmp_path: Path) -> None:
    from treadle.adapters.transcript.sessions import SessionLock, SessionStore

    workspace = tmp_path / "work"
    workspace.mkdir()
    store = SessionStore(tmp_path / "state" / "sessions")
    store.create("20250101-120000-abcdef", workspace=str(workspace), model="demo")  # running
    lock = SessionLock(store.folder("20250101-120000-abcdef"))
    lock.acquire()
    try:
        refused = run_treadle("undo", cwd=workspace, env=treadle_env(tmp_path))
    finally:
        lock.release()
    assert refused.returncode == 2
    assert refused.stderr == (
        f"treadle: a turn is running in {workspace} (session 20250101-120000-abcdef): "
        "undo when it has ended\n"
    )
    assert run_treadle("diff", cwd=workspace, env=treadle_env(tmp_path)).returncode == 1


def test_a_turn_that_ignores_everything_hides_nothing_from_diff_and_undo(tmp_path: Path) -> None:
    """The issue's case: a turn writes a .gitignore of '*' and '!src/'; the next turn
    deletes a file; ``treadle undo`` brings it back, then takes the .gitignore away."""
    workspace = tmp_path / "work"
    populate(workspace)
    before = tree_state(workspace)
    env = treadle_env(tmp_path)

    def turn(task: str, name: str, **arguments: object) -> None:
        script = write_script(
            tmp_path, {"tool_calls": [{"name": name, "arguments": arguments}]}, {"text": "Done."}
        )
        ran = run_treadle(
            "--model", f"script:{script}", "--approval", "auto", "--print", task,
            cwd=workspace, env=env,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stdout + ran.stderr

    turn("ignore it all", "write_file", path=".gitignore", content="*\n!src/\n")
    diff = run_treadle("diff", cwd=workspace, env=env)
    assert diff.returncode == 0, diff.stderr
    assert "1 file changed, 2 insertions(+)" in diff.stdout
    assert "deleted" not in diff.stdout and "calc.py" not in diff.stdout

    turn("delete the notes", "bash", command="rm notes.txt")
    assert not (workspace / "notes.txt").exists()
    assert "notes.txt" in run_treadle("diff", cwd=workspace, env=env).stdout
    undo = run_treadle("undo", cwd=workspace, env=env)
    assert undo.returncode == 0, undo.stderr
    assert "  restored  notes.txt" in undo.stdout.splitlines()
    assert (workspace / "notes.txt").read_text() == "notes\n"

    again = run_treadle("undo", cwd=workspace, env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[1:3] == [
        "  removed   .gitignore",
        "treadle redo (or /redo) takes this undo back.",
    ]
    assert tree_state(workspace) == before
