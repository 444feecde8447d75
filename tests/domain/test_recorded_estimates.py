"""The window's accounting estimates a message as the transcript keeps it (a secret
redacted), and prunes from that form: a replay, which has only the transcript, makes
the same decisions."""

from __future__ import annotations

from dataclasses import replace

from treadle.domain.rules.history import History
from treadle.domain.rules.pruning import prune
from treadle.domain.rules.tokens import as_is, measured_as, message_tokens
from treadle.domain.values.conversation import Message, ToolCall

SECRET = "s3cr3t-0123456789abcdefghijklmnopqrstuvwxyz"


def redacted(message: Message) -> Message:
    """What the transcript would keep (a stand-in for the adapters' redactor)."""
    calls = tuple(
        replace(c, arguments=c.arguments.replace(SECRET, "[redacted]")) for c in message.tool_calls
    )
    return replace(message, text=message.text.replace(SECRET, "[redacted]"), tool_calls=calls)


LIVE = [
    Message.user(f"Use the key {SECRET}."),
    Message.assistant("", (ToolCall("c1", "bash", f'{{"command": "echo {SECRET}"}}'),)),
    Message.tool("c1", f"{SECRET}\n" + "line\n" * 2000),
    Message.assistant("", (ToolCall("c2", "bash", '{"command": "ls"}'),)),
    Message.tool("c2", "a.py\n" * 300),
]
RECORDED = [redacted(m) for m in LIVE]


def test_as_is_measures_as_message_tokens_and_recorded_measures_the_record() -> None:
    assert measured_as(as_is) is message_tokens
    measure = measured_as(redacted)
    assert [measure(m) for m in LIVE] == [message_tokens(m) for m in RECORDED]
    assert measure(LIVE[0]) < message_tokens(LIVE[0])


def test_a_live_history_estimates_what_a_replayed_one_does() -> None:
    live, replayed = History(LIVE), History(RECORDED)
    assert live.tokens != replayed.tokens  # the secret is longer than its mark
    live.measured_by(measured_as(redacted))
    assert live.tokens == replayed.tokens
    assert live.tokens_since(2) == replayed.tokens_since(2)
    live.append(LIVE[0])
    assert live.tokens - live.tokens_since(len(live) - 1) == replayed.tokens


def test_stubs_and_cuts_are_made_from_the_recorded_result() -> None:
    measure = measured_as(redacted)
    live = prune(LIVE, keep_tokens=10, measure=measure, recorded=redacted)
    replayed = prune(RECORDED, keep_tokens=10)
    assert live == replayed and live[0] == (2,)
    assert SECRET not in live[1][0].text
    newest_live = prune(
        LIVE[:3],
        keep_tokens=0,
        all_but_newest=True,
        newest_bytes=2_000,
        measure=measure,
        recorded=redacted,
    )
    newest_replayed = prune(RECORDED[:3], keep_tokens=0, all_but_newest=True, newest_bytes=2_000)
    assert newest_live == newest_replayed and newest_live[0] == (2,)
