"""How much encrypted reasoning a conversation keeps to send back, and what it weighs."""

from __future__ import annotations

import json

from treadle.domain.rules.history import History
from treadle.domain.rules.kept_reasoning import (
    KEPT_SEAL_BYTES,
    bounded,
    first_kept,
    kept_on_arrival,
    seal_bytes,
)
from treadle.domain.rules.tokens import estimate_tokens, message_tokens
from treadle.domain.values.conversation import Message, Reasoning, ToolCall


def item(name: str, size: int) -> Reasoning:
    """A Responses reasoning item whose seal is ``size`` characters of JSON."""
    head = json.dumps({"id": name, "type": "reasoning", "encrypted_content": ""})
    seal = head[:-2] + "x" * (size - len(head)) + head[-2:]
    assert len(seal) == size
    return Reasoning("reasoning_item", f"summary of {name}", seal=seal)


def answer(*reasoning: Reasoning, call: str = "c") -> Message:
    return Message.assistant("", (ToolCall(call, "bash", "{}"),), reasoning=reasoning)


def seals(messages: list[Message] | tuple[Message, ...]) -> list[str]:
    return [json.loads(r.seal)["id"] for m in messages for r in m.reasoning if r.seal]


# The rule, with plain values ---------------------------------------------------------


def test_the_newest_items_are_kept_while_their_total_stays_within_the_bound() -> None:
    assert first_kept([], bound=10) == 0
    assert first_kept([3, 3, 4], bound=10) == 0  # exactly the bound: all kept
    assert first_kept([3, 3, 5], bound=10) == 1
    assert first_kept([9, 1, 1], bound=10) == 1
    # The first that does not fit goes with every older one, however small they are.
    assert first_kept([1, 1, 9, 2], bound=10) == 3


def test_an_item_over_the_bound_loses_its_seal_and_keeps_its_summary() -> None:
    big, small = item("rs_big", 2_000), item("rs_small", 100)
    assert kept_on_arrival(small, bound=1_000) is small
    kept = kept_on_arrival(big, bound=1_000)
    assert kept.seal == "" and kept.text == "summary of rs_big"
    assert seal_bytes(kept) == 0


def test_only_encrypted_reasoning_is_bounded() -> None:
    # Anthropic refuses a tool loop whose thinking did not come back: never dropped.
    thinking = Reasoning("thinking", "thought", seal="s" * 5_000)
    redacted = Reasoning("redacted_thinking", seal="r" * 5_000)
    assert seal_bytes(thinking) == seal_bytes(redacted) == 0
    messages = [answer(thinking, redacted), answer(item("rs_1", 3_000))]
    assert bounded(messages, bound=1_000)[0] is messages[0]


def test_a_conversation_keeps_the_newest_seals_within_the_bound() -> None:
    messages = [
        answer(item("rs_1", 400)),
        Message.tool("c", "out"),
        answer(item("rs_2", 400), item("rs_3", 300)),
        answer(item("rs_4", 5_000)),  # alone over the bound: dropped, and not counted
        answer(item("rs_5", 200)),
    ]
    kept = bounded(messages, bound=1_000)
    assert seals(kept) == ["rs_2", "rs_3", "rs_5"]
    assert kept[1] is messages[1] and kept[4] is messages[4]
    assert [r.text for m in kept for r in m.reasoning] == [
        f"summary of rs_{n}" for n in range(1, 6)
    ]


def test_the_bound_is_a_mebibyte() -> None:
    assert KEPT_SEAL_BYTES == 1 << 20


# The history ---------------------------------------------------------------------------


def test_the_history_drops_the_oldest_seals_as_new_ones_come() -> None:
    history = History()
    history.seal_bound = 1_000
    for number in range(1, 6):
        history.append(answer(item(f"rs_{number}", 400), call=f"c{number}"))
        history.append(Message.tool(f"c{number}", "out"))
    assert seals(list(history.messages)) == ["rs_4", "rs_5"]
    # What it holds is what a history of those messages holds, digest and estimate too.
    again = History(history.messages)
    assert (again.digest, again.tokens) == (history.digest, history.tokens)
    assert list(again.messages) == list(history.messages)


def test_a_history_rebuilt_from_the_messages_appended_drops_the_same() -> None:
    appended = [answer(item(f"rs_{n}", 300 + 50 * n), call=f"c{n}") for n in range(8)]
    live = History()
    for message in appended:
        live.append(message)
    rebuilt = History(appended)  # a resume: every message as the transcript has it
    assert (rebuilt.digest, rebuilt.tokens) == (live.digest, live.tokens)
    assert list(rebuilt.messages) == bounded(appended)


def test_the_listener_is_told_of_the_message_as_it_is_kept() -> None:
    told: list[Message] = []
    history = History()
    history.seal_bound = 1_000
    history.listener = told.append
    history.append(answer(item("rs_big", 5_000)))
    assert told[0].reasoning[0].seal == "" and told == list(history.messages)


def test_the_estimate_counts_the_reasoning_that_goes_back() -> None:
    sealed = answer(item("rs_1", 7_000))
    bare = answer()
    assert message_tokens(sealed) - message_tokens(bare) == estimate_tokens("x" * 7_000)
    thinking = Message.assistant("", reasoning=(Reasoning("thinking", "a" * 70, "s" * 35),))
    assert message_tokens(thinking) - message_tokens(Message.assistant("")) == 20 + 10


def test_dropping_seals_lowers_the_estimate_as_it_lowers_what_is_sent() -> None:
    history = History()
    history.seal_bound = 10_000
    history.append(answer(item("rs_1", 7_000), call="c1"))
    before = history.tokens
    history.append(answer(item("rs_2", 7_000), call="c2"))
    # rs_1 went: the estimate lost it as it gained rs_2.
    assert history.tokens == before + message_tokens(answer(call="c2"))
