"""An answer's markdown on a real terminal, read through a terminal emulator (pyte) as a
person sees it: rendered, and wrapped at word boundaries to the window's width."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.processes import treadle_env, write_script

pytestmark = pytest.mark.slow

PARAGRAPH = (
    "I ran the whole suite after the fix and every test passed, including the one that "
    "checks its deadline handling, which was complete nonsense before."
)
ANSWER = f"""## What I did

{PARAGRAPH}

- changed **`runner.py`** so that a command stopped at its deadline keeps the output it printed
- added a test

```python
def deadline(seconds):
    return seconds * 2
```

| file | change |
|---|---|
| runner.py | keeps partial output at the deadline |
| test_runner.py | new |

Done.
"""


def screen_after_turn(folder: Path, columns: int) -> list[str]:
    """The rows of a terminal ``columns`` wide after a turn that answers ``ANSWER``,
    streamed in pieces that cut words and markup in two."""
    pieces = [ANSWER[i : i + 9] for i in range(0, len(ANSWER), 9)]
    script = write_script(folder, {"text": pieces})
    env = treadle_env(folder, TERM="xterm-256color")
    for inherited in ("NO_COLOR", "COLUMNS", "LINES"):
        env.pop(inherited, None)
    rows = 60
    child = pexpect.spawn(
        sys.executable,
        ["-m", "treadle", "--model", f"script:{script}", "--approval", "auto", "explain"],
        cwd=str(folder),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(rows, columns),
    )
    screen = pyte.Screen(columns, rows)
    stream = pyte.Stream(screen)
    while True:
        try:
            stream.feed(child.read_nonblocking(65536, timeout=30))
        except pexpect.EOF:
            break
    child.close()
    assert child.exitstatus == 0
    return [row.rstrip() for row in screen.display]


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_an_answer_is_rendered_and_wrapped_at_word_boundaries(tmp_path: Path, columns: int) -> None:
    rows = screen_after_turn(tmp_path, columns)
    text = "\n".join(rows)
    assert "Turn finished" in text
    assert "What I did" in text and "## " not in text  # a heading, without its marks
    assert "**" not in text and "`runner.py`" not in text  # emphasis and code rendered
    assert "```" not in text and "|---|" not in text
    # The paragraph's words, read back row by row, are its words: none broken in two.
    start = next(i for i, row in enumerate(rows) if row.startswith("I ran the whole"))
    words: list[str] = []
    for row in rows[start:]:
        if not row:
            break
        words += row.split()
    assert words == PARAGRAPH.split()
    assert all(len(row) < columns for row in rows[start : start + len(words)])
    # A list item wraps under its own text, not at column 0.
    item = next(i for i, row in enumerate(rows) if row.startswith("• changed"))
    following = rows[item + 1]
    if not following.startswith("• "):
        assert following.startswith("  ") and following.strip()
    # Fenced code keeps its lines, behind a gutter; the table is drawn with its columns.
    assert any(re.fullmatch(r"│ def deadline\(seconds\):", row) for row in rows)
    assert any(row.startswith("┌") for row in rows) and any(row.startswith("└") for row in rows)
    header = next(row for row in rows if "file" in row and "change" in row)
    body = next(row for row in rows if row.startswith("│ runner.py"))
    assert header.index("│", 1) == body.index("│", 1)  # the columns line up
