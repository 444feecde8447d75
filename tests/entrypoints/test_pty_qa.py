"""The interactive terminal attacked in a real pseudo-terminal: stdin closed, a paste of
many lines, and Ctrl-O while the model is still thinking."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import termios
from pathlib import Path

import pexpect
import pytest

from tests.entrypoints.test_pty_terminal import environment, spawn, treadle_args
from tests.processes import until, write_script

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("task", ["", "'a task'"], ids=["no-task", "task"])
def test_a_terminal_with_stdin_closed_gets_one_line_not_an_internal_error(
    tmp_path: Path, task: str
) -> None:
    script = write_script(tmp_path, {"text": "Done."})
    python = " ".join(treadle_args(script, task))
    child = spawn(tmp_path, "/bin/sh", ["-c", f"{sys.executable} {python} 0<&-; echo EXIT=$?"])
    child.expect(r"EXIT=(\d+)\r\n")
    shown = child.logfile_read.getvalue()
    assert "internal error" not in shown and "Traceback" not in shown
    if task:
        assert child.match.group(1) == "0"
        assert "Turn finished" in shown
    else:
        assert child.match.group(1) == "2"
        assert "treadle: no task given" in shown
    child.expect(pexpect.EOF)


def test_print_with_stdin_and_task_missing_is_one_line_and_exit_2(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": "Done."})
    python = " ".join(treadle_args(script, "--print"))
    result = subprocess.run(
        ["/bin/sh", "-c", f"{sys.executable} {python} 0<&-"],
        cwd=tmp_path,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "treadle: no task given"


@pytest.mark.parametrize("closed", [(1,), (1, 2), (2,), (0, 1, 2)])
def test_a_turn_with_its_output_closed_runs_as_if_it_went_to_dev_null(
    tmp_path: Path, closed: tuple[int, ...]
) -> None:
    # Python has None for a closed stream; a file opened next would take its number.
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo made > out.txt"}}]},
        {"text": "Done."},
    )

    def close_them() -> None:
        for number in closed:
            os.close(number)

    result = subprocess.run(
        [sys.executable, *treadle_args(script, "--print", "make it")],
        cwd=tmp_path,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=close_them,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text() == "made\n"
    [transcript] = (tmp_path / "state" / "sessions").glob("*/transcript.jsonl")
    ended = [line for line in transcript.read_text().splitlines() if "turn_ended" in line]
    assert len(ended) == 1 and json.loads(ended[0])["outcome"]["kind"] == "finished"
    assert not list((tmp_path / "state").glob("treadle.log"))


def on_one_cpu() -> None:
    """In the child: one CPU, as on a small VM or a busy machine, where the event loop
    takes each key as soon as the keyboard's thread hands it over."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def test_a_paste_of_many_lines_is_one_message_however_the_keys_arrive(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": "One."}, {"text": "Two."}, {"text": "Three."})
    child = pexpect.spawn(
        sys.executable,
        treadle_args(script),
        cwd=str(tmp_path),
        env=environment(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(30, 120),
        preexec_fn=on_one_cpu,
    )
    child.delaybeforesend = None
    child.expect("Type a task")
    lines = [f"pasted line {n}" for n in range(300)]
    child.send("".join(line + "\r" for line in lines))  # one write, as a terminal pastes
    child.expect("One.")
    child.expect("Turn finished")
    child.expect("› ")
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    transcript = next((tmp_path / "state" / "sessions").glob("*/transcript.jsonl"))
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    tasks = [r["task"] for r in records if r["type"] == "turn_started"]
    assert tasks == ["\n".join(lines)]


@pytest.mark.parametrize("key", ["\x1b", "\x03"], ids=["esc", "ctrl-c"])
def test_an_enter_with_esc_or_ctrl_c_right_behind_it_still_submits(
    tmp_path: Path, key: str
) -> None:
    # Only a paste puts keys right behind an Enter; a person who submits and at once
    # stops has asked for the task all the same.
    script = write_script(tmp_path, {"text": "One."}, {"text": "Two."})
    child = spawn(tmp_path, sys.executable, treadle_args(script))
    child.expect("Type a task")
    child.send("first task\r" + key)  # one write: the stop is right behind the Enter
    child.expect("first task")
    child.expect("Turn (finished|paused)")
    child.expect("› ")
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    transcript = next((tmp_path / "state" / "sessions").glob("*/transcript.jsonl"))
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [r["task"] for r in records if r["type"] == "turn_started"] == ["first task"]


def test_the_keys_are_treadles_before_the_greeting_invites_them(tmp_path: Path) -> None:
    # Were the greeting shown while the terminal was still in its own mode, a Ctrl-C typed
    # at once would be the kernel's SIGINT and end the session (the race behind the
    # test above failing under load). The terminal's output is held (XOFF) before treadle
    # writes anything: it stops at its first write, and by then it must read the keys
    # itself (no line mode, no echo).
    script = write_script(tmp_path, {"text": "One."})
    child = spawn(tmp_path, sys.executable, treadle_args(script))
    child.send("\x13")  # Ctrl-S: the terminal holds what the program writes

    def own_keys() -> bool:
        return not termios.tcgetattr(child.child_fd)[3] & (termios.ICANON | termios.ECHO)

    read_before_writing = until(own_keys, 20)  # treadle's start-up takes its time
    child.send("\x11")  # Ctrl-Q: let it write again
    assert read_before_writing, "the terminal was in line mode when treadle first wrote"
    child.expect("Type a task")
    child.send("/exit\r")
    child.expect(pexpect.EOF)


def test_ctrl_o_while_the_model_is_thinking_shows_its_reasoning_so_far_and_then_the_rest(
    tmp_path: Path,
) -> None:
    script = write_script(
        tmp_path,
        {
            "reasoning": [
                {"kind": "thinking", "text": "Alpha beta.\nGamma HIDDEN delta.", "seal": "s"}
            ],
            # One chunk, one wait before it: the reasoning is still the last thing
            # streamed meanwhile.
            "text": ["It is."],
            "chunk_delay": 3.0,
        },
    )
    child = spawn(tmp_path, sys.executable, treadle_args(script))
    child.expect("Type a task")
    child.send("look\r")
    child.expect("HIDDEN")  # the live row: the end of the reasoning so far
    child.send("\x0f")  # Ctrl-O while it thinks
    assert child.expect_exact(["  Alpha beta.", "Turn finished"]) == 0
    child.expect_exact("  Gamma HIDDEN delta.")
    child.expect("Turn finished")
    child.send("\x0f")  # shown already: nothing again, and no folded line either
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    shown = child.logfile_read.getvalue()
    assert shown.count("  Gamma HIDDEN delta.") == 1
    assert "thought for" not in shown
