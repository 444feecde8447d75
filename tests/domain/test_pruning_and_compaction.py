"""Pruning old tool output and compacting a conversation, on plain values."""

from __future__ import annotations

import json

from treadle.domain.rules.compaction import (
    COMPACT_REQUEST,
    PLAN_HEADER,
    RECORD_HEADER,
    SUMMARY_HEADER,
    AskForSummary,
    Compacted,
    SummaryFailed,
    SummaryRefused,
    SummaryWritten,
    compacted_history,
    compaction_start,
    fitting_start,
    latest_plan,
    record_summary,
    start_compaction,
    step,
    summary_request,
    summary_request_of,
    worth_compacting,
)
from treadle.domain.rules.history import is_sendable
from treadle.domain.rules.pruning import (
    STUB_MARK,
    describe_call,
    is_stub,
    prune,
    recent_start,
    stub_for,
    with_stubs,
)
from treadle.domain.rules.tokens import messages_tokens
from treadle.domain.values.conversation import Message, ToolCall

BIG = "output line\n" * 400  # about 1,400 tokens


def bash(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "bash", json.dumps({"command": command}))


def plan(*steps: tuple[str, str]) -> ToolCall:
    arguments = {"steps": [{"step": s, "status": status} for s, status in steps]}
    return ToolCall("plan", "update_plan", json.dumps(arguments))


def exchange(number: int, text: str = BIG) -> list[Message]:
    call = bash(f"c{number}", f"cat file{number}")
    return [
        Message.assistant(f"Reading file {number}.", (call,)),
        Message.tool(call.id, f"Exit code 0.\n{text}"),
    ]


def conversation(exchanges: int, *, task: str = "read every file") -> list[Message]:
    messages = [Message.user(task)]
    for number in range(exchanges):
        messages += exchange(number)
    return messages


# Pruning ---------------------------------------------------------------------------------


def test_a_stub_says_what_the_result_was_and_where_its_full_text_is() -> None:
    call = bash("c1", "pytest -q")
    result = Message.tool("c1", "Exit code 1. Duration 2.31 s.\n" + BIG, is_error=True)
    stub = stub_for(result, call)
    assert stub.tool_call_id == "c1" and stub.is_error
    assert stub.text.startswith(STUB_MARK)
    assert "bash `pytest -q`" in stub.text
    assert f"{len(result.text):,} characters" in stub.text
    assert 'beginning "Exit code 1. Duration 2.31 s."' in stub.text
    assert "session's transcript" in stub.text


def test_a_stub_names_the_file_that_holds_a_cut_outputs_whole() -> None:
    text = (
        "Exit code 0.\nOutput was cut: 9000 bytes left out. The full output is in /s/out-1.txt.\n"
    )
    stub = stub_for(Message.tool("c1", text + BIG), bash("c1", "make"))
    assert "/s/out-1.txt and the session's transcript" in stub.text


def test_a_call_is_described_by_what_it_was_called_on() -> None:
    assert describe_call(ToolCall("1", "read_file", '{"path": "src/a.py"}')) == "read_file src/a.py"
    assert describe_call(ToolCall("1", "search", '{"pattern": "TODO"}')) == "search TODO"
    assert describe_call(ToolCall("1", "update_plan", "{}")) == "update_plan"
    assert describe_call(ToolCall("1", "bash", "{not json")) == "bash"
    assert describe_call(None) == "a tool"


def test_old_results_are_pruned_and_the_newest_part_is_kept() -> None:
    messages = conversation(6)
    positions, stubs = prune(messages, keep_tokens=3000)
    pruned = with_stubs(messages, positions, stubs)
    assert positions == (2, 4, 6, 8)  # the two newest exchanges are kept
    assert pruned[-1] == messages[-1] and pruned[-3] == messages[-3]
    assert all(is_stub(pruned[i]) for i in positions)
    assert is_sendable(pruned)  # every call keeps its result's slot
    assert messages_tokens(pruned) < messages_tokens(messages) / 2


def test_pruning_twice_prunes_nothing_new_and_small_results_are_left_alone() -> None:
    messages = conversation(4)
    positions, stubs = prune(messages, keep_tokens=0)
    again = with_stubs(messages, positions, stubs)
    assert prune(again, keep_tokens=0) == ((), ())
    small = [Message.user("t"), *exchange(1, text="ok"), *exchange(2, text="ok")]
    assert prune(small, keep_tokens=0) == ((), ())


def test_the_last_resort_prunes_all_but_the_newest_result() -> None:
    messages = conversation(3)
    positions, _ = prune(messages, keep_tokens=100_000, all_but_newest=True)
    assert positions == (2, 4)


def test_the_kept_part_never_starts_between_a_call_and_its_results() -> None:
    call_a, call_b = bash("a", "ls"), bash("b", "pwd")
    messages = [
        Message.user("t"),
        Message.assistant("", (call_a, call_b)),
        Message.tool("a", BIG),
        Message.tool("b", BIG),
    ]
    assert recent_start(messages, keep_tokens=10) == 1
    assert recent_start(messages, keep_tokens=0) == 1
    assert recent_start([], keep_tokens=10) == 0


def test_stubs_go_only_where_their_result_still_is() -> None:
    messages = conversation(2)
    stub = Message.tool("elsewhere", "stub")
    assert with_stubs(messages, (2,), (stub,)) == messages


# Compaction --------------------------------------------------------------------------------


def test_the_compacted_conversation_keeps_the_task_the_words_the_plan_and_the_latest() -> None:
    messages = [
        Message.user("migrate the database"),
        Message.assistant("Planning.", (plan(("Read", "completed"), ("Migrate", "in_progress")),)),
        Message.tool("plan", "Plan updated."),
        *exchange(1),
        Message.user("also keep the old column"),
        *exchange(2),
        *exchange(3),
    ]
    compacted = compacted_history(messages, "## Task\nmigrate", recent_tokens=1500, user_tokens=500)
    assert compacted[0] == messages[0]  # the task, verbatim and first
    assert compacted[1] == Message.user("also keep the old column")
    summary = compacted[2]
    assert summary.text.startswith(SUMMARY_HEADER)
    assert "## Task\nmigrate" in summary.text
    assert f"{PLAN_HEADER}\n\n[x] Read\n[>] Migrate" in summary.text
    assert compacted[3:] == tuple(messages[-2:])  # the newest exchange, intact
    assert is_sendable(compacted)


def test_the_users_words_are_kept_newest_first_up_to_their_budget() -> None:
    words = [Message.user(f"note {i} " + "w" * 300) for i in range(5)]
    messages = [Message.user("task")]
    for number, note in enumerate(words):
        messages += [note, *exchange(number)]
    compacted = compacted_history(messages, "s", recent_tokens=10, user_tokens=250)
    kept = [m for m in compacted[1:] if m in words]
    assert kept == words[3:]  # the newest that fit, in their order


def test_the_plan_kept_by_an_earlier_compaction_survives_the_next() -> None:
    first = compacted_history(
        [
            Message.user("task"),
            Message.assistant("", (plan(("Only step", "in_progress")),)),
            Message.tool("plan", "ok"),
            *exchange(1),
        ],
        "first summary",
        recent_tokens=10,
        user_tokens=100,
    )
    assert latest_plan(first) == "[>] Only step"
    second = compacted_history(
        [*first, *exchange(2), *exchange(3)], "second", recent_tokens=10, user_tokens=100
    )
    assert "[>] Only step" in second[1].text
    assert "first summary" not in second[1].text  # the earlier summary is not repeated
    assert sum(m.text.startswith(SUMMARY_HEADER) for m in second) == 1


def test_a_plan_with_arguments_that_do_not_parse_is_no_plan() -> None:
    broken = ToolCall("p", "update_plan", "{oops")
    assert latest_plan([Message.user("t"), Message.assistant("", (broken,))]) == ""


def test_the_summary_request_leaves_out_the_intact_part_and_the_oldest_when_short() -> None:
    messages = conversation(6)
    end = compaction_start(messages, 3000)
    whole = summary_request(messages, 1, end)
    assert whole[:-1] == messages[:end] and whole[-1] == Message.user(COMPACT_REQUEST)
    room = messages_tokens(whole) - 1000
    keep_from = fitting_start(messages, room, end)
    assert keep_from is not None and keep_from > 1
    cut = summary_request(messages, keep_from, end)
    assert cut[0] == messages[0] and messages_tokens(cut) <= room
    assert is_sendable(cut[:-1])  # the oldest left out whole exchanges
    assert summary_request_of(messages, len(cut), end) == cut
    assert fitting_start(messages, 10, end) is None


def test_a_compaction_asks_for_a_summary_then_replaces_the_conversation() -> None:
    messages = conversation(6)
    compaction, action = start_compaction(
        messages, room=100_000, recent_tokens=3000, user_tokens=500
    )
    assert isinstance(action, AskForSummary)
    assert action.messages[-1].text == COMPACT_REQUEST
    _, done = step(compaction, SummaryWritten("## Task\nread"))
    assert isinstance(done, Compacted) and done.summarized and done.dropped == 0
    assert done.messages[0] == messages[0]
    assert is_sendable(done.messages)


def test_a_summary_request_that_is_refused_is_cut_then_made_from_the_record() -> None:
    messages = conversation(8)
    compaction, first = start_compaction(messages, room=100_000, recent_tokens=1500, user_tokens=0)
    assert isinstance(first, AskForSummary)
    compaction, second = step(compaction, SummaryRefused(room=100_000))
    assert isinstance(second, AskForSummary)
    assert len(second.messages) < len(first.messages)  # the oldest left out
    compaction, third = step(compaction, SummaryRefused(room=100_000))
    assert isinstance(third, Compacted) and not third.summarized
    assert third.messages[1].text.startswith(RECORD_HEADER)
    assert "bash `cat file0`: Exit code 0." in third.messages[1].text
    assert is_sendable(third.messages)


def test_a_summary_that_fails_or_comes_back_empty_is_made_from_the_record() -> None:
    compaction, _ = start_compaction(
        conversation(4), room=100_000, recent_tokens=1500, user_tokens=0
    )
    for event in (SummaryFailed(), SummaryWritten("  ")):
        _, done = step(compaction, event)
        assert isinstance(done, Compacted) and not done.summarized


def test_when_not_even_the_task_fits_the_summary_is_made_from_the_record() -> None:
    _, action = start_compaction(conversation(4), room=10, recent_tokens=1500, user_tokens=0)
    assert isinstance(action, Compacted) and not action.summarized


def test_a_summary_that_had_to_leave_out_the_oldest_says_so() -> None:
    messages = conversation(8)
    end = compaction_start(messages, 1500)
    room = messages_tokens(summary_request(messages, 1, end)) - 2000
    compaction, _ = start_compaction(messages, room=room, recent_tokens=1500, user_tokens=0)
    _, done = step(compaction, SummaryWritten("summary"))
    assert isinstance(done, Compacted) and done.dropped > 0
    assert f"The {done.dropped} oldest messages did not fit" in done.messages[1].text


def test_the_record_says_what_was_called_and_the_last_words() -> None:
    record = record_summary(conversation(2))
    assert "2 tool calls" in record and "bash `cat file1`: Exit code 0." in record
    assert "The last thing you said: Reading file 1." in record
    assert record_summary([Message.user("t")]) == "Nothing but the task."


def test_compacting_is_worth_it_only_when_it_replaces_more_than_it_adds() -> None:
    assert worth_compacting(conversation(6), recent_tokens=1500, user_tokens=0, summary_tokens=500)
    assert not worth_compacting(
        conversation(1), recent_tokens=1500, user_tokens=0, summary_tokens=500
    )
    assert not worth_compacting(
        [Message.user("t")], recent_tokens=0, user_tokens=0, summary_tokens=1
    )
