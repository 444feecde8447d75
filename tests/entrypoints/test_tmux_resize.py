"""Resizes in tmux, a terminal that reflows its rows (as VTE and kitty do): the live
block drawn for the old width must not stay on the screen in pieces."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.processes import treadle_env, write_script

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


class Tmux:
    """A tmux server of the test's own (its own socket), one window of one pane."""

    def __init__(self, socket: Path) -> None:
        self.socket = str(socket)

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, check=True
        )
        return done.stdout

    def screen(self) -> list[str]:
        return [row.rstrip() for row in self("capture-pane", "-p", "-t", "t").split("\n")]

    def until(self, done: Callable[[list[str]], bool]) -> list[str]:
        end = time.monotonic() + 10
        while True:
            shown = self.screen()
            if done(shown) or time.monotonic() > end:
                return shown
            time.sleep(0.05)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    server = Tmux(tmp_path / "tmux.sock")
    yield server
    subprocess.run(["tmux", "-S", server.socket, "kill-server"], capture_output=True)


@pytest.mark.parametrize("approval", ["auto", "ask"])
def test_resizes_in_a_reflowing_terminal_leave_one_status_line_and_no_fragments(
    tmp_path: Path, tmux: Tmux, approval: str
) -> None:
    script = write_script(
        tmp_path,
        {
            "text": ["I will wait for the check to finish, which takes a little while.\n"],
            "tool_calls": [{"name": "bash", "arguments": {"command": "sleep 8"}}],
            "usage": {"input_tokens": 1825, "output_tokens": 68},
        },
        {"text": "It finished."},
    )
    env = treadle_env(tmp_path, TERM="xterm-256color")
    for inherited in ("NO_COLOR", "COLUMNS", "LINES", "TMUX"):
        env.pop(inherited, None)
    model = f"script:{script}"
    command = shlex.join(
        [sys.executable, "-m", "treadle", "--model", model, "--approval", approval, "wait"]
    )
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    tmux(
        "new-session", "-d", "-s", "t", "-x", "120", "-y", "24",
        f"cd {shlex.quote(str(tmp_path))} && env -i {exports} {command}; sleep 60",
    )  # fmt: skip
    expected = "waiting for your answer" if approval == "ask" else "running bash"
    tmux.until(lambda shown: any(row.startswith(expected) for row in shown))
    # What the status line of each width says once drawn for it: the old one, reflowed,
    # says something else.
    fresh = {60: ("1 request", "tokens"), 40: ("", "request"), 100: ("tokens", "\0")}
    for width in (60, 40, 100):
        tmux("resize-window", "-t", "t", "-x", str(width))

        def redrawn(shown: list[str], width: int = width) -> bool:
            status = [row for row in shown if "Esc to stop" in row]
            has, lacks = fresh[width]
            if len(status) != 1 or has not in status[0] or lacks in status[0]:
                return False
            # Any row with a part of a status line is the one status line of this width.
            parts = ("tokens", "request", "Esc", "to stop", expected[:12])
            pieces = [row for row in shown if any(part in row for part in parts)]
            return len(status) == 1 and status[0].startswith(expected) and pieces == status

        shown = tmux.until(redrawn)
        assert redrawn(shown), "\n".join(shown)
        assert sum("[y]es" in row for row in shown) == (approval == "ask"), shown
        assert sum(row == "Task: wait" for row in shown) == 1, shown


def test_resizes_while_an_answer_streams_in_a_reflowing_terminal_leave_no_fragments(
    tmp_path: Path, tmux: Tmux
) -> None:
    sentence = "The check ran over **every module** and found the `deadline` ignored twice. "
    pieces = [word + " " for word in (sentence * 60).split(" ") if word]
    usage = {"input_tokens": 1825, "output_tokens": 68}
    script = write_script(tmp_path, {"text": pieces, "chunk_delay": 0.02, "usage": usage})
    env = treadle_env(tmp_path, TERM="xterm-256color")
    for inherited in ("NO_COLOR", "COLUMNS", "LINES", "TMUX"):
        env.pop(inherited, None)
    command = shlex.join(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", "--approval", "auto", "x"]
    )
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
    tmux(
        "new-session", "-d", "-s", "t", "-x", "120", "-y", "24",
        f"cd {shlex.quote(str(tmp_path))} && env -i {exports} {command}; sleep 60",
    )  # fmt: skip
    tmux.until(lambda shown: any(row.startswith("writing the answer") for row in shown))
    for width in (60, 40, 100):
        tmux("resize-window", "-t", "t", "-x", str(width))

        def redrawn(shown: list[str], width: int = width) -> bool:
            parts = ("tokens", "request", "Esc", "to stop", "writing the")
            pieces = [row for row in shown if any(part in row for part in parts)]
            return (
                len(pieces) == 1
                and pieces[0].startswith("writing the answer")
                and pieces[0].endswith("Esc to stop")
                and len(pieces[0]) < width
            )

        shown = tmux.until(redrawn)
        assert redrawn(shown), "\n".join(shown)
        assert sum(row == "Task: x" for row in shown) <= 1, shown
        status = next(i for i, row in enumerate(shown) if row.startswith("writing the answer"))
        assert all(len(row) < width for row in shown[max(0, status - 4) : status]), shown
