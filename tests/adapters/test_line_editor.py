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


def test_a_long_line_scrolls_to_keep_the_cursor_in_view() -> None:
    editor = typed(LineEditor(), "x" * 50 + "END")
    shown, column = editor.view(20)
    assert shown.startswith("…") and shown.endswith("END") and len(shown) <= 19
    assert column == len(shown)
    editor.press(Key.HOME)
    shown, column = editor.view(20)
    assert shown == "x" * 18 + "…" and column == 0


def test_a_line_break_inside_the_text_shows_as_one_cell() -> None:
    from treadle.adapters.blessed_terminal.line_editor import LineEditor

    editor = LineEditor()
    for key in ["a", Key.NEWLINE, "b"]:
        editor.press(key)
    assert editor.text == "a\nb"
    assert editor.view(20) == ("a⏎b", 3)
