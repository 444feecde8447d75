"""A session whose secret was redacted replays with ``--check`` and no divergence, even
where the window's accounting decides by size: the ``max_tokens`` of each request, and
the newest result cut to fit. The live session estimates, and cuts, the text as the
transcript keeps it, which is all a replay has. End to end: ``treadle`` against the
test HTTP model server, then ``treadle replay``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.http.server import Reply
from tests.batch_support import model_server
from tests.processes import bare_env

pytestmark = pytest.mark.slow

SECRET = "s3cr3t-0123456789abcdefghijklmnopqrstuvwxyz"
"""Much longer than ``[redacted]``: redacted, a text is 32 bytes shorter."""
WINDOW = 4000


def chat_stream(*, text: str = "", command: str = "", prompt_tokens: int = 50) -> bytes:
    """A Chat Completions stream: a text, or a call to bash; the prompt as counted."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({'id': 'c', 'model': 'm', 'choices': [choice]})}\n\n"

    out = chunk({"role": "assistant"})
    if command:
        call = {"index": 0, "id": "call_1", "type": "function"}
        call["function"] = {"name": "bash", "arguments": json.dumps({"command": command})}
        out += chunk({"tool_calls": [call]}) + chunk({}, "tool_calls")
    else:
        out += chunk({"content": text}) + chunk({}, "stop")
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 20}
    out += f"data: {json.dumps({'id': 'c', 'choices': [], 'usage': usage})}\n\n"
    return (out + "data: [DONE]\n\n").encode()


def treadle(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treadle", *args],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def records(session: Path) -> list[dict[str, Any]]:
    lines = (session / "transcript.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


CASES = {
    # The task alone nearly fills the window: both budgets follow the estimate.
    "max_tokens": ("seq 1 5", "pad " * 1500, 3000),
    # The listing is longer than the window lets the newest result be: it is cut.
    "a cut result": ("seq 1 3000", "", 3300),
}


@pytest.mark.parametrize("case", CASES)
def test_a_redacted_session_with_a_known_window_replays_without_divergence(
    tmp_path: Path, case: str
) -> None:
    listing, padding, counted = CASES[case]
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text(f"the key is {SECRET}\n")
    env = bare_env(
        tmp_path,
        MY_API_KEY=SECRET,  # a secret by its name: its value is redacted
        OPENAI_API_KEY="k-test",
        TREADLE_CONTEXT_WINDOW=str(WINDOW),
    )
    script = [
        Reply.sse(chat_stream(command=f"cat notes.txt; {listing}", prompt_tokens=counted)),
        Reply.sse(chat_stream(text="The key works.")),
    ]
    task = f"Check that the key {SECRET} works. {padding}"
    with model_server(0, script) as url:
        args = ["--model", "openai:test", "--base-url", url, "--approval", "auto", "--print"]
        live = treadle(work, env, *args, task)
    assert live.returncode == 0, live.stdout + live.stderr
    assert SECRET not in live.stdout
    (session,) = (tmp_path / "state" / "sessions").iterdir()
    recorded = records(session)
    assert SECRET not in json.dumps(recorded)
    budgets = [r["max_tokens"] for r in recorded if r["type"] == "request_sent"]
    if case == "max_tokens":
        # Each budget is what the estimate left of the window, not its quarter.
        assert len(budgets) == 2 and all(b < WINDOW // 4 for b in budgets), budgets
    else:
        assert any(r["type"] == "context_pruned" for r in recorded)
    for flags in (["--recorded-tools"], []):
        replayed = treadle(work, env, "replay", session.name, "--check", *flags)
        assert replayed.returncode == 0, (flags, replayed.stdout + replayed.stderr)
        assert "requests, no divergence" in replayed.stdout
