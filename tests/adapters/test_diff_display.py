"""Diffs on the screen: coloured under the call in the terminal, in the approval question
(folded when long, all of it on a key), plain in the headless log."""

from __future__ import annotations

import asyncio
import io
import json
import re

import pytest

from tests.adapters.test_blessed_terminal import Rig
from treadle.adapters.blessed_terminal.display import Styles, diff_lines
from treadle.adapters.blessed_terminal.line_editor import Key
from treadle.adapters.terminal.plain_terminal import PlainTerminal
from treadle.domain.rules.diffs import unified_diff
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import ToolFinished, ToolStarted
from treadle.domain.values.tools import ApprovalRequest

EDIT = ToolCall("call_1", "edit_file", json.dumps({"path": "calc.py"}))
DIFF = unified_diff(
    "calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"
)
LONG = unified_diff("big.py", None, "".join(f"line {n}\n" for n in range(300)))


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    monkeypatch.delenv("NO_COLOR", raising=False)
    return Rig()


def finished(diff: str) -> ToolFinished:
    return ToolFinished(EDIT, "replaced 1 occurrence · +1 −1", False, 0.01, "", diff)


def test_the_diff_of_a_change_shows_under_its_call_added_green_and_removed_red(rig: Rig) -> None:
    rig.start()
    rig.terminal.show(ToolStarted(EDIT, "edit calc.py"))
    rig.terminal.show(finished(DIFF))
    lines = rig.lines
    start = lines.index("✓ edit_file edit calc.py · replaced 1 occurrence · +1 −1")
    assert lines[start + 1 : start + 7] == [
        "  --- a/calc.py",
        "  +++ b/calc.py",
        "  @@ -1,2 +1,2 @@",
        "   def add(a, b):",
        "  -    return a - b",
        "  +    return a + b",
    ]
    shown = rig.out.getvalue()
    assert rig.term.red("-    return a - b") in shown
    assert rig.term.green("+    return a + b") in shown


def test_a_long_diff_under_a_call_keeps_its_head_and_tail_and_says_how_much_is_folded() -> None:
    rows = diff_lines(LONG, Styles(), shown=40, hint="treadle diff shows every change")
    assert len(rows) == 41
    assert rows[:3] == ["--- /dev/null", "+++ b/big.py", "@@ -0,0 +1,300 @@"]
    assert rows[27] == "[… 263 more lines of the diff: treadle diff shows every change …]"
    assert rows[-1] == "+line 299"
    assert len(diff_lines(LONG, Styles())) == 303  # unfolded when no bound is asked for


async def test_the_approval_for_a_write_shows_the_diff_it_asks_about(rig: Rig) -> None:
    rig.terminal.can_answer = True
    rig.start()
    asking = asyncio.create_task(
        rig.terminal.ask_approval(ApprovalRequest("edit_file", "edit calc.py", "", diff=DIFF))
    )
    await asyncio.sleep(0)
    lines = rig.lines
    question = lines.index("? Allow edit_file: edit calc.py")
    assert lines[question + 5 : question + 7] == ["  -    return a - b", "  +    return a + b"]
    assert "[v]iew all" not in rig.screen().cursor_row  # short: nothing folded
    rig.terminal.press("y")
    assert await asyncio.wait_for(asking, 1) == "yes"
    rig.terminal.show(ToolStarted(EDIT, "edit calc.py"))
    rig.terminal.show(finished(DIFF))
    assert rig.out.getvalue().count("+    return a + b") == 1  # not shown a second time


async def test_a_long_diff_to_approve_is_folded_saying_so_and_v_shows_all_of_it(rig: Rig) -> None:
    rig.terminal.can_answer = True
    rig.start()
    request = ApprovalRequest("write_file", "write big.py (2,190 bytes)", "", diff=LONG)
    asking = asyncio.create_task(rig.terminal.ask_approval(request))
    await asyncio.sleep(0)
    shown = rig.out.getvalue()
    assert "more lines of the diff: press v to see all of it" in shown
    assert "+line 299" in shown and "+line 150" not in shown  # both ends, never cut silently
    assert "[v]iew all" in rig.screen().cursor_row
    rig.terminal.press("v")
    await asyncio.sleep(0)
    assert "+line 150" in rig.out.getvalue()
    rig.terminal.press("n")
    await asyncio.sleep(0)
    rig.terminal.press(Key.ENTER)  # no words for the model: a plain no
    assert await asyncio.wait_for(asking, 1) == "no"


def test_the_headless_log_shows_the_diff_as_plain_lines_under_the_call() -> None:
    out = io.StringIO()
    PlainTerminal(out).show(finished(DIFF))
    assert out.getvalue().splitlines() == [
        "  ✓ edit_file: replaced 1 occurrence · +1 −1",
        "    --- a/calc.py",
        "    +++ b/calc.py",
        "    @@ -1,2 +1,2 @@",
        "     def add(a, b):",
        "    -    return a - b",
        "    +    return a + b",
    ]
    assert "\x1b" not in out.getvalue()


def test_a_diff_cannot_send_escape_codes_to_the_terminal(rig: Rig) -> None:
    rig.start()
    hostile = unified_diff("x", None, "\x1b]0;owned\x07\x1b[2Jtext\n")
    rig.terminal.show(finished(hostile))
    assert "owned" not in rig.out.getvalue() and "  +text" in rig.lines


async def test_a_long_line_to_approve_shows_its_head_and_tail_and_v_shows_all_of_it(
    rig: Rig,
) -> None:
    rig.terminal.can_answer = True
    rig.start()
    line = "a" * 3_000 + "MIDDLE" + "z" * 3_000
    diff = unified_diff("min.js", None, line + "\n")
    request = ApprovalRequest("write_file", "write min.js (6,007 bytes)", "", diff=diff)
    asking = asyncio.create_task(rig.terminal.ask_approval(request))
    await asyncio.sleep(0)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", rig.out.getvalue())  # colours off
    folded = f"+{'a' * 299} [… 5,607 more characters on this line: press v to see all of it …]"
    assert f"  {folded} {'z' * 100}\n" in shown
    assert "MIDDLE" not in shown and "[v]iew all" in rig.screen().cursor_row
    rig.terminal.press("v")
    await asyncio.sleep(0)
    assert "+" + line in rig.out.getvalue()
    rig.terminal.press("y")
    assert await asyncio.wait_for(asking, 1) == "yes"
