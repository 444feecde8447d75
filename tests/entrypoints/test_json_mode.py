"""Headless runs: ``--json`` writes one JSON event per line, and a signal pauses the turn
(exit 130) with every process it started cleaned up."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import gone_within, treadle_env, wait_for_pid, write_script

SLEEP_COMMAND = "sleep 30 & echo $! > sleep.pid; wait"


def start(folder: Path, script: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", *flags, "the task"],
        cwd=folder,
        env=treadle_env(folder),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_every_line_is_one_json_event_and_the_last_is_the_outcome(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        {
            "text": ["Listing ", "\x1b[31mfiles\n"],
            "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > hi.txt"}}],
            "usage": {"input_tokens": 50, "output_tokens": 7},
        },
        {"text": "Done.", "usage": {"input_tokens": 80, "output_tokens": 2}},
    )
    process = start(tmp_path, script, "--json")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "\x1b" not in out
    records = [json.loads(line) for line in out.splitlines()]
    kinds = [record["type"] for record in records]
    assert kinds[0] == "turn_started" and "message_added" not in kinds
    for kind in ("request_sent", "answer_delta", "tool_started", "tool_finished", "usage_updated"):
        assert kind in kinds, kind
    assert records[-1] == {
        **records[-1],
        "type": "turn_ended",
        "exit_code": 0,
        "line": "Turn finished",
    }
    assert records[-1]["usage"] == {
        "input_tokens": 130,
        "output_tokens": 9,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert (tmp_path / "hi.txt").read_text() == "hi\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "flag"),
    [
        (signal.SIGTERM, "--json"),
        (signal.SIGINT, "--json"),
        (signal.SIGTERM, "--print"),
        (signal.SIGHUP, "--print"),
        (signal.SIGQUIT, "--json"),
    ],
)
def test_a_signal_pauses_a_headless_turn_and_kills_its_command(
    tmp_path: Path, signum: int, flag: str
) -> None:
    script = write_script(
        tmp_path, {"tool_calls": [{"name": "bash", "arguments": {"command": SLEEP_COMMAND}}]}
    )
    process = start(tmp_path, script, flag, "--approval", "auto")
    pid = wait_for_pid(tmp_path / "sleep.pid")
    process.send_signal(signum)
    out, err = process.communicate(timeout=10)
    assert process.returncode == 130, err
    if flag == "--json":
        last = json.loads(out.splitlines()[-1])
        assert (last["type"], last["exit_code"], last["line"]) == ("turn_ended", 130, "Turn paused")
    else:
        assert out.splitlines()[-1].startswith("Turn paused — resume with: treadle --resume ")
    assert gone_within(pid), f"sleep {pid} is still running"


@pytest.mark.parametrize("verbose", [False, True], ids=["print", "print-verbose"])
def test_print_shows_the_models_reasoning_only_with_verbose(tmp_path: Path, verbose: bool) -> None:
    script = write_script(
        tmp_path,
        {
            "reasoning": [{"kind": "reasoning_content", "text": "Two files, then done."}],
            "text": "There are two files.",
            "usage": {"input_tokens": 50, "output_tokens": 7},
        },
    )
    process = start(tmp_path, script, "--print", *(["--verbose"] if verbose else []))
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    lines = out.splitlines()
    assert ("thinking: Two files, then done." in lines) is verbose
    assert "There are two files." in lines
    transcript = next((tmp_path / "state" / "sessions").glob("*/transcript.jsonl"))
    kept = [json.loads(line) for line in transcript.read_text().splitlines()]
    [answer] = [
        r["message"]
        for r in kept
        if r["type"] == "message_added" and r["message"]["role"] == "assistant"
    ]
    assert answer["reasoning"] == [
        {"kind": "reasoning_content", "text": "Two files, then done.", "seal": "", "position": 0}
    ]


CLOSE_FAILS = """
import sys
from treadle.entrypoints import container, cli

async def end_session(built):
    raise RuntimeError("the close failed")

container.end_session = end_session
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("flag", ["--json", "--print"])
def test_a_session_whose_close_fails_still_ends_with_the_outcome(tmp_path: Path, flag: str) -> None:
    """The outcome waits for the session's end; a bug in that end (one line on stderr,
    exit 1) does not swallow it."""
    script = write_script(tmp_path, {"text": "Done."})
    result = subprocess.run(
        [sys.executable, "-c", CLOSE_FAILS, "--model", f"script:{script}", flag, "go"],
        cwd=tmp_path,
        env=treadle_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "internal error: RuntimeError: the close failed" in result.stderr
    last = result.stdout.splitlines()[-1]
    assert (json.loads(last)["line"] if flag == "--json" else last) == "Turn finished"


LEAVING = """
import sys
from treadle.adapters.leave_now import LeaveNow
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import TurnEnded, TurnStarted
from treadle.domain.values.outcome import Stopped, end_turn
from treadle.entrypoints.wiring import build_terminal

leave = LeaveNow()
screen = build_terminal(sys.argv[1], " (resume)", leave)
screen.show(TurnStarted("the task"))
# What the agent's abandon_turn does as treadle leaves: the running turn ends paused.
leave.record = lambda: screen.show(TurnEnded(end_turn(Stopped()), Usage(), 1, 0.1))
leave()
"""


@pytest.mark.parametrize("mode", ["json", "plain"])
def test_leaving_at_once_writes_the_outcome_the_screen_held_for_the_end(mode: str) -> None:
    """A second Ctrl-C leaves with no winding down (``os._exit``): the paused outcome,
    held back for the session's end that never comes, is written on the way out."""
    result = subprocess.run(
        [sys.executable, "-c", LEAVING, mode],
        env=treadle_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 130, result.stderr
    last = result.stdout.splitlines()[-1]
    if mode == "json":
        assert (json.loads(last)["line"], json.loads(last)["exit_code"]) == ("Turn paused", 130)
    else:
        assert last == "Turn paused (resume)"
