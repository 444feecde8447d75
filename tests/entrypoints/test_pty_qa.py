"""The interactive terminal attacked in a real pseudo-terminal: stdin closed, a paste of
many lines, and Ctrl-O while the model is still thinking."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.entrypoints.test_pty_terminal import environment, spawn, treadle_args
from tests.processes import write_script

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
