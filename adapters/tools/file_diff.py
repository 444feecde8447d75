"""The diff a file tool's change makes, as the person approves it and sees it.

Example::

    change_diff("calc.py", b"x = 1\\n", "x = 2\\n")  # "--- a/calc.py\\n+++ b/calc.py\\n@@ …"
"""

from __future__ import annotations

from treadle.domain.rules.diffs import bounded_diff, unified_diff
from treadle.domain.values.text import well_formed

BINARY_SNIFF = 8192
DIFF_UP_TO = 1 << 20
"""Larger files get a line saying so instead of a line-by-line diff (too slow to make)."""


def looks_binary(start: bytes) -> bool:
    return b"\0" in start


def change_diff(shown: str, before: bytes | str | None, after: bytes | str | None) -> str:
    """The diff a change makes to the file ``shown`` (None: it is not there), bounded and
    safe to keep and show; a binary or very large file gets a line saying so instead."""
    sides = [
        side.encode("utf-8", "surrogateescape") if isinstance(side, str) else side
        for side in (before, after)
    ]
    if any(side is not None and len(side) > DIFF_UP_TO for side in sides):
        source = "/dev/null" if before is None else f"a/{shown}"
        return f"--- {source}\n+++ b/{shown}\n[too large for a line-by-line diff]\n"
    if any(side is not None and looks_binary(side[:BINARY_SNIFF]) for side in sides):
        return f"Binary files a/{shown} and b/{shown} differ\n"
    old, new = (None if side is None else side.decode("utf-8", "replace") for side in sides)
    return well_formed(bounded_diff(unified_diff(shown, old, new)))
