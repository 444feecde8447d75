"""An answer's markdown on a real terminal, read through a terminal emulator (pyte) as a
person sees it: rendered, and wrapped at word boundaries to the window's width."""

from __future__ import annotations

import re
from pathlib import Path

import pexpect
import pytest

from tests.emulated_terminal import EmulatedTerminal
from tests.processes import write_script

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
    args = ["--model", f"script:{script}", "--approval", "auto", "explain"]
    return EmulatedTerminal(folder, args, columns=columns, rows=60).finish()


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


# The command runs until the test has resized the terminal: the status line says so.
WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.01; done"


@pytest.mark.parametrize("approval", ["auto", "ask"])
def test_after_resizes_the_screen_holds_one_status_line_and_no_fragments(
    tmp_path: Path, approval: str
) -> None:
    script = write_script(
        tmp_path,
        {
            "text": ["I will wait for the check to finish, which takes a little while.\n"],
            "tool_calls": [{"name": "bash", "arguments": {"command": WAIT_FOR_GO}}],
            "usage": {"input_tokens": 1825, "output_tokens": 68},
        },
        {"text": "It finished."},
    )
    args = ["--model", f"script:{script}", "--approval", approval, "wait"]
    terminal = EmulatedTerminal(tmp_path, args, columns=120, rows=24)
    child = terminal.child
    expected = "waiting for your answer" if approval == "ask" else "running bash"
    terminal.read_until(lambda shown: any(expected in row for row in shown))
    for width in (60, 40, 100):
        terminal.resize(width)

        def redrawn(shown: list[str], width: int = width) -> bool:
            status = [row for row in shown if "Esc to stop" in row]
            choices = sum("[y]es" in row for row in shown)
            return (
                len(status) == 1
                and len(status[0]) <= width
                and not any("tokens" in row and "Esc to stop" not in row for row in shown)
                # the live rows come in more than one write: all of them, then
                and (approval != "ask" or choices > 0)
            )

        shown = terminal.read_until(redrawn)
        status = [row for row in shown if "Esc to stop" in row]
        assert len(status) == 1, shown
        assert status[0].startswith("waiting for your answer" if approval == "ask" else "running")
        assert sum("[y]es" in row for row in shown) == (1 if approval == "ask" else 0), shown
        # Nothing but the rows of this width: no piece of a status line drawn before.
        assert not [row for row in shown if "tokens" in row and "Esc to stop" not in row], shown
        assert all(len(row) <= width for row in shown)
    (tmp_path / "go").touch()  # the command may end now: the resizes are seen
    if approval == "ask":
        child.send("y")
    child.expect(pexpect.EOF, timeout=30)
    child.close()
    assert child.exitstatus == 0


def test_resizes_while_an_answer_streams_leave_one_status_line_and_no_fragments(
    tmp_path: Path,
) -> None:
    sentence = "The check ran over **every module** and found the `deadline` ignored twice. "
    pieces = [word + " " for word in (sentence * 60).split(" ") if word]
    script = write_script(
        tmp_path,
        {"text": pieces, "chunk_delay": 0.02, "usage": {"input_tokens": 1825, "output_tokens": 68}},
    )
    args = ["--model", f"script:{script}", "--approval", "auto", "explain"]
    terminal = EmulatedTerminal(tmp_path, args, columns=120, rows=24)
    terminal.read_until(lambda shown: any(row.startswith("writing the answer") for row in shown))
    for width in (60, 40, 100):
        terminal.resize(width)

        def redrawn(shown: list[str], width: int = width) -> bool:
            status = [i for i, row in enumerate(shown) if "Esc to stop" in row]
            return (
                len(status) == 1 and len(shown[status[0]]) < width and "ran" in shown[status[0] - 1]
            )

        shown = terminal.read_until(redrawn)
        status = [row for row in shown if "Esc to stop" in row]
        assert len(status) == 1, shown
        assert status[0].startswith("writing the answer"), shown
        assert not [row for row in shown if "tokens" in row and "Esc to stop" not in row], shown
        assert not [row for row in shown if "writing" in row and row is not status[0]], shown
        # The unfinished line shows rendered, within this width.
        live = shown[: shown.index(status[0])]
        assert not any("**" in row or "`" in row for row in live[-4:]), shown
        assert all(len(row) < width for row in live[-4:]), shown
    rows = terminal.finish()
    assert any(row.startswith("Turn finished") for row in rows)
