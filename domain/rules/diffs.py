"""The unified diff of a change to one file: what the person approves, sees and keeps.

A file that did not exist is ``None`` before, a file that is gone is ``None`` after;
the headers then name ``/dev/null``, as git's do. A last line without a newline is
marked the way ``diff`` and ``git`` mark it.

Example::

    >>> print(unified_diff("calc.py", "a = 1\\n", "a = 2\\n"), end="")
    --- a/calc.py
    +++ b/calc.py
    @@ -1 +1 @@
    -a = 1
    +a = 2
    >>> diff_counts(unified_diff("new.txt", None, "one\\ntwo\\n"))
    (2, 0)
"""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file"
DIFF_LINES = 2_000
"""The most lines a diff kept with a tool's result (the transcript, ``--json``) may
have; the middle of a longer one is left out, with a line saying how much. The
approval of a change is never given a bounded diff: it shows all of what it asks."""
DIFF_LINE_WIDTH = 2_000
"""Characters kept of one line of a diff (a minified file is one line)."""


def unified_diff(path: str, before: str | None, after: str | None, *, context: int = 3) -> str:
    """The unified diff from ``before`` to ``after`` of the file at ``path``; "" when
    nothing changed."""
    if before == after:
        return ""
    old, new = _lines(before or ""), _lines(after or "")
    source = "/dev/null" if before is None else f"a/{path}"
    target = "/dev/null" if after is None else f"b/{path}"
    lines = list(difflib.unified_diff(old, new, source, target, n=context))
    if not lines:  # an empty file created, or one emptied and deleted: headers only
        lines = [f"--- {source}\n", f"+++ {target}\n"]
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(f"{line}\n{NO_NEWLINE}\n")
    return "".join(out)


def _lines(text: str) -> list[str]:
    """The lines of ``text``, each with its newline: only ``\\n`` ends a line here (a
    form feed or a lone ``\\r`` is part of one, as git and diff see it)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by ``diff`` (its headers are not counted)."""
    added = removed = 0
    for line in diff.split("\n"):
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


def describe_counts(diff: str) -> str:
    """``+3 −1``: what a diff adds and removes, for a status line.

    >>> describe_counts("--- a/x\\n+++ b/x\\n@@ -1 +1,2 @@\\n-a\\n+b\\n+c\\n")
    '+2 −1'
    """
    added, removed = diff_counts(diff)
    return f"+{added} −{removed}"


def bounded_diff(diff: str, max_lines: int = DIFF_LINES, width: int = DIFF_LINE_WIDTH) -> str:
    """``diff`` short enough to keep with every event: its head and its tail, and a line
    in between saying how many lines were left out; over-long lines are cut, saying so.
    Nothing is ever left out without a line that says it.

    >>> bounded_diff("".join(f"+{n}\\n" for n in range(10)), max_lines=4).splitlines()
    ['+0', '+1', '[… 6 lines of the diff left out …]', '+8', '+9']
    """
    lines = [line.removesuffix("\n") for line in _lines(diff)]
    if len(lines) > max_lines:
        head, tail = max_lines // 2, max_lines - max_lines // 2
        left_out = len(lines) - head - tail
        marker = f"[… {left_out:,} lines of the diff left out …]"
        lines = [*lines[:head], marker, *lines[-tail:]]
    elif all(len(line) <= width for line in lines):
        return diff
    return "".join(_cut(line, width) + "\n" for line in lines)


def _cut(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return f"{line[:width]} [… {len(line) - width:,} more characters on this line]"
