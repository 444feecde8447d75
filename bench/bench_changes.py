"""What confinement costs a command, and what a checkpoint costs a turn (issue 14).

Every figure is set against a baseline measured in the same run: a confined ``true``
against the same runner unconfined, interleaved so load hits both alike; a checkpoint
of a tree of a few thousand files against ``git status`` on a repository of the same
files, the least a tool that looks at every file does.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from treadle.adapters.checkpoints import shadow_for
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.sandbox import Sandbox, probe
from treadle.domain.rules.diffs import unified_diff
from treadle.domain.values.process import ProcessSpec

ROUNDS = 60
FILES = 3_000
TURNS = 5


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


async def _confinement(workspace: str) -> list[str]:
    support = probe()
    if not support.available:
        return [f"sandbox: not measured, {support.reason}"]
    runners = {
        "unconfined": SubprocessRunner(),
        "workspace-write": SubprocessRunner(sandbox=Sandbox("workspace-write", workspace)),
        "read-only": SubprocessRunner(sandbox=Sandbox("read-only", workspace)),
    }
    spec = ProcessSpec("true", cwd=workspace, timeout=30)
    samples: dict[str, list[float]] = {name: [] for name in runners}
    for runner in runners.values():
        await runner.run(spec)
    for _ in range(ROUNDS):  # interleaved
        for name, runner in runners.items():
            started = time.perf_counter()
            await runner.run(spec)
            samples[name].append(time.perf_counter() - started)
    base = _ms(samples["unconfined"])
    lines = [f"sandbox (Landlock ABI {support.abi}): runner `true` unconfined {base:.2f} ms/call"]
    for name in ("workspace-write", "read-only"):
        ours = _ms(samples[name])
        lines.append(
            f"sandbox {name}: {ours:.2f} ms/call = {ours / base:.2f}x unconfined "
            f"(+{ours - base:.2f} ms a command)"
        )
    return lines


def _make_tree(root: Path) -> None:
    for number in range(FILES):
        folder = root / f"pkg{number % 30}" / f"mod{number % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file{number}.py").write_text(f"value = {number}\n" * 20)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for number in range(300):
        (root / "build" / f"out{number}.o").write_bytes(b"\0" * 256)


def _a_turn(root: Path, turn: int) -> None:
    files = sorted(root.glob("pkg*/mod*/*.py"))
    for path in files[turn * 20 : turn * 20 + 20]:
        path.write_text(path.read_text() + f"# edited in turn {turn}\n")
    for path in files[-(turn + 1) * 5 : -turn * 5 or None]:
        path.unlink()
    for number in range(10):
        (root / f"new{turn}-{number}.py").write_text("made\n")


def _checkpoints(base: Path) -> list[str]:
    workspace, state, plain = base / "work", base / "state", base / "plain"
    workspace.mkdir()
    _make_tree(workspace)
    shutil.copytree(workspace, plain)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], capture_output=True, check=True, cwd=plain)

    git("init", "-q")
    git("add", "-A")
    status = [_timed(lambda: git("status", "--porcelain")) for _ in range(9)]
    status_ms = _ms(status[1:])
    shadow = shadow_for(str(state), str(workspace))
    first = _timed(lambda: shadow.record().unwrap()) * 1000
    warm = _ms([_timed(lambda: shadow.record().unwrap()) for _ in range(5)])
    after_turn, diff, undo = [], [], []
    for turn in range(TURNS):
        _a_turn(workspace, turn)
        diff.append(_timed(lambda: shadow.changes().unwrap()))
        after_turn.append(_timed(lambda: shadow.record().unwrap()))
        _a_turn(workspace, turn + TURNS)
        undo.append(_timed(lambda: shadow.undo().unwrap()))
    size = sum(f.stat().st_size for f in (state).rglob("*") if f.is_file()) / (1 << 20)
    return [
        f"checkpoint of {FILES:,} files (+300 ignored): `git status` on the same tree "
        f"{status_ms:.1f} ms (the baseline)",
        f"checkpoint: first {first:.0f} ms = {first / status_ms:.1f}x (hashes every file); "
        f"unchanged {warm:.1f} ms = {warm / status_ms:.1f}x",
        f"checkpoint after a turn (20 edits, 5 deletions, 10 new files): {_ms(after_turn):.1f} ms"
        f" = {_ms(after_turn) / status_ms:.1f}x; treadle diff {_ms(diff):.1f} ms = "
        f"{_ms(diff) / status_ms:.1f}x; undo {_ms(undo):.1f} ms = {_ms(undo) / status_ms:.1f}x",
        f"checkpoint state after {1 + 5 + 2 * TURNS} checkpoints: {size:.1f} MiB",
    ]


def _diff_rule() -> list[str]:
    before = "".join(f"line {n} of a long module\n" for n in range(5_000))
    after = before.replace("line 2500 of", "line 2500, edited, of")
    ms = _ms([_timed(lambda: unified_diff("big.py", before, after)) for _ in range(10)])
    return [f"diff of one edit in a 5,000-line file: {ms:.1f} ms"]


def run() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="treadle-bench-") as folder:
        lines = asyncio.run(_confinement(folder))
    with tempfile.TemporaryDirectory(prefix="treadle-bench-", dir=_outside_tmp()) as folder:
        lines += _checkpoints(Path(folder))
    return lines + _diff_rule()


def _outside_tmp() -> str | None:
    """A folder on disk rather than in memory, when there is one (/tmp may be tmpfs)."""
    return "/var/tmp" if os.path.isdir("/var/tmp") else None


if __name__ == "__main__":
    print("\n".join(run()))
