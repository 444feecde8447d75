"""A folder flipped to a symlink and back while the file tools run never takes them outside.

A thread swaps ``work/shared`` between a real folder and a link to ``outside`` as fast as
it can, as a command running beside the tools could (``mv --exchange``); every read,
write and edit of a path through it either stays inside or is refused.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from treadle.adapters.tools import EditFileTool, ReadFileTool, WriteFileTool
from treadle.ports.tools import ToolContext

ROUNDS = 200
LIBC = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2


def exchange(first: Path, second: Path) -> None:
    """Swap two names at once (``renameat2`` with ``RENAME_EXCHANGE``): neither is ever missing."""
    if LIBC.renameat2(AT_FDCWD, bytes(first), AT_FDCWD, bytes(second), RENAME_EXCHANGE):
        raise OSError(ctypes.get_errno(), "renameat2")


@pytest.fixture
def flipping(tree: Path) -> Iterator[Path]:
    """``work/shared`` (holding ``note.txt``), flipping until the test ends."""
    shared, link = tree / "shared", tree / "link"
    shared.mkdir()
    (shared / "note.txt").write_text("inside\n")
    (tree.parent / "outside" / "note.txt").write_text("outside\n")
    link.symlink_to(tree.parent / "outside")
    done = threading.Event()
    failed: list[BaseException] = []

    def flip() -> None:
        try:
            while not done.is_set():
                exchange(shared, link)
        except BaseException as error:
            failed.append(error)

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        yield tree.parent / "outside"
    finally:
        done.set()
        flipper.join()
    assert failed == []


def outside_now(outside: Path) -> dict[str, str]:
    """Every file and folder outside, with what the files hold."""
    return {
        str(path.relative_to(outside)): path.read_text() if path.is_file() else "(folder)"
        for path in outside.rglob("*")
    }


@pytest.mark.slow
async def test_a_symlink_swapped_in_mid_call_never_leads_the_tools_outside(
    flipping: Path, context: Callable[..., ToolContext]
) -> None:
    before = outside_now(flipping)
    tools = context()
    shown: list[str] = []
    for number in range(ROUNDS):
        read = await ReadFileTool().run({"path": "shared/note.txt"}, tools)
        wrote = await WriteFileTool().run(
            {"path": f"shared/deep/new-{number}.txt", "content": "x"}, tools
        )
        edited = await EditFileTool().run(
            {"path": "shared/note.txt", "old_string": "side", "new_string": "side!"}, tools
        )
        shown += [read.text, wrote.text, edited.text]

    assert outside_now(flipping) == before
    assert not any("1\toutside" in text for text in shown)
