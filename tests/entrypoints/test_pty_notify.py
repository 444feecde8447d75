"""The bell at a turn's end (issue 23), in a real pseudo-terminal: OSC 9 where the
terminal says it shows it (WezTerm here), a BEL elsewhere, nothing with notify = false."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pytest

from tests.entrypoints.test_pty_terminal import environment, treadle_args
from tests.processes import write_script

pytestmark = pytest.mark.slow

OSC9 = "\x1b]9;treadle: Turn finished\x07"


def started(tmp_path: Path, args: list[str], **variables: str) -> pexpect.spawn:
    env = environment(tmp_path)
    for inherited in ("TERM_PROGRAM", "TMUX", "STY", "WT_SESSION", "KITTY_WINDOW_ID"):
        env.pop(inherited, None)
    env.update(variables)
    return pexpect.spawn(
        sys.executable,
        args,
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(30, 120),
    )


def shown_by_a_turn(tmp_path: Path, **variables: str) -> str:
    """Everything the terminal was sent by one turn in it, to its end."""
    script = write_script(tmp_path, {"text": "Done."})
    child = started(tmp_path, treadle_args(script, "say done"), **variables)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    shown: str = child.before
    assert "Turn finished" in shown
    return shown


def test_a_terminal_that_shows_osc_9_gets_a_notification_after_the_turn_s_line(
    tmp_path: Path,
) -> None:
    shown = shown_by_a_turn(tmp_path, TERM_PROGRAM="WezTerm")
    assert shown.count(OSC9) == 1
    assert shown.index(OSC9) > shown.index("Turn finished")


def test_another_terminal_gets_a_bell_and_notify_false_gets_none(tmp_path: Path) -> None:
    rung = shown_by_a_turn(tmp_path)
    quiet = shown_by_a_turn(tmp_path, TREADLE_NOTIFY="false")
    assert OSC9 not in rung and "\x1b]9;" not in quiet
    assert rung.count("\x07") == quiet.count("\x07") + 1
    assert rung.rindex("\x07") > rung.index("Turn finished")


def test_a_call_waiting_for_a_yes_rings_before_the_yes(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": "make deploy"}}]},
        {"text": "Deployed."},
    )
    args = [*treadle_args(script, "deploy"), "--approval", "ask"]
    child = started(tmp_path, args, TERM_PROGRAM="WezTerm")
    child.expect_exact("\x1b]9;treadle: bash waits for a yes: make deploy\x07")
    child.expect_exact("[y]es")
    child.send("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert OSC9 in child.before  # and the turn's end after it
