"""The diff a file tool's change makes, as the person approves it and sees it.

An approval carries the whole diff (:func:`change_diff`): the prompt folds it for the
screen and shows all of it on a key. The tool's result keeps it bounded
(:func:`~treadle.domain.rules.diffs.bounded_diff`), saying what it left out.

Example::

    change_diff("calc.py", b"x = 1\\n", "x = 2\\n")  # "--- a/calc.py\\n+++ b/calc.py\\n@@ …"
"""

from __future__ import annotations

from treadle.domain.rules.diffs import unified_diff
from treadle.domain.values.text import well_formed

BINARY_SNIFF = 8192
DIFF_UP_TO = 1 << 20
"""Larger files get a line saying so instead of a line-by-line diff (too slow to make)."""


def looks_binary(start: bytes) -> bool:
    return b"\0" in start


def change_diff(shown: str, before: bytes | str | None, after: bytes | str | None) -> str:
    """The whole diff a change makes to the file ``shown`` (None: it is not there), safe
    to keep and show: nothing of it is left out. A binary or very large file gets one
    line instead, which says that its content is not shown."""
    sides = [
        side.encode("utf-8", "surrogateescape") if isinstance(side, str) else side
        for side in (before, after)
    ]
    if any(side is not None and len(side) > DIFF_UP_TO for side in sides):
        limit = f"{DIFF_UP_TO / (1 << 20):g} MiB"
        return f"[{shown} is over {limit}: too large for a diff, its content is not shown]\n"
    if any(side is not None and looks_binary(side[:BINARY_SNIFF]) for side in sides):
        return f"[{shown} is a binary file: its content is not shown as a diff]\n"
    old, new = (None if side is None else side.decode("utf-8", "replace") for side in sides)
    return well_formed(unified_diff(shown, old, new))
