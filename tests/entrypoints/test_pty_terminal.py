"""``treadle`` in a real pseudo-terminal: Esc and Ctrl-C stop a running command, the
interactive session runs turn after turn, and the terminal is left as it was found."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from tests.processes import gone_within, is_running, treadle_env, wait_for_pid, write_script

SLEEP_COMMAND = "sleep 30 & echo $! > sleep.pid; wait"

pytestmark = pytest.mark.slow


def sleeping_script(folder: Path) -> Path:
    return write_script(
        folder,
        {
            "text": ["I will wait ", "for the check.\n"],
            "tool_calls": [{"name": "bash", "arguments": {"command": SLEEP_COMMAND}}],
            "usage": {"input_tokens": 120, "output_tokens": 12},
        },
        {"text": "It finished."},
    )


def environment(folder: Path) -> dict[str, str]:
    env = treadle_env(folder, TERM="xterm-256color")
    for inherited in ("NO_COLOR", "TREADLE_APPROVAL", "COLUMNS", "LINES"):
        env.pop(inherited, None)
    return env


def spawn(folder: Path, command: str, args: list[str]) -> pexpect.spawn:
    child = pexpect.spawn(
        command,
        args,
        cwd=str(folder),
        env=environment(folder),
        encoding="utf-8",
        timeout=30,
        dimensions=(30, 120),
    )
    child.delaybeforesend = None  # pexpect waits 50 ms before each send by default
    child.logfile_read = io.StringIO()  # everything the terminal was sent
    return child


def cursor_left_visible(child: pexpect.spawn) -> bool:
    shown: str = child.logfile_read.getvalue()
    return shown.rfind("\x1b[?25h") >= shown.rfind("\x1b[?25l")


def treadle_args(script: Path, *rest: str) -> list[str]:
    return ["-m", "treadle", "--model", f"script:{script}", "--approval", "auto", *rest]


@pytest.mark.parametrize("key", ["\x1b", "\x03"], ids=["esc", "ctrl-c"])
def test_a_key_pauses_the_turn_at_once_and_kills_the_running_command(
    tmp_path: Path, key: str
) -> None:
    child = spawn(tmp_path, sys.executable, treadle_args(sleeping_script(tmp_path), "wait"))
    child.expect("sleep 30")  # the live row of the running command (reading keeps the pty flowing)
    pid = wait_for_pid(tmp_path / "sleep.pid")
    assert is_running(pid)
    child.send(key)
    child.expect("Turn paused", timeout=1)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert gone_within(pid), f"sleep {pid} is still running"
    assert cursor_left_visible(child)


def test_an_interactive_session_runs_two_turns_and_leaves_the_terminal_as_it_was(
    tmp_path: Path,
) -> None:
    script = write_script(
        tmp_path,
        {"text": ["The first ", "answer."], "usage": {"input_tokens": 10, "output_tokens": 3}},
        {"text": "The second answer.", "usage": {"input_tokens": 20, "output_tokens": 4}},
    )
    python = " ".join(treadle_args(script))
    shell = f"stty -g; {sys.executable} {python}; echo EXIT=$?; stty -g"
    child = spawn(tmp_path, "/bin/sh", ["-c", shell])
    child.expect(r"([0-9a-f:]+)\r\n")
    before = child.match.group(1)
    child.expect("Type a task")
    child.send("first task\r")
    child.expect("The first answer.")
    child.expect("Turn finished")
    child.send("\r")  # an empty line is ignored
    child.send("second task\r")
    child.expect("The second answer.")
    child.expect("Turn finished")
    child.send("\x04")  # Ctrl-D leaves
    child.expect(r"EXIT=(\d+)\r\n")
    assert child.match.group(1) == "0"
    child.expect(r"([0-9a-f:]+)\r\n")
    after = child.match.group(1)
    child.expect(pexpect.EOF)
    assert after == before
    assert cursor_left_visible(child)

    transcript = next((tmp_path / "state" / "sessions").glob("*/transcript.jsonl"))
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    sent = [r["message_count"] for r in records if r["type"] == "request_sent"]
    assert sent == [1, 3]  # the second turn carried the first one's conversation


def test_esc_in_an_interactive_session_pauses_the_turn_and_the_prompt_comes_back(
    tmp_path: Path,
) -> None:
    child = spawn(tmp_path, sys.executable, treadle_args(sleeping_script(tmp_path)))
    child.expect("Type a task")
    child.send("wait for it\r")
    child.expect("sleep 30")
    pid = wait_for_pid(tmp_path / "sleep.pid")
    child.send("\x1b")
    child.expect("Turn paused", timeout=1)
    assert gone_within(pid)
    child.expect("› ")
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_second_ctrl_c_exits_at_once_and_still_puts_the_terminal_back(tmp_path: Path) -> None:
    # The command ignores SIGTERM, so stopping it takes the runner's whole grace period.
    stubborn = "trap '' TERM; sleep 30 & echo $! > sleep.pid; wait"
    script = write_script(
        tmp_path, {"tool_calls": [{"name": "bash", "arguments": {"command": stubborn}}]}
    )
    python = " ".join(treadle_args(script, "'wait'"))
    shell = f"stty -g; {sys.executable} {python}; echo EXIT=$?; stty -g"
    child = spawn(tmp_path, "/bin/sh", ["-c", shell])
    child.expect(r"([0-9a-f:]+)\r\n")
    before = child.match.group(1)
    child.expect("sleep 30")
    pid = wait_for_pid(tmp_path / "sleep.pid")
    try:
        child.send("\x03")
        child.expect("stopping…")
        child.send("\x03")
        child.expect(r"EXIT=(\d+)\r\n", timeout=1.5)  # sooner than the grace period
        assert child.match.group(1) == "130"
        child.expect(r"([0-9a-f:]+)\r\n")
        assert child.match.group(1) == before
        child.expect(pexpect.EOF)
        assert cursor_left_visible(child)
        assert gone_within(pid), "leaving at once left the command running"
    finally:
        if is_running(pid):
            os.kill(pid, 9)


@pytest.mark.parametrize("interactive", [False, True], ids=["one-turn", "session"])
def test_a_ctrl_c_key_then_a_sigint_is_a_second_ctrl_c(tmp_path: Path, interactive: bool) -> None:
    # The key and the signal keep one memory of the last Ctrl-C between them: the
    # SIGINT (a kill -INT) leaves at once, sooner than the stubborn command's grace.
    stubborn = "trap '' TERM; sleep 30 & echo $! > sleep.pid; wait"
    script = write_script(
        tmp_path, {"tool_calls": [{"name": "bash", "arguments": {"command": stubborn}}]}
    )
    child = spawn(
        tmp_path, sys.executable, treadle_args(script, *([] if interactive else ["wait"]))
    )
    if interactive:
        child.expect("Type a task")
        child.send("wait\r")
    child.expect("sleep 30")
    pid = wait_for_pid(tmp_path / "sleep.pid")
    try:
        child.send("\x03")
        child.expect("stopping…")
        child.kill(signal.SIGINT)
        child.expect(pexpect.EOF, timeout=1.5)  # sooner than the grace period
        child.close()
        assert child.exitstatus == 130
        assert gone_within(pid), "leaving at once left the command running"
    finally:
        if is_running(pid):
            os.kill(pid, 9)


def test_reasoning_folds_to_a_line_and_ctrl_o_shows_it_all(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        {
            "reasoning": [
                {"kind": "thinking", "text": "The file is small.\nRead it whole.", "seal": "s"}
            ],
            "text": "It is small.",
        },
    )
    child = spawn(tmp_path, sys.executable, treadle_args(script))
    child.expect("Type a task")
    child.send("look\r")
    child.expect("thought for 7 words · ctrl-o to expand")
    child.expect("Turn finished")
    assert "Read it whole." not in child.logfile_read.getvalue()
    child.send("\x0f")  # Ctrl-O, at the prompt
    child.expect("  Read it whole.")
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
