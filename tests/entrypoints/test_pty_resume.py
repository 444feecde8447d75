"""``treadle --resume ID`` in a real pseudo-terminal, read through a terminal emulator
(pyte): the session opens where it was — its id, its task, its last exchanges folded —
then the prompt, not an empty new-looking session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.emulated_terminal import EmulatedTerminal
from tests.processes import run_treadle, treadle_env, write_script

pytestmark = pytest.mark.slow


def test_a_resumed_session_opens_with_its_task_and_last_exchanges(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": "It said hi.\n\n" + "\n".join(f"detail {n}" for n in range(1, 7))},
    )
    env = treadle_env(tmp_path)
    first = ["--model", f"script:{script}", "--session-id", "s1", "--print", "greet the world"]
    assert run_treadle(*first, cwd=tmp_path, env=env).returncode == 0
    for n in (2, 3, 4):
        resumed = run_treadle("--resume", "s1", "--print", f"again {n}", cwd=tmp_path, env=env)
        assert resumed.returncode == 0, resumed.stderr
    terminal = EmulatedTerminal(tmp_path, ["--resume", "s1"], columns=60, rows=40)
    shown = terminal.read_until(lambda shown: "›" in shown)  # the prompt, waiting
    start = shown.index("resumed s1")
    assert shown[start : start + 3] == [
        "resumed s1",
        "Task: greet the world",
        "  … 1 earlier exchange",
    ]
    said = [row for row in shown if row.startswith("› again")]
    assert said == ["› again 2", "› again 3", "› again 4"]
    exchange = shown[shown.index("› again 4") :]
    assert exchange[1:8] == [
        "  ▸ bash echo hi",
        "  It said hi.",
        "  detail 1",
        "  detail 2",
        "  detail 3",
        "  … 3 more lines",
        "  Turn finished",
    ]
    greeting = next(i for i, row in enumerate(shown) if row.startswith("Type a task"))
    assert start < shown.index("› again 4") < greeting < shown.index("›")
    terminal.child.send("\x04")  # Ctrl-D at the prompt leaves
    terminal.finish()
