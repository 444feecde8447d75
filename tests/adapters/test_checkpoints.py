"""Checkpoints in a shadow git repository, against real git and real files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from returns.result import Failure

from tests.trees import dot_git_bytes, tree_state, user_git, write
from treadle.adapters.checkpoints import (
    Checkpoint,
    Restored,
    ShadowRepository,
    shadow_for,
)
from treadle.adapters.checkpoints.git import shadow_environment
from treadle.adapters.sandbox import Sandbox
from treadle.adapters.turn_start import HostTurnStart
from treadle.domain.rules.sandbox import SandboxSupport

IGNORED = ("debug.log", "build")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture
def shadow(workspace: Path, tmp_path: Path) -> ShadowRepository:
    return shadow_for(str(tmp_path / "state"), str(workspace))


def populate(ws: Path) -> None:
    write(ws / "README.md", "hello\n")
    write(ws / "src" / "app.py", "print('app')\n")
    write(ws / "src" / "pkg" / "mod.py", "x = 1\n")
    write(ws / "bin" / "run.sh", "#!/bin/sh\necho run\n", 0o755)
    write(ws / "secret.conf", "token=local\n", 0o600)
    write(ws / ".gitignore", "*.log\nbuild/\n")
    write(ws / "src" / ".gitignore", "generated/\n!keep.log\n")
    write(ws / "src" / "generated" / "out.txt", "ignored by a nested .gitignore\n")
    write(ws / "src" / "keep.log", "kept by a negation in a nested .gitignore\n")
    write(ws / "debug.log", "ignored\n")
    write(ws / "build" / "x.o", b"\0ignored")
    write(ws / "odd names" / "a b*?[c].txt", "odd\n")
    write(ws / "odd names" / "#hash", "hash\n")
    write(ws / "odd names" / "ünïcødé", "u\n")
    write(ws / "odd names" / "new\nline", "a newline in a name\n")
    write(ws / "crlf.txt", b"one\r\ntwo\n")
    (ws / "link-to-app").symlink_to("src/app.py")
    (ws / "link-outside").symlink_to("/etc/hostname")
    (ws / "link-to-dir").symlink_to("src")
    (ws / "empty" / "deeper").mkdir(parents=True)
    (ws / "also-empty").mkdir()


def a_turn(ws: Path) -> None:
    """Edits, creations, deletions and replacements, as a turn might make them."""
    write(ws / "README.md", "hello, edited\n")
    (ws / "src" / "pkg" / "mod.py").unlink()
    (ws / "src" / "pkg").rmdir()
    write(ws / "new" / "deep" / "created.py", "created\n")
    write(ws / "src" / "created-too.py", "created\n")
    (ws / "bin" / "run.sh").chmod(0o644)
    write(ws / "secret.conf", "token=changed\n")
    (ws / "link-to-app").unlink()
    write(ws / "link-to-app", "now a file\n")
    (ws / "crlf.txt").unlink()
    (ws / "crlf.txt").symlink_to("README.md")
    (ws / "also-empty").rmdir()
    (ws / "made-empty").mkdir()
    (ws / "odd names" / "new\nline").unlink()
    write(ws / "odd names" / "#hash", "edited\n")
    write(ws / "debug.log", "ignored, edited: undo leaves it\n")
    write(ws / "build" / "y.o", b"ignored, made: undo leaves it")


def recorded(shadow: ShadowRepository, **label: str) -> Checkpoint:
    return shadow.record(**label).unwrap()


def undone(shadow: ShadowRepository) -> Restored:
    return shadow.undo().unwrap()


def test_undo_puts_back_every_kind_of_change_and_leaves_ignored_files_alone(
    workspace: Path, shadow: ShadowRepository
) -> None:
    populate(workspace)
    before = tree_state(workspace, leave_out=IGNORED)
    recorded(shadow, session="s1", task="fix it")
    a_turn(workspace)
    restored = undone(shadow)
    assert tree_state(workspace, leave_out=IGNORED) == before
    assert (workspace / "debug.log").read_text() == "ignored, edited: undo leaves it\n"
    assert (workspace / "build" / "y.o").exists()
    assert set(restored.restored) >= {"README.md", "src/pkg/mod.py", "crlf.txt", "link-to-app"}
    assert set(restored.removed) >= {"new/deep/created.py", "new/", "new/deep/", "made-empty/"}
    assert restored.to.manifest.task == "fix it" and restored.to.manifest.session == "s1"


def test_files_the_turn_did_not_touch_keep_their_times_through_an_undo(
    workspace: Path, shadow: ShadowRepository
) -> None:
    populate(workspace)
    recorded(shadow)
    untouched = (workspace / "src" / "app.py").stat().st_mtime_ns
    write(workspace / "README.md", "edited\n")
    assert undone(shadow).restored == ("README.md",)
    assert (workspace / "src" / "app.py").stat().st_mtime_ns == untouched


def test_each_undo_goes_one_turn_further_back_and_then_there_is_nothing_left(
    workspace: Path, shadow: ShadowRepository
) -> None:
    write(workspace / "f", "v1\n")
    recorded(shadow, task="turn 1")
    write(workspace / "f", "v2\n")
    recorded(shadow, task="turn 2")
    write(workspace / "f", "v3\n")
    assert undone(shadow).to.manifest.task == "turn 2"
    assert (workspace / "f").read_text() == "v2\n"
    assert undone(shadow).to.manifest.task == "turn 1"
    assert (workspace / "f").read_text() == "v1\n"
    assert shadow.undo().failure().startswith("nothing left to undo")


def test_an_undo_is_kept_so_that_redo_takes_it_back_and_undo_works_again(
    workspace: Path, shadow: ShadowRepository
) -> None:
    write(workspace / "f", "before\n")
    recorded(shadow, task="the turn")
    write(workspace / "f", "after\n")
    write(workspace / "made.txt", "made\n")
    undone(shadow)
    redone = shadow.redo().unwrap()
    assert (workspace / "f").read_text() == "after\n" and (workspace / "made.txt").exists()
    assert set(redone.restored) == {"f", "made.txt"}
    assert shadow.redo().failure().startswith("nothing to redo")
    undone(shadow)
    assert (workspace / "f").read_text() == "before\n" and not (workspace / "made.txt").exists()


def test_a_new_turn_after_an_undo_leaves_nothing_to_redo(
    workspace: Path, shadow: ShadowRepository
) -> None:
    write(workspace / "f", "v1\n")
    recorded(shadow)
    write(workspace / "f", "v2\n")
    undone(shadow)
    recorded(shadow)
    assert isinstance(shadow.redo(), Failure)


def test_changes_shows_what_changed_since_the_last_turn_started(
    workspace: Path, shadow: ShadowRepository
) -> None:
    populate(workspace)
    assert shadow.changes().failure().startswith("no checkpoint of")
    recorded(shadow)
    assert shadow.changes().unwrap().text == ""
    a_turn(workspace)
    text = shadow.changes().unwrap().text
    assert "-hello\n+hello, edited\n" in text
    assert "new/deep/created.py" in text and "deleted file mode 100644" in text
    assert "debug.log" not in text and "build/" not in text


def make_user_repository(ws: Path) -> None:
    populate(ws)
    user_git(ws, "init", "-q")
    user_git(ws, "add", "-A")
    user_git(ws, "commit", "-qm", "initial")
    write(ws / "README.md", "staged\n")
    user_git(ws, "add", "README.md")
    write(ws / "README.md", "staged, then more unstaged\n")
    write(ws / "src" / "app.py", "unstaged\n")
    write(ws / "untracked.txt", "untracked\n")


def test_the_users_repository_is_left_byte_for_byte_as_it_was(
    workspace: Path, shadow: ShadowRepository
) -> None:
    make_user_repository(workspace)
    status = user_git(workspace, "--no-optional-locks", "status", "--porcelain=v2")
    repository = dot_git_bytes(workspace)
    before = tree_state(workspace, leave_out=IGNORED)
    recorded(shadow)
    a_turn(workspace)
    shadow.changes()
    recorded(shadow)
    undone(shadow)
    shadow.redo()
    undone(shadow)
    undone(shadow)
    assert dot_git_bytes(workspace) == repository
    assert tree_state(workspace, leave_out=IGNORED) == before
    assert user_git(workspace, "--no-optional-locks", "status", "--porcelain=v2") == status
    assert user_git(workspace, "stash", "list") == ""
    assert "treadle" not in user_git(workspace, "for-each-ref")


def test_an_undo_says_so_when_the_turn_changed_the_users_repository(
    workspace: Path, shadow: ShadowRepository
) -> None:
    make_user_repository(workspace)
    recorded(shadow)
    user_git(workspace, "commit", "-qam", "made during the turn")
    (notice,) = undone(shadow).notices
    assert notice.startswith("the workspace's own git repository changed since")


def test_inherited_git_settings_and_a_hostile_configuration_never_reach_the_shadow(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_user_repository(workspace)
    canary, script = tmp_path / "canary", tmp_path / "hook.sh"
    write(script, f'#!/bin/sh\necho "$0 $*" >> {canary}\ncat\n', 0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-commit", "post-checkout", "reference-transaction"):
        (hooks / hook).symlink_to(script)
    home = tmp_path / "home"
    write(
        home / ".gitconfig",
        f"[core]\n\tautocrlf = true\n\tfsmonitor = {script}\n\thooksPath = {hooks}\n"
        f"\texcludesFile = {tmp_path / 'global-ignore'}\n"
        f'[filter "evil"]\n\tclean = {script} clean\n\tsmudge = {script} smudge\n'
        f"[diff]\n\texternal = {script}\n",
    )
    write(tmp_path / "global-ignore", "*.py\n")
    write(workspace / ".gitattributes", "* text eol=crlf filter=evil\n")
    user_git(workspace, "config", "core.fsmonitor", str(script))
    repository = dot_git_bytes(workspace)
    before = tree_state(workspace, leave_out=IGNORED)
    monkeypatch.setenv("HOME", str(home))
    for name, value in {
        "GIT_DIR": workspace / ".git",
        "GIT_INDEX_FILE": workspace / ".git" / "index",
        "GIT_WORK_TREE": "/",
        "GIT_CONFIG_PARAMETERS": "'core.hookspath'='/x'",
        "GIT_OBJECT_DIRECTORY": workspace / ".git" / "objects",
    }.items():
        monkeypatch.setenv(name, str(value))
    shadow = shadow_for(str(tmp_path / "state"), str(workspace))
    recorded(shadow)
    a_turn(workspace)
    assert "src/created-too.py" in shadow.changes().unwrap().text  # no global '*.py' ignore
    undone(shadow)
    assert not canary.exists(), canary.read_text()
    assert dot_git_bytes(workspace) == repository
    assert tree_state(workspace, leave_out=IGNORED) == before  # crlf.txt byte for byte


def test_the_shadow_environment_keeps_nothing_of_the_users_git() -> None:
    inherited = {"GIT_DIR": "u", "GIT_CONFIG_COUNT": "1", "GIT_EXTERNAL_DIFF": "x", "PATH": "/b"}
    env = shadow_environment(inherited, "/s/shadow.git", "/w", "/s/index", "/s/home")
    assert {name for name in env if name.startswith("GIT_")} == {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL",
        "GIT_ATTR_NOSYSTEM", "GIT_LITERAL_PATHSPECS", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS",
        "GIT_NO_REPLACE_OBJECTS", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    }  # fmt: skip
    assert (env["GIT_DIR"], env["HOME"], env["PATH"]) == ("/s/shadow.git", "/s/home", "/b")


def test_nested_repositories_are_left_out_with_a_notice(
    workspace: Path, shadow: ShadowRepository
) -> None:
    write(workspace / "top.txt", "top\n")
    write(workspace / "vendor" / "lib" / "lib.c", "int x;\n")
    user_git(workspace / "vendor" / "lib", "init", "-q")
    (workspace / "fresh").mkdir()
    user_git(workspace / "fresh", "init", "-q")  # no commit: a plain `git add -A` fails here
    (notice,) = recorded(shadow).notices
    assert notice == "not recorded (a repository of its own): fresh, vendor/lib"
    write(workspace / "vendor" / "lib" / "lib.c", "int y;\n")
    write(workspace / "top.txt", "edited\n")
    undone(shadow)
    assert (workspace / "top.txt").read_text() == "top\n"
    assert (workspace / "vendor" / "lib" / "lib.c").read_text() == "int y;\n"  # not ours


def test_large_files_are_left_out_with_a_notice_and_undo_says_it_left_them(
    workspace: Path, tmp_path: Path
) -> None:
    shadow = shadow_for(str(tmp_path / "state"), str(workspace), max_file_bytes=1 << 20)
    write(workspace / "small.txt", "s\n")
    write(workspace / "big.bin", b"\0" * (2 << 20))
    (notice,) = recorded(shadow).notices
    assert notice == "not recorded (over 1 MiB), so undo leaves them: big.bin"
    write(workspace / "big.bin", b"\1" * (2 << 20))
    restored = undone(shadow)
    assert restored.notices == ("not restored (too large to record): big.bin",)
    assert (workspace / "big.bin").read_bytes()[:1] == b"\1"


def test_a_huge_tree_is_not_recorded_and_the_notice_says_the_turn_cannot_be_undone(
    workspace: Path, tmp_path: Path
) -> None:
    for number in range(30):
        write(workspace / "d" / f"{number}.txt", "x\n")
    shadow = shadow_for(str(tmp_path / "state"), str(workspace), max_files=20)
    why = shadow.record().failure()
    assert why.startswith("no checkpoint: more than 20 files (not ignored)")
    assert why.endswith("so this turn cannot be undone")


def test_the_state_folder_inside_the_workspace_is_never_recorded(workspace: Path) -> None:
    write(workspace / "f.txt", "f\n")
    write(workspace / "state" / "sessions" / "s1" / "transcript.jsonl", "{}\n")
    shadow = shadow_for(str(workspace / "state"), str(workspace))
    checkpoint = recorded(shadow)
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", checkpoint.tree],
        env=shadow.git.env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert listed == ["f.txt"]
    write(workspace / "state" / "sessions" / "s1" / "transcript.jsonl", "{}\n{}\n")
    undone(shadow)
    assert (workspace / "state" / "sessions" / "s1" / "transcript.jsonl").read_text() == "{}\n{}\n"


def test_old_checkpoints_are_pruned_past_the_ones_kept(workspace: Path, tmp_path: Path) -> None:
    shadow = shadow_for(str(tmp_path / "state"), str(workspace), keep=2)
    for turn in range(13):
        write(workspace / "f", f"{turn}\n")
        recorded(shadow, task=f"turn {turn}")
    assert [c.manifest.task for c in shadow.checkpoints()] == ["turn 11", "turn 12"]


def test_without_git_checkpoints_fail_with_a_reason_and_nothing_breaks(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-folder"))
    shadow = ShadowRepository(str(workspace), str(tmp_path / "state"))
    assert "there is no git on PATH" in shadow.record().failure()
    assert shadow.checkpoints() == []


async def test_the_turn_start_records_a_checkpoint_and_says_each_thing_once(
    workspace: Path, tmp_path: Path
) -> None:
    write(workspace / "big.bin", b"\0" * 2048)
    shadow = shadow_for(str(tmp_path / "state"), str(workspace), max_file_bytes=1024)
    missing = SandboxSupport(0, "Landlock is unavailable: built without it")
    sandbox = Sandbox("workspace-write", str(workspace), support=lambda: missing)
    turn_start = HostTurnStart(shadow, session="s1", sandbox=sandbox)
    first = await turn_start.before_turn("fix the tests\nand more")
    assert [notice.kind for notice in first] == ["sandbox_unavailable", "checkpoint_partial"]
    assert await turn_start.before_turn("again") == []
    assert [c.manifest.task for c in shadow.checkpoints()] == ["fix the tests and more", "again"]


def test_a_tree_whose_manifest_outgrows_one_argument_is_recorded_and_undone(workspace, shadow):
    # 3,000 files of mode 0600 and 1,000 empty folders: the manifest lists them all,
    # well over the 128 KiB one argument of a command may hold.
    for n in range(3_000):
        write(workspace / f"private-file-with-a-rather-long-name-{n:05d}.txt", "x\n", 0o600)
    for n in range(1_000):
        (workspace / "empty" / f"folder-with-a-rather-long-name-{n:05d}").mkdir(parents=True)
    before = tree_state(workspace)
    checkpoint = recorded(shadow)
    assert len(checkpoint.manifest.to_json()) > 128 * 1024
    (workspace / "private-file-with-a-rather-long-name-00007.txt").unlink()
    (workspace / "empty" / "folder-with-a-rather-long-name-00009").rmdir()
    undone(shadow)
    assert tree_state(workspace) == before


EVERYTHING_BUT_SRC = "*\n!src/\n"


def a_project(ws: Path) -> None:
    write(ws / "README.md", "hello\n")
    write(ws / "src" / "app.py", "print('app')\n")
    write(ws / "docs" / "guide.md", "# Guide\n")


def test_a_gitignore_of_everything_makes_no_untouched_file_look_deleted(
    workspace: Path, shadow: ShadowRepository
) -> None:
    a_project(workspace)
    recorded(shadow, task="turn 1")
    write(workspace / ".gitignore", EVERYTHING_BUT_SRC)  # the turn
    diff = shadow.changes().unwrap().text
    assert " .gitignore | 2 ++" in diff
    assert "1 file changed" in diff and "deleted" not in diff
    assert "README.md" not in diff and "guide.md" not in diff


def test_undo_takes_away_a_gitignore_the_turn_wrote_even_one_that_ignores_itself(
    workspace: Path, shadow: ShadowRepository
) -> None:
    a_project(workspace)
    before = tree_state(workspace)
    recorded(shadow, task="turn 1")
    write(workspace / ".gitignore", EVERYTHING_BUT_SRC)
    restored = undone(shadow)
    assert restored.removed == (".gitignore",) and restored.restored == ()
    assert tree_state(workspace) == before


def test_after_a_gitignore_of_everything_a_file_the_next_turn_deletes_comes_back(
    workspace: Path, shadow: ShadowRepository
) -> None:
    a_project(workspace)
    recorded(shadow, task="turn 1")
    write(workspace / ".gitignore", EVERYTHING_BUT_SRC)
    second = recorded(shadow, task="turn 2")
    assert second.notices == ()  # nothing recorded before is left out now
    (workspace / "docs" / "guide.md").unlink()
    (workspace / "src" / "app.py").unlink()
    diff = shadow.changes().unwrap().text
    assert "docs/guide.md" in diff and "src/app.py" in diff and "README.md" not in diff
    restored = undone(shadow)
    assert set(restored.restored) == {"docs/guide.md", "src/app.py"}
    assert (workspace / "docs" / "guide.md").read_text() == "# Guide\n"
    assert undone(shadow).removed == (".gitignore",)
    assert not (workspace / ".gitignore").exists()


def test_files_a_turn_makes_under_its_own_gitignore_are_recorded_and_undone(
    workspace: Path, shadow: ShadowRepository
) -> None:
    a_project(workspace)
    before = tree_state(workspace)
    recorded(shadow, task="turn 1")
    write(workspace / ".gitignore", EVERYTHING_BUT_SRC)
    write(workspace / "notes" / "plan.md", "the plan\n")
    write(workspace / "src" / "new.py", "new\n")
    write(workspace / "sub" / ".gitignore", "*\n")  # in a folder the root rule ignores
    assert "notes/plan.md" in shadow.changes().unwrap().text
    restored = undone(shadow)
    assert set(restored.removed) >= {".gitignore", "notes/plan.md", "src/new.py"}
    assert tree_state(workspace) == before


def test_what_an_ignore_rule_leaves_out_is_said_once_and_undo_says_what_it_leaves(
    workspace: Path, shadow: ShadowRepository
) -> None:
    a_project(workspace)
    write(workspace / ".gitignore", "*.log\nbuild/\n")
    write(workspace / "debug.log", "log\n")
    write(workspace / "build" / "x.o", "o\n")
    first = recorded(shadow, task="turn 1")
    assert first.notices == (
        "not recorded (an ignore rule of the workspace leaves them out), so undo leaves "
        "them: build/, debug.log",
    )
    assert recorded(shadow, task="turn 2").notices == ()  # said already
    write(workspace / "other.log", "made by the turn, ignored before it began\n")
    write(workspace / "build" / "y.o", "in a folder left out already\n")
    restored = undone(shadow)
    assert restored.notices == (
        "left as they are (an ignore rule of the workspace kept them out of the "
        "checkpoints): other.log",
    )
    assert (workspace / "other.log").exists() and (workspace / "build" / "y.o").exists()


def test_a_rule_written_by_one_turn_counts_from_the_checkpoint_after_the_next(
    workspace: Path, shadow: ShadowRepository
) -> None:
    a_project(workspace)
    recorded(shadow, task="turn 1")
    write(workspace / ".gitignore", "out/\n")
    write(workspace / "out" / "a", "made with the rule: recorded\n")
    second = recorded(shadow, task="turn 2")
    assert "out/a" in shadow.git("ls-tree", "-r", "--name-only", second.tree).decode().split()
    write(workspace / "out" / "b", "made after the rule was recorded: left out\n")
    third = recorded(shadow, task="turn 3")
    assert third.notices == (
        "not recorded (an ignore rule of the workspace leaves them out), so undo leaves "
        "them: out/b",
    )
    (workspace / "out" / "a").unlink()
    assert undone(shadow).restored == ("out/a",)  # recorded once, it stays recorded
