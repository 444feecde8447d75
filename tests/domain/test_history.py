"""The conversation is always sendable, and its fingerprint follows every message."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from treadle.domain.rules.history import History, close_unanswered, is_sendable, unanswered_calls
from treadle.domain.values.conversation import Message, ToolCall

CALL = ToolCall("c1", "bash", "{}")


def test_a_call_without_a_result_is_not_sendable_until_closed():
    history = History([Message.user("x"), Message.assistant("", (CALL,))])
    assert not is_sendable(history.messages)
    assert unanswered_calls(history.messages) == [CALL]
    (added,) = close_unanswered(history)
    assert (added.tool_call_id, added.interrupted, added.is_error) == ("c1", True, True)
    assert is_sendable(history.messages)


def test_a_result_must_follow_the_message_that_asked_for_it():
    orphan = [Message.user("x"), Message.tool("c9", "late")]
    assert not is_sendable(orphan)
    interleaved = [Message.assistant("", (CALL,)), Message.user("y"), Message.tool("c1", "r")]
    assert not is_sendable(interleaved)


def test_the_digest_changes_with_every_message_and_matches_a_rebuild():
    history = History([Message.user("a")])
    before = history.digest
    history.append(Message.assistant("b"))
    assert history.digest != before
    assert History(history.messages).digest == history.digest


def test_the_listener_hears_appends_but_not_the_initial_messages():
    heard: list[Message] = []
    history = History([Message.user("old")])
    history.listener = heard.append
    history.append(Message.user("new"))
    assert [m.text for m in heard] == ["new"]


@given(st.lists(st.tuples(st.text(max_size=5), st.integers(0, 3)), max_size=8))
def test_closing_unanswered_calls_always_leaves_a_sendable_history(turns):
    history = History()
    for index, (text, calls) in enumerate(turns):
        history.append(Message.user(text))
        history.append(
            Message.assistant(
                text, tuple(ToolCall(f"{index}-{n}", "bash", "{}") for n in range(calls))
            )
        )
        close_unanswered(history)
    assert is_sendable(history.messages)


def test_a_pruning_weighs_again_only_the_messages_it_changed():
    weighed: list[str] = []

    def counting(message: Message) -> int:
        weighed.append(message.text)
        return len(message.text)

    messages = [Message.user(f"message {n}") for n in range(10)]
    history = History(messages)
    history.measured_by(counting)
    weighed.clear()
    stub = Message.user("stub")
    history.put([2], [stub])
    assert weighed == ["stub"]  # the seven after it are the same objects
    again = History([*messages[:2], stub, *messages[3:]])
    again.measured_by(counting)
    assert (history.tokens, history.digest) == (again.tokens, again.digest)


def test_a_new_measure_weighs_every_message_again():
    history = History([Message.user("one"), Message.user("two")])
    history.measured_by(lambda message: 100)
    assert history.tokens == 200
