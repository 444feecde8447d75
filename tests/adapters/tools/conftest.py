"""A real workspace on disk, with symlinks that point out of it, and a context to run tools in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from treadle.adapters.fakes import FakeClock
from treadle.adapters.process import SubprocessRunner
from treadle.domain.values.tools import ToolLimits
from treadle.ports.tools import ToolContext


async def no_answer(question: str) -> str | None:
    return None


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The workspace, in ``tmp_path / "work"``; beside it ``outside`` and ``session``."""
    workspace, outside, session = tmp_path / "work", tmp_path / "outside", tmp_path / "session"
    for folder in (workspace / "src" / "pkg", outside, session):
        folder.mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("import os\n\ndef main():\n    return os.sep\n")
    (workspace / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'Needle'\n")
    (workspace / "README.md").write_text("# Demo\n\nFind the needle here.\n")
    (workspace / "data.bin").write_bytes(b"\x00\x01needle\x02" * 10)
    (workspace / ".ignore").write_text("skipped.txt\n")
    (workspace / "skipped.txt").write_text("needle in an ignored file\n")
    (outside / "secret.txt").write_text("needle outside the workspace\n")
    (session / "output-1.log").write_text("saved line 1\nsaved line 2\n")
    (workspace / "link_out.txt").symlink_to(outside / "secret.txt")
    (workspace / "dir_out").symlink_to(outside)
    (workspace / "link_in.py").symlink_to(workspace / "src" / "app.py")
    return workspace


def make_context(tree: str | Path, **limits: int) -> ToolContext:
    """What a tool is given, for a workspace ``tree`` with ``session`` beside it."""
    return ToolContext(
        workspace=str(tree),
        session_dir=str(Path(tree).parent / "session"),
        runner=SubprocessRunner(),
        clock=FakeClock(),
        limits=ToolLimits(default_timeout=30.0, **limits),  # type: ignore[arg-type]
        emit=lambda event: None,
        ask_question=no_answer,
        until_stopped=never_stopped,
    )


@pytest.fixture
def context(tree: Path) -> Callable[..., ToolContext]:
    return lambda **limits: make_context(tree, **limits)


async def never_stopped() -> None:
    await asyncio.Event().wait()
