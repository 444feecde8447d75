"""``treadle diff|undo|redo`` and ``/diff``, ``/undo`` and ``/redo``, run in this process."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from treadle.adapters.checkpoints import shadow_for
from treadle.entrypoints.changes import Report, session_commands
from treadle.entrypoints.commands import run_subcommand


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with a checkpoint taken before a turn that then edited and made files."""
    state, workspace = tmp_path / "state", tmp_path / "work"
    workspace.mkdir()
    (workspace / "f.txt").write_text("before\n")
    monkeypatch.setenv("TREADLE_STATE_DIR", str(state))
    shadow_for(str(state), str(workspace)).record(session="s1", task="edit f").unwrap()
    (workspace / "f.txt").write_text("after\n")
    (workspace / "new.txt").write_text("new\n")
    return workspace


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return run_subcommand(list(argv), out), out.getvalue()


def test_the_subcommands_show_undo_and_redo_the_last_turn(recorded: Path) -> None:
    code, shown = run("diff", "--workspace", str(recorded))
    assert code == 0 and "-before\n+after\n" in shown
    code, shown = run("undo", "--workspace", str(recorded))
    assert code == 0
    assert shown.splitlines()[1:3] == ["  restored  f.txt", "  removed   new.txt"]
    assert (recorded / "f.txt").read_text() == "before\n"
    code, shown = run("diff", "--workspace", str(recorded))
    assert (code, shown) == (1, "")  # every turn undone: nothing to compare with
    code, shown = run("redo", "--workspace", str(recorded))
    assert code == 0 and (recorded / "new.txt").exists()
    assert run("redo", "--workspace", str(recorded))[0] == 1


def test_a_folder_that_is_not_there_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("undo", "--workspace", str(tmp_path / "nowhere"))[0] == 2
    assert capsys.readouterr().err == f"treadle: {tmp_path / 'nowhere'}: no such folder\n"


async def test_the_sessions_slash_commands_report_what_they_did(
    recorded: Path, tmp_path: Path
) -> None:
    reports: list[Report] = []
    commands = session_commands(str(tmp_path / "state"), str(recorded), reports.append)
    await commands["/diff"]()
    await commands["/undo"]()
    await commands["/undo"]()
    await commands["/redo"]()
    diff, undone, nothing, redone = reports
    assert diff.diff and diff.lines[0].startswith("Changes since the start of the turn “edit f”")
    assert undone.ok and undone.lines[-1] == "treadle redo (or /redo) takes this undo back."
    assert not nothing.ok and nothing.lines[0].startswith("nothing left to undo")
    assert redone.ok and "  restored  new.txt" in redone.lines


FORGED = "cmd\x1b[2Jname\nTurn finished"
HOSTILE_NAME = "evil\x1b[2J\x1b[31mRED\u202eTXT.exe\x07.txt"
HOSTILE_TEXT = "hello \x1b]0;pwned-title\x07 \x1b[2J cleared \u202eabc\x9b31m\r\n"
NEVER_SHOWN = ("\x1b", "\x07", "\u202e", "\x9b", "\r")


@pytest.mark.parametrize("command", ["diff", "undo", "redo"])
def test_names_and_contents_the_model_made_never_act_on_the_terminal(
    recorded: Path, command: str
) -> None:
    for name in (FORGED, HOSTILE_NAME):
        (recorded / name).write_text(HOSTILE_TEXT)
    (recorded / "f.txt").write_text(HOSTILE_TEXT)
    if command == "redo":
        assert run("undo", "--workspace", str(recorded))[0] == 0
    code, shown = run(command, "--workspace", str(recorded))
    assert code == 0, shown
    assert not [mark for mark in NEVER_SHOWN if mark in shown], shown
    assert "Turn finished" not in shown.splitlines()  # no line of treadle's forged
    if command == "diff":
        assert "+hello ]0;pwned-title  cleared abc" not in shown  # not even half of it
        assert "+hello   cleared abc" in shown.splitlines()
    else:  # the name, on its line, quoted with what it really holds
        assert '"cmd\\x1b[2Jname\\nTurn finished"' in shown


@pytest.mark.parametrize("command", ["undo", "redo"])
def test_names_that_differ_only_in_what_cannot_be_shown_are_told_apart(
    recorded: Path, command: str
) -> None:
    names = [b"bad\xff.txt", b"bad.txt", b"new\nline.txt", b"new line.txt"]
    for name in names:
        (recorded / os.fsdecode(name)).write_text("made by the turn\n")
    if command == "redo":
        assert run("undo", "--workspace", str(recorded))[0] == 0
    code, shown = run(command, "--workspace", str(recorded))
    assert code == 0, shown
    verb = "removed" if command == "undo" else "restored"
    for shown_name in ('"bad\\xff.txt"', "bad.txt", '"new\\nline.txt"', "new line.txt"):
        assert f"  {verb:<8}  {shown_name}" in shown.splitlines(), shown


def test_undoing_a_turn_that_changed_nothing_exits_0_as_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, workspace = tmp_path / "state", tmp_path / "work"
    workspace.mkdir()
    (workspace / "f.txt").write_text("kept\n")
    monkeypatch.setenv("TREADLE_STATE_DIR", str(state))
    shadow = shadow_for(str(state), str(workspace))
    shadow.record(session="s1", task="first").unwrap()
    shadow.record(session="s1", task="looked only").unwrap()
    code, shown = run("undo", "--workspace", str(workspace))
    assert code == 0  # undone all the same: a script must not think nothing happened
    assert shown.startswith("Undid the turn “looked only”") and "nothing had changed" in shown
    assert run("undo", "--workspace", str(workspace))[1].startswith("Undid the turn “first”")
    assert run("undo", "--workspace", str(workspace))[0] == 1  # now nothing is left to undo
    readme = Path(__file__).resolve().parents[2] / "README.md"
    said = " ".join(readme.read_text(encoding="utf-8").split())
    assert "It exits 0 when it did its work, even for a turn that changed nothing" in said
    assert "It exits 1 when there is nothing to undo, redo or compare with" in said
