"""The context window's accounting and decisions, on plain values."""

from __future__ import annotations

import pytest

from treadle.domain.rules.context_window import (
    ESTIMATED_REFUSAL_ORIGIN,
    FILLED_ORIGIN,
    MIN_LEARNED_WINDOW,
    REFUSAL_ORIGIN,
    Anchor,
    Compact,
    ContextSettings,
    ContextState,
    NoRoom,
    Prune,
    PruneAll,
    RoomStage,
    RoomStep,
    Send,
    cut_kind,
    filled_window_learned,
    fit_output,
    fold,
    initial_budget,
    learned_window,
    merge_window,
    newest_result_bytes,
    output_floor,
    refused_prompt,
    result_bytes,
    room_step,
    summary_budget,
    unbelievable,
    usable_window,
    window_of,
)
from treadle.domain.rules.tokens import (
    estimate_tokens,
    fixed_tokens,
    message_tokens,
)
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    MessageAdded,
    RequestSent,
    ResponseReceived,
    TurnEnded,
    TurnEvent,
)
from treadle.domain.values.model import ContextExceeded, ContextWindow, ToolSpec
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome

SETTINGS = ContextSettings()


# Estimates ---------------------------------------------------------------------------


def test_an_estimate_is_the_utf8_length_over_three_and_a_half_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcdefg") == 2
    assert estimate_tokens("abcdefgh") == 3
    assert estimate_tokens("日本語") == 3  # nine bytes: about one token a character


def test_a_message_counts_its_text_its_calls_and_their_arguments() -> None:
    call = ToolCall("c1", "bash", '{"command": "ls -la"}')
    bare = message_tokens(Message.assistant(""))
    with_call = message_tokens(Message.assistant("", (call,)))
    assert with_call - bare == 4 + estimate_tokens("bash") + estimate_tokens(call.arguments)


def test_an_interrupted_answer_counts_the_note_the_model_reads() -> None:
    plain = Message.assistant("partial")
    cut = Message.assistant("partial", interrupted=True)
    assert message_tokens(cut) > message_tokens(plain)


def test_the_fixed_part_counts_the_system_prompt_and_every_tool() -> None:
    spec = ToolSpec("bash", "Run a command.", {"type": "object"})
    assert fixed_tokens("x" * 700, [spec]) > fixed_tokens("x" * 700, []) > 200


# Budgets -----------------------------------------------------------------------------


def test_the_output_budget_fits_beside_the_prompt_down_to_a_floor() -> None:
    assert fit_output(window=8192, prompt=1000, wanted=2048) == 2048
    assert fit_output(window=8192, prompt=7000, wanted=2048) == 8192 - 163 - 7000
    assert fit_output(window=8192, prompt=7600, wanted=2048) is None  # below the floor
    assert output_floor(8192, 2048) == 512
    assert output_floor(8192, 100) == 100  # never more than what is wanted


def test_prompt_and_budget_never_exceed_the_window() -> None:
    for window in (2048, 4096, 8192, 32768, 200_000):
        for prompt in range(0, window, max(1, window // 37)):
            budget = fit_output(window=window, prompt=prompt, wanted=8192)
            if budget is not None:
                assert prompt + budget <= window


def test_the_default_budget_is_a_quarter_of_the_window_at_most_the_configured_one() -> None:
    assert initial_budget(8192, 8192, follow_window=True) == 2048
    assert initial_budget(8192, 200_000, follow_window=True) == 8192
    assert initial_budget(8192, None, follow_window=True) == 8192
    assert initial_budget(8192, 8192, follow_window=False) == 8192  # set on purpose
    assert initial_budget(8192, 512, follow_window=True) == 256


def test_a_summary_may_take_a_tenth_of_the_window_within_bounds() -> None:
    assert summary_budget(32768, 8192) == 3276
    assert summary_budget(2048, 8192) == 256
    assert summary_budget(1_000_000, 8192) == 4096
    assert summary_budget(32768, 1000) == 1000


def test_one_result_takes_a_share_of_the_window_and_never_more_than_the_limit() -> None:
    assert result_bytes(None, 30_000) == 30_000
    assert result_bytes(16_384, 30_000) == 9_830
    assert result_bytes(1_000_000, 30_000) == 30_000
    assert result_bytes(2_048, 30_000) == 2_000  # a floor that still says something


# Making room -----------------------------------------------------------------------------


def test_a_request_below_the_threshold_is_sent_as_it_is() -> None:
    assert room_step("start", prompt=1000, window=8192, wanted=2048, settings=SETTINGS) == Send(
        2048
    )


def test_above_the_threshold_it_prunes_first_then_compacts() -> None:
    step = room_step("start", prompt=7000, window=8192, wanted=512, settings=SETTINGS)
    assert step == Prune()
    step = room_step("pruned", prompt=7000, window=8192, wanted=512, settings=SETTINGS)
    assert step == Compact()
    step = room_step("pruned", prompt=5000, window=8192, wanted=512, settings=SETTINGS)
    assert step == Send(512)  # the pruning made enough room


def test_a_budget_that_does_not_fit_makes_room_even_below_the_threshold() -> None:
    settings = ContextSettings(compact_at=1.0)
    assert room_step("start", prompt=8000, window=8192, wanted=512, settings=settings) == Prune()


def small_window(stage: RoomStage, prompt: int, compacted_at: int | None = None) -> RoomStep:
    return room_step(
        stage, prompt=prompt, window=8192, wanted=512, settings=SETTINGS, compacted_at=compacted_at
    )


def test_when_compacting_is_not_enough_it_prunes_everything_then_gives_up() -> None:
    assert small_window("compacted", 8100) == PruneAll()
    assert small_window("pruned all", 8100) == NoRoom()
    assert small_window("compacted", 6000) == Send(512)


def test_a_conversation_just_compacted_is_not_compacted_again_for_the_threshold_alone() -> None:
    assert small_window("pruned", 7000, compacted_at=6800) == Send(512)
    assert small_window("pruned", 7000, compacted_at=5000) == Compact()  # grown since
    assert small_window("pruned", 7900, compacted_at=7800) == Compact()  # no budget fits


def test_compact_at_is_a_share_of_the_window() -> None:
    with pytest.raises(ValueError):
        ContextSettings(compact_at=0)
    with pytest.raises(ValueError):
        ContextSettings(compact_at=1.5)
    low = ContextSettings(compact_at=0.5)
    assert room_step("start", prompt=4500, window=8192, wanted=512, settings=low) == Prune()


# Cuts and refusals -------------------------------------------------------------------


def test_an_answer_that_stops_short_of_its_budget_at_a_known_window_filled_it() -> None:
    # llama.cpp with -c 2048: prompt 1714 + answer 334 = 2048, the budget was 8192.
    assert cut_kind("max_tokens", Usage(1714, 334), budget=8192, window=2048) == "window full"
    assert cut_kind("max_tokens", Usage(1714, 334), budget=334, window=2048) == "cut"
    assert cut_kind("max_tokens", Usage(500, 300), budget=8192, window=2048) == "cut"
    assert cut_kind("end_turn", Usage(1714, 334), budget=8192, window=2048) == "cut"
    assert cut_kind("context_full", Usage(), budget=8192, window=None) == "window full"


def test_a_cut_well_below_a_known_window_is_a_cut() -> None:
    # Issue 20: 79 of prompt and 1 of answer on a window of 128,000 did not fill it.
    assert cut_kind("max_tokens", Usage(79, 1), budget=8192, window=128_000) == "cut"


def test_with_no_window_known_a_cut_short_of_its_budget_is_a_cut_to_continue() -> None:
    # A gateway that caps answers at 12 tokens looks like a full window of 1,764 tokens;
    # the inference alone must not end the turn.
    assert cut_kind("max_tokens", Usage(1752, 12), budget=8192, window=None) == "cut"
    assert cut_kind("max_tokens", Usage(1714, 334), budget=8192, window=None) == "cut"
    # Its continuation, cut at 12 again, grew: still a cap, not a ceiling.
    again = Usage(1780, 12)
    assert cut_kind("max_tokens", again, budget=16384, window=None, previous=Usage(1752, 12)) == (
        "cut"
    )


def test_a_continuation_cut_again_at_once_with_no_room_shows_the_ceiling() -> None:
    first = Usage(1714, 334)  # 2048
    at_once = Usage(2046, 2)  # the continuation's prompt, and two tokens: 2048 again
    assert cut_kind("max_tokens", at_once, budget=16384, window=None, previous=first) == (
        "window full"
    )
    assert filled_window_learned(at_once, None, first) == ContextWindow(2048, FILLED_ORIGIN)
    # A server that counts no prompt proves nothing.
    assert cut_kind("max_tokens", Usage(0, 2), budget=16384, window=None, previous=first) == "cut"


def test_a_context_full_stop_teaches_the_window_when_none_is_known() -> None:
    learned = filled_window_learned(Usage(190_000, 10_000), None)
    assert learned == ContextWindow(200_000, FILLED_ORIGIN)
    assert filled_window_learned(Usage(190_000, 10_000), ContextWindow(1, "x")) is None


def test_the_newest_result_keeps_what_the_window_has_left_beside_the_rest() -> None:
    # A 2,800-token window, 1,900 taken by the rest: 2,800 - 56 - 256 - 1,900 = 588
    # tokens left, about 1.8 kB of the result (its note aside), below its 2 kB share.
    assert newest_result_bytes(2_800, others=1_900, wanted=700) == int(588 * 3.5) - 200
    assert newest_result_bytes(64_000, others=1_900, wanted=8192) == 64_000 * 15 * 4 // 100
    assert newest_result_bytes(2_800, others=2_700, wanted=700) == 400  # head and tail


def test_a_refusal_that_names_the_window_teaches_it() -> None:
    refusal = ContextExceeded("…", window=2048, prompt_tokens=3624)
    assert learned_window(refusal, None, prompt_estimate=3000) == ContextWindow(
        2048, REFUSAL_ORIGIN
    )
    known = ContextWindow(2048, "llama.cpp /props default_generation_settings.n_ctx")
    assert learned_window(refusal, known, prompt_estimate=3000) is None  # nothing new


def test_a_refusal_with_no_figure_teaches_an_upper_bound() -> None:
    refusal = ContextExceeded("Your input exceeds the context window of this model.")
    learned = learned_window(refusal, None, prompt_estimate=10_000)
    assert learned == ContextWindow(9_000, ESTIMATED_REFUSAL_ORIGIN)
    counted = ContextExceeded("prompt too long", prompt_tokens=20_000)
    assert learned_window(counted, None, prompt_estimate=10_000) == ContextWindow(
        18_000, ESTIMATED_REFUSAL_ORIGIN
    )
    smaller = ContextWindow(5_000, "known model family x")
    assert learned_window(refusal, smaller, prompt_estimate=10_000) is None


def test_a_refusal_of_the_output_budget_alone_teaches_only_its_figure() -> None:
    output = ContextExceeded(
        "max_tokens too large", window=4096, prompt_tokens=3000, output_too=True
    )
    assert learned_window(output, None, prompt_estimate=3000) == ContextWindow(4096, REFUSAL_ORIGIN)
    no_figure = ContextExceeded("exceed context limit", output_too=True)
    assert learned_window(no_figure, None, prompt_estimate=3000) is None


def test_the_refused_prompt_is_what_the_server_counted_or_at_least_its_window() -> None:
    assert refused_prompt(ContextExceeded(prompt_tokens=3624, window=2048)) == 3624
    assert refused_prompt(ContextExceeded(window=2048)) == 2048
    assert refused_prompt(ContextExceeded(window=2048, output_too=True)) is None
    assert refused_prompt(ContextExceeded()) is None


def test_the_configured_window_wins_then_the_server_then_what_was_known() -> None:
    server = ContextWindow(32768, "llama.cpp /props default_generation_settings.n_ctx")
    configured = ContextWindow(16384, "configuration")
    assert merge_window(None, server, configured) == configured
    assert merge_window(None, server) == server
    assert merge_window(server, None) == server
    assert merge_window(None, None) is None


def test_a_configured_window_always_wins_even_over_a_learned_one() -> None:
    configured = ContextWindow(32768, "configuration")
    assert merge_window(ContextWindow(8192, REFUSAL_ORIGIN), None, configured) == configured
    assert merge_window(ContextWindow(0, REFUSAL_ORIGIN), None, configured) == configured


def test_a_window_below_the_floor_or_a_prompt_accepted_cannot_be_the_servers() -> None:
    assert unbelievable(ContextWindow(0, REFUSAL_ORIGIN), accepted=0)
    assert unbelievable(ContextWindow(1, REFUSAL_ORIGIN), accepted=0)
    assert unbelievable(ContextWindow(MIN_LEARNED_WINDOW - 1, REFUSAL_ORIGIN), accepted=0)
    assert unbelievable(ContextWindow(MIN_LEARNED_WINDOW, REFUSAL_ORIGIN), accepted=0) == ""
    assert "3,000" in unbelievable(ContextWindow(2048, REFUSAL_ORIGIN), accepted=3000)
    assert unbelievable(ContextWindow(4096, REFUSAL_ORIGIN), accepted=3000) == ""


def test_the_largest_prompt_the_server_answered_is_folded() -> None:
    state = fold(fold(ContextState(), _received(5000)), _received(3000))
    assert state.accepted == 5000


def test_a_recorded_window_that_cannot_be_kept_to_is_passed_over() -> None:
    # Older versions recorded what a lying refusal said; a resumed session goes on.
    server = ContextWindowKnown(32768, "llama.cpp /props default_generation_settings.n_ctx")
    for tokens in (0, 1, -5):
        assert window_of([server, ContextWindowKnown(tokens, REFUSAL_ORIGIN)]) == ContextWindow(
            32768, server.origin
        )
        assert window_of([ContextWindowKnown(tokens, REFUSAL_ORIGIN)]) is None
    assert not usable_window(ContextWindow(0, "configuration"))
    assert usable_window(ContextWindow(512, "llama.cpp /props default_generation_settings.n_ctx"))


def test_a_window_learned_from_the_server_itself_wins_over_a_larger_figure() -> None:
    learned = ContextWindow(8192, REFUSAL_ORIGIN)
    table = ContextWindow(128_000, "known model family gpt-4o")
    assert merge_window(learned, table) == learned
    assert merge_window(learned, ContextWindow(4096, "x")) == ContextWindow(4096, "x")


# The state, folded from events --------------------------------------------------------


def _sent(count: int, *, continuation: bool = False) -> RequestSent:
    return RequestSent(1, 1, 1024, count, "d", continuation)


def _received(input_tokens: int) -> ResponseReceived:
    return ResponseReceived(1, "", (), Usage(input_tokens, 10), "end_turn")


def test_the_servers_count_of_a_prompt_anchors_the_next_estimate() -> None:
    state = ContextState()
    for event in (MessageAdded(Message.user("hi")), _sent(1), _received(1800)):
        state = fold(state, event)
    assert state.anchor == Anchor(1, 1800)
    assert state.messages == 1


def test_a_continuation_or_a_summary_request_does_not_anchor() -> None:
    state = fold(fold(ContextState(), _sent(3, continuation=True)), _received(5000))
    assert state.anchor is None
    state = fold(ContextState(), CompactionStarted(9000, 16384, 5))
    state = fold(fold(state, _sent(6)), _received(7000))
    assert state.anchor is None


def test_a_pruning_anchors_on_its_own_figure_and_a_compaction_clears_the_anchor() -> None:
    state = ContextState(anchor=Anchor(3, 9000), messages=10)
    stub = Message.tool("c1", "stub")
    state = fold(state, ContextPruned(12000, 7000, 16384, (2,), (stub,)))
    assert state.anchor == Anchor(10, 7000)
    compacted = (Message.user("task"), Message.user("summary"))
    state = fold(state, CompactionStarted(9000, 16384, 1))
    assert state.compacting
    state = fold(state, ContextCompacted(9000, 2400, 16384, compacted))
    assert (state.anchor, state.compacted_at, state.messages, state.compacting) == (
        None,
        2400,
        2,
        False,
    )


def test_a_turn_that_ends_mid_compaction_is_no_longer_compacting() -> None:
    state = fold(ContextState(), CompactionStarted(9000, 16384, 1))
    state = fold(state, TurnEnded(TurnOutcome(OutcomeKind.PAUSED), Usage(), 0, 0.0))
    assert not state.compacting


def test_the_last_window_of_any_agent_is_the_sessions() -> None:
    events: list[TurnEvent] = [
        ContextWindowKnown(32768, "llama.cpp /props default_generation_settings.n_ctx"),
        MessageAdded(Message.user("x")),
        ContextWindowKnown(16384, REFUSAL_ORIGIN, agent="agent-1"),
    ]
    assert window_of(events) == ContextWindow(16384, REFUSAL_ORIGIN)
    assert window_of([]) is None


def test_a_conversation_that_gained_many_messages_is_compacted_below_the_threshold() -> None:
    from treadle.domain.rules.context_window import most_messages

    assert most_messages(32_768) == 128 and most_messages(4_096) == 64

    def crowded(stage: RoomStage, gained: int) -> RoomStep:
        return room_step(
            stage, prompt=2000, window=32_768, wanted=512, settings=SETTINGS, gained=gained
        )

    assert crowded("start", 200) == Prune()
    assert crowded("pruned", 200) == Compact()
    assert crowded("start", 100) == Send(512)


def test_a_refusal_for_length_is_never_one_of_the_seeds_retries() -> None:
    from treadle.domain.rules.retry import GiveUp, RetrySchedule, decide_retry, is_transient

    refusal = ContextExceeded("prompt is too long", 200_000, 210_000)
    assert not is_transient(refusal)
    assert isinstance(decide_retry(RetrySchedule(), refusal, attempt=1, text_shown=False), GiveUp)
