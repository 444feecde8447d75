"""A repository's own settings files that are not files (hostile2): ``.claude/settings.json``
or ``.treadle.toml`` committed as a symlink to ``/dev/zero`` (git keeps symlinks; a
clone has it) made treadle read without end at start-up — gigabytes in seconds, in a
folder nobody trusted — until the kernel killed it. treadle runs under an address-space
cap here, so that the machine is safe when this breaks again."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import treadle_env

pytestmark = pytest.mark.slow

CAP = 3 * 1024**3


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def _run(folder: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treadle", "--model", "demo", "--print", "hi"],
        cwd=folder,
        env=treadle_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        preexec_fn=_capped,
    )


def test_claude_settings_linked_to_dev_zero_are_left_out_and_the_session_runs(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / ".claude" / "settings.json").symlink_to("/dev/zero")
    done = _run(work, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "settings.json" in done.stdout + done.stderr  # said why its hooks are not read
    assert "not a regular file" in done.stdout + done.stderr


def test_a_project_file_linked_to_dev_zero_is_one_line_and_exit_2(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".treadle.toml").symlink_to("/dev/zero")
    done = _run(work, tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and ".treadle.toml" in done.stderr
    assert "not a regular file" in done.stderr
