"""The line editor of the prompt: keys in, text and cursor out."""

from __future__ import annotations

from treadle.adapters.blessed_terminal.line_editor import Key, LineEditor


def typed(editor: LineEditor, *keys: str) -> LineEditor:
    for key in keys:
        for part in [key] if len(key) != 1 and key.startswith("<") else list(key):
            editor.press(part)
    return editor


def test_characters_go_in_at_the_cursor() -> None:
    editor = typed(LineEditor(), "helo", Key.LEFT, "l")
    assert (editor.text, editor.cursor) == ("hello", 4)


def test_backspace_delete_home_and_end_edit_around_the_cursor() -> None:
    editor = typed(LineEditor(), "abcd", Key.BACKSPACE, Key.HOME, Key.DELETE, Key.END, "x")
    assert editor.text == "bcx"
    assert typed(LineEditor(), Key.BACKSPACE).text == ""


def test_ctrl_u_k_and_w_kill_parts_of_the_line() -> None:
    assert typed(LineEditor(), "run the tests", Key.LEFT, Key.LEFT, Key.CTRL_U).text == "ts"
    assert typed(LineEditor(), "run the tests", Key.HOME, Key.RIGHT, Key.CTRL_K).text == "r"
    assert typed(LineEditor(), "run the tests  ", Key.CTRL_W).text == "run the "


def test_enter_submits_ctrl_c_cancels_and_ctrl_d_ends_only_an_empty_line() -> None:
    editor = typed(LineEditor(), "ab")
    assert editor.press(Key.ENTER) == "submit"
    assert editor.press(Key.CTRL_C) == "cancel"
    assert editor.press(Key.HOME) is None and editor.press(Key.CTRL_D) is None
    assert editor.text == "b"
    assert LineEditor().press(Key.CTRL_D) == "eof"


def test_esc_clears_the_line_and_control_characters_are_not_typed() -> None:
    assert typed(LineEditor(), "abc", Key.ESC).text == ""
    assert typed(LineEditor(), "a", "\x07", "b").text == "ab"


def test_up_and_down_walk_the_history_and_come_back_to_the_draft() -> None:
    editor = LineEditor(history=["first", "second"])
    typed(editor, "dra")
    editor.press(Key.UP)
    assert editor.text == "second"
    editor.press(Key.UP)
    editor.press(Key.UP)  # nothing older
    assert editor.text == "first"
    editor.press(Key.DOWN)
    editor.press(Key.DOWN)
    assert (editor.text, editor.cursor) == ("dra", 3)


def test_a_submitted_line_joins_the_history_once() -> None:
    editor = LineEditor()
    for line in ("ls", "ls", "  ", "pwd"):
        typed(editor, line)
        editor.take()
    assert editor.history == ["ls", "pwd"]
    assert (editor.text, editor.cursor) == ("", 0)


def test_a_long_line_wraps_over_rows_of_the_width_with_the_cursor_on_the_last() -> None:
    editor = typed(LineEditor(), "x" * 45 + "END")
    rows, row, column = editor.layout(20)
    assert rows == ["x" * 20, "x" * 20, "x" * 5 + "END"]
    assert (row, column) == (2, 8)
    editor.press(Key.HOME)
    assert editor.layout(20)[1:] == (0, 0)


def test_a_cursor_after_a_full_row_starts_the_next_one() -> None:
    editor = typed(LineEditor(), "x" * 20)
    assert editor.layout(20) == (["x" * 20, ""], 1, 0)
    editor.press(Key.LEFT)
    assert editor.layout(20) == (["x" * 20], 0, 19)


def test_a_line_break_inside_the_text_starts_a_row() -> None:
    editor = LineEditor()
    for key in ["a", Key.NEWLINE, "b"]:
        editor.press(key)
    assert editor.text == "a\nb"
    assert editor.layout(20) == (["a", "b"], 1, 1)
    editor.press(Key.LEFT)
    editor.press(Key.LEFT)
    assert editor.layout(20) == (["a", "b"], 0, 1)


def test_wide_characters_never_straddle_two_rows() -> None:
    editor = typed(LineEditor(), "漢字漢字漢")
    assert editor.layout(5)[0] == ["漢字", "漢字", "漢"]


def test_a_line_taller_than_its_rows_shows_the_rows_around_the_cursor() -> None:
    editor = typed(LineEditor(), "".join(f"{n:02}" for n in range(10)))  # 10 rows of 2
    rows, row, column = editor.layout(2, most=3)
    assert rows == ["08", "09", ""] and (row, column) == (2, 0)
    editor.press(Key.HOME)
    assert editor.layout(2, most=3) == (["00", "01", "02"], 0, 0)
