"""The key router, on plain values: what a key does in each mode of the terminal, and
the second-Ctrl-C rule wherever the Ctrl-C lands."""

from __future__ import annotations

import pytest

from treadle.domain.rules.interrupts import SECOND_INTERRUPT_WINDOW
from treadle.domain.rules.keys import (
    CTRL_C,
    CTRL_D,
    CTRL_O,
    ESC,
    TYPING_ON,
    Deliver,
    Expand,
    Ignore,
    LeaveNow,
    Mode,
    Queue,
    Stop,
    enter_is_pasted,
    route,
    typing_on,
)

ENTER = "<enter>"


# The idle prompt: keys are typing ------------------------------------------------


@pytest.mark.parametrize("key", ["a", " ", ENTER, CTRL_D, ESC, "<up>"])
@pytest.mark.parametrize("mode", [Mode.EMPTY_PROMPT, Mode.PROMPT])
def test_at_the_task_prompt_keys_go_to_the_line_being_typed(mode: Mode, key: str) -> None:
    assert route(mode, key, None, 50.0) == (None, Deliver(key))


def test_a_first_ctrl_c_on_an_empty_prompt_goes_to_it_and_is_remembered() -> None:
    assert route(Mode.EMPTY_PROMPT, CTRL_C, None, 50.0) == (50.0, Deliver(CTRL_C))


def test_a_second_ctrl_c_on_an_empty_prompt_leaves() -> None:
    assert route(Mode.EMPTY_PROMPT, CTRL_C, 49.0, 50.0) == (None, LeaveNow())


def test_a_ctrl_c_that_clears_a_typed_line_does_only_that_and_is_forgotten() -> None:
    assert route(Mode.PROMPT, CTRL_C, 49.5, 50.0) == (None, Deliver(CTRL_C))


def test_the_memory_of_a_ctrl_c_survives_keys_that_are_not_one() -> None:
    last, _ = route(Mode.EMPTY_PROMPT, CTRL_C, None, 50.0)
    last, _ = route(Mode.EMPTY_PROMPT, "<left>", last, 50.5)
    assert route(Mode.EMPTY_PROMPT, CTRL_C, last, 51.0) == (None, LeaveNow())


# A running turn: Esc and Ctrl-C stop it, typed text waits ---------------------------


def test_esc_stops_the_running_turn() -> None:
    assert route(Mode.TURN, ESC, None, 10.0) == (None, Stop())


def test_a_first_ctrl_c_stops_the_running_turn_and_is_remembered() -> None:
    assert route(Mode.TURN, CTRL_C, None, 10.0) == (10.0, Stop())


@pytest.mark.parametrize("key", ["n", ENTER, CTRL_D, "<backspace>"])
def test_keys_typed_during_a_turn_are_queued_for_the_next_prompt(key: str) -> None:
    assert route(Mode.TURN, key, 3.0, 10.0) == (3.0, Queue(key))


@pytest.mark.parametrize("mode", [Mode.TURN, Mode.QUESTION, Mode.EMPTY_PROMPT, Mode.BETWEEN])
def test_a_second_ctrl_c_within_the_window_leaves_wherever_it_lands(mode: Mode) -> None:
    assert route(mode, CTRL_C, 10.0, 10.0 + SECOND_INTERRUPT_WINDOW - 0.01) == (
        None,
        LeaveNow(),
    )


def test_a_ctrl_c_at_the_window_or_later_only_stops_again() -> None:
    later = 10.0 + SECOND_INTERRUPT_WINDOW
    assert route(Mode.TURN, CTRL_C, 10.0, later) == (later, Stop())


def test_a_clock_that_went_back_is_no_second_ctrl_c() -> None:
    assert route(Mode.TURN, CTRL_C, 10.0, 9.0) == (9.0, Stop())


def test_ctrl_o_shows_the_reasoning_at_once_outside_a_question() -> None:
    for mode in (Mode.TURN, Mode.EMPTY_PROMPT, Mode.PROMPT, Mode.BETWEEN):
        assert route(mode, CTRL_O, None, 1.0) == (None, Expand(after_answer=False))


# A question or an approval: keys are its answer, Esc and Ctrl-C stop the turn ------


@pytest.mark.parametrize("key", ["y", "n", "a", "v", "x", ENTER, CTRL_D])
def test_at_a_question_keys_go_to_it(key: str) -> None:
    assert route(Mode.QUESTION, key, None, 5.0) == (None, Deliver(key))


def test_esc_at_a_question_stops_the_turn() -> None:
    assert route(Mode.QUESTION, ESC, None, 5.0) == (None, Stop())


def test_a_first_ctrl_c_at_a_question_stops_the_turn() -> None:
    assert route(Mode.QUESTION, CTRL_C, None, 5.0) == (5.0, Stop())


def test_ctrl_o_at_a_question_waits_for_its_answer() -> None:
    assert route(Mode.QUESTION, CTRL_O, None, 5.0) == (None, Expand(after_answer=True))


# After a stop --------------------------------------------------------------------


def test_esc_or_a_ctrl_c_at_a_turn_already_stopping_asks_again_and_a_second_ctrl_c_leaves() -> None:
    last, action = route(Mode.TURN, ESC, None, 10.0)
    assert action == Stop() and last is None  # Esc is no Ctrl-C: nothing to remember
    last, action = route(Mode.TURN, CTRL_C, last, 10.5)
    assert (last, action) == (10.5, Stop())
    assert route(Mode.TURN, CTRL_C, last, 11.0) == (None, LeaveNow())


def test_a_ctrl_c_after_the_stopped_turn_ended_still_leaves_at_the_prompt() -> None:
    last, action = route(Mode.TURN, CTRL_C, None, 10.0)
    assert action == Stop()
    assert route(Mode.EMPTY_PROMPT, CTRL_C, last, 11.0) == (None, LeaveNow())


def test_a_ctrl_c_after_the_stopped_turn_ended_clears_a_line_typed_ahead_and_no_more() -> None:
    last, _ = route(Mode.TURN, CTRL_C, None, 10.0)
    assert route(Mode.PROMPT, CTRL_C, last, 11.0) == (None, Deliver(CTRL_C))


# Between turns (a command runs) ------------------------------------------------------


def test_between_turns_esc_does_nothing_and_typed_keys_wait_for_the_prompt() -> None:
    assert route(Mode.BETWEEN, ESC, None, 1.0) == (None, Ignore())
    assert route(Mode.BETWEEN, "l", None, 1.0) == (None, Queue("l"))
    assert route(Mode.BETWEEN, CTRL_C, None, 1.0) == (1.0, Ignore())


def test_the_router_spells_its_keys_as_the_line_editor_does() -> None:
    from treadle.adapters.blessed_terminal.line_editor import Key

    assert (Key.ESC, Key.CTRL_C, Key.CTRL_O, Key.CTRL_D) == (ESC, CTRL_C, CTRL_O, CTRL_D)


# The words of a no, typed inside an approval -------------------------------------


@pytest.mark.parametrize("key", ["a", ENTER, ESC, "<up>"])
def test_the_words_of_a_no_take_every_key_esc_included(key: str) -> None:
    assert route(Mode.ASIDE, key, None, 50.0) == (None, Deliver(key))


def test_a_ctrl_c_while_the_words_of_a_no_are_typed_stops_as_in_the_question() -> None:
    assert route(Mode.ASIDE, CTRL_C, None, 50.0) == (50.0, Stop())
    assert route(Mode.ASIDE, CTRL_C, 50.0, 50.5) == (None, LeaveNow())
    assert route(Mode.ASIDE, CTRL_O, None, 50.0) == (None, Expand(after_answer=True))


# A question that appears while the person types ahead ---------------------------


@pytest.mark.parametrize("key", ["a", "y", ENTER, CTRL_D])
@pytest.mark.parametrize("mode", [Mode.QUESTION, Mode.ASIDE])
def test_a_key_typed_on_as_a_question_appears_goes_to_the_line_typed_ahead(
    mode: Mode, key: str
) -> None:
    # The "a" of "and" is no "always allow": the person has not read the question yet.
    assert route(mode, key, None, 10.3, typed_ahead_at=10.0) == (None, Queue(key))


def test_after_a_pause_of_the_typing_on_window_keys_answer_the_question() -> None:
    later = 10.0 + TYPING_ON
    assert route(Mode.QUESTION, "y", None, later, typed_ahead_at=10.0) == (None, Deliver("y"))


def test_each_key_typed_on_keeps_the_person_typing() -> None:
    typed_at, now = 10.0, 10.0
    for _ in range(5):  # a key every 0.4 s: never a pause long enough to read
        now += 0.4
        _, action = route(Mode.QUESTION, "x", None, now, typed_ahead_at=typed_at)
        assert action == Queue("x")
        typed_at = now  # the terminal notes each Queue
    assert route(Mode.QUESTION, "y", None, now + TYPING_ON, typed_ahead_at=typed_at)[1] == (
        Deliver("y")
    )


def test_esc_and_ctrl_c_stop_the_turn_even_while_the_person_types_on() -> None:
    assert route(Mode.QUESTION, ESC, None, 10.1, typed_ahead_at=10.0) == (None, Stop())
    assert route(Mode.QUESTION, CTRL_C, None, 10.1, typed_ahead_at=10.0) == (10.1, Stop())
    assert route(Mode.QUESTION, CTRL_O, None, 10.1, typed_ahead_at=10.0)[1] == Expand(True)


@pytest.mark.parametrize("mode", [Mode.EMPTY_PROMPT, Mode.PROMPT])
def test_typing_on_does_not_concern_the_task_prompt(mode: Mode) -> None:
    assert route(mode, "a", None, 10.1, typed_ahead_at=10.0) == (None, Deliver("a"))


def test_typing_on_lasts_the_window_and_a_clock_that_went_back_is_no_typing() -> None:
    assert typing_on(10.0, 10.0) and typing_on(10.0, 10.0 + TYPING_ON - 0.01)
    assert not typing_on(10.0, 10.0 + TYPING_ON)
    assert not typing_on(10.0, 9.0)
    assert not typing_on(None, 10.0)


# A paste ---------------------------------------------------------------------------


@pytest.mark.parametrize("following", ["b", " ", ENTER, "<up>", ""])
def test_an_enter_with_a_key_right_behind_it_is_a_line_break_of_a_paste(following: str) -> None:
    assert enter_is_pasted(following)


@pytest.mark.parametrize("following", [None, ESC, CTRL_C, CTRL_D])
def test_an_enter_alone_or_followed_by_a_stopping_key_is_the_persons(
    following: str | None,
) -> None:
    assert not enter_is_pasted(following)
