"""What tests of real processes share: is a pid alive, wait for a pid file, run treadle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


def until(predicate: Callable[[], bool], seconds: float) -> bool:
    """Poll ``predicate`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(0.02)
    return True


def gone_within(pid: int, seconds: float = 2.0) -> bool:
    return until(lambda: not is_running(pid), seconds)


def wait_for_pid(pid_file: Path, seconds: float = 20.0) -> int:
    """The pid a command wrote to ``pid_file`` (``echo $! > file``), once it is there."""

    def written() -> bool:
        return pid_file.exists() and bool(pid_file.read_text().strip())

    if not until(written, seconds):
        raise AssertionError(f"the command never wrote {pid_file.name}")
    return int(pid_file.read_text())


def write_script(folder: Path, *responses: Mapping[str, object]) -> Path:
    """A ScriptedModel JSON file for ``--model script:PATH``."""
    script = folder / "script.json"
    script.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return script


def treadle_env(home: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment to run this checkout's treadle in, state and config under ``home``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **extra}
    if home is not None:
        env["TREADLE_STATE_DIR"] = str(home / "state")
        env["TREADLE_CONFIG_DIR"] = str(home / "config")
    return env


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    """A small environment of its own for treadle (PATH only of what this one has), its
    state and configuration under ``home``: nothing of the caller's settings leaks in."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "TREADLE_STATE_DIR": str(home / "state"),
        "TREADLE_CONFIG_DIR": str(home / "config"),
        **extra,
    }


def run_treadle(
    *args: str, cwd: Path, env: Mapping[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``python -m treadle ARGS`` to its end, with stdin closed and output captured."""
    return subprocess.run(
        [sys.executable, "-m", "treadle", *args],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
