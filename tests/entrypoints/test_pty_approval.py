"""An approval answered in a real pseudo-terminal, read through a terminal emulator
(pyte), the model a real HTTP server: a no can say what to do instead, and the next
request carries those words to the model with the refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.http.server import Reply, serving_in_a_thread
from tests.adapters.http.support import openai_text_stream
from tests.adapters.http.test_http_context import tool_call_stream
from tests.emulated_terminal import EmulatedTerminal

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("run make test instead\r", 'declined this call and said: "run make test instead"'),
        ("make t\x1b", "declined this call"),
    ],
    ids=["words", "esc"],
)
def test_a_no_at_an_approval_sends_the_persons_words_with_the_refusal(
    tmp_path: Path, typed: str, sent: str
) -> None:
    replies = [
        Reply.sse(tool_call_stream('{"command": "make deploy"}')),
        Reply.sse(openai_text_stream(["Not deploying."])),
    ]
    with serving_in_a_thread(replies) as server:
        args = ["--model", "openai:gemma", "--base-url", f"{server.base_url}/v1"]
        terminal = EmulatedTerminal(
            tmp_path, [*args, "--approval", "ask", "deploy it"], columns=80, rows=24
        )
        terminal.read_until(lambda shown: any(r.startswith("[y]es · [n]o") for r in shown))
        terminal.child.send("n")
        terminal.read_until(lambda shown: any("tell it what to do instead" in r for r in shown))
        terminal.child.send(typed)
        shown = terminal.finish()
    assert any(row.startswith("? Allow bash: make deploy") for row in shown)
    assert any("Turn finished" in row for row in shown)
    assert len(server.requests) == 2
    result = server.requests[1].json()["messages"][-1]
    assert result["role"] == "tool"
    assert result["content"].endswith(sent)
    words = typed.rstrip("\r") if typed.endswith("\r") else ""
    assert ("  → no: " + words if words else "  → no") in shown
