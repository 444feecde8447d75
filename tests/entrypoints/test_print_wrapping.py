"""``--print`` writes the answer word-wrapped to the terminal when stdout is one (read
in a real pseudo-terminal through a terminal emulator), and unchanged into a pipe."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.emulated_terminal import EmulatedTerminal
from tests.processes import run_treadle, treadle_env, write_script

pytestmark = pytest.mark.slow

ANSWER = (
    "The deadline passed while the question waited, so its clock now stops until the "
    "answer comes.\n- one item that is long enough to wrap"
)


def test_print_on_a_terminal_wraps_the_answer_between_words(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": ANSWER, "chunks": 9})
    args = ["--model", f"script:{script}", "--print", "explain"]
    shown = EmulatedTerminal(tmp_path, args, columns=40, rows=20).finish()
    start = shown.index("Task: explain") + 1
    assert shown[start : start + 4] == [
        "The deadline passed while the question",
        "waited, so its clock now stops until the",
        "answer comes.",
        "- one item that is long enough to wrap",
    ]
    assert shown[start + 4].startswith("1 request · ")
    assert any(row.startswith("Turn finished") for row in shown)


def test_print_on_a_terminal_breaks_its_own_lines_between_words_too(tmp_path: Path) -> None:
    command = "find . -name '*.py' -not -path './.venv/*' -not -path './build/*' | wc -l"
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "Counted."},
    )
    args = ["--model", f"script:{script}", "--print", "--approval", "auto", "count"]
    shown = EmulatedTerminal(tmp_path, args, columns=40, rows=20).finish()
    start = next(i for i, row in enumerate(shown) if row.startswith("→ bash: find"))
    assert shown[start : start + 4] == [
        "→ bash: find . -name '*.py' -not -path",
        "  './.venv/*' -not -path './build/*' |",
        "  wc -l",
        shown[start + 3],
    ]
    assert shown[start + 3].startswith("  ✓ bash: exit 0")


def test_print_into_a_pipe_writes_the_answer_unchanged(tmp_path: Path) -> None:
    script = write_script(tmp_path, {"text": ANSWER, "chunks": 9})
    env = treadle_env(tmp_path, COLUMNS="40")
    result = run_treadle("--model", f"script:{script}", "--print", "explain", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert ANSWER + "\n" in result.stdout
