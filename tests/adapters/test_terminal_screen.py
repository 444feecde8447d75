"""The log and its live block, written as VT100 and read back as a screen."""

from __future__ import annotations

import io

from tests.adapters.vt_emulator import VirtualScreen
from treadle.adapters.blessed_terminal.screen import Screen, cell_width, fit

WIDTH, HEIGHT = 20, 8


def make_screen() -> tuple[Screen, io.StringIO]:
    out = io.StringIO()
    return Screen(out, lambda: WIDTH, lambda: HEIGHT), out


def shown(out: io.StringIO) -> VirtualScreen:
    return VirtualScreen(WIDTH, HEIGHT).feed(out.getvalue())


def test_live_rows_sit_under_an_unfinished_row_and_text_goes_on_where_it_stopped() -> None:
    screen, out = make_screen()
    screen.write_text("abc")
    screen.draw_live(["status"])
    screen.write_text("def")
    screen.flush()
    assert shown(out).lines == ["abcdef", "status"]
    assert shown(out).cursor_row == "abcdef"


def test_a_row_filled_to_its_last_column_keeps_its_wrap() -> None:
    screen, out = make_screen()
    screen.write_text("x" * WIDTH)
    screen.draw_live(["status"])
    screen.write_text("y")
    screen.flush()
    screen.draw_live(["status"])
    screen.flush()
    assert shown(out).lines == ["x" * WIDTH, "y", "status"]


def test_whole_lines_end_an_unfinished_row_first() -> None:
    screen, out = make_screen()
    screen.write_text("partial")
    screen.draw_live(["one", "two"])
    screen.write_lines(["a line"])
    screen.draw_live(["one"])
    screen.flush()
    assert shown(out).lines == ["partial", "a line", "one"]


def test_the_live_block_makes_room_at_the_bottom_of_a_full_screen() -> None:
    screen, out = make_screen()
    screen.write_lines([f"line {n}" for n in range(HEIGHT)])
    screen.write_text("tail")
    screen.draw_live(["s1", "s2"])
    screen.flush()
    assert shown(out).lines[-3:] == ["tail", "s1", "s2"]
    assert shown(out).lines[0] == "line 0"  # scrolled into the scrollback, not lost


def test_a_prompt_holds_the_cursor_until_the_log_goes_on() -> None:
    screen, out = make_screen()
    screen.write_lines(["hello"])
    screen.draw_live(["› abc"], cursor=5)
    screen.flush()
    view = shown(out)
    assert view.cursor_row == "› abc" and view.x == 5
    screen.write_lines(["more"])
    screen.flush()
    assert shown(out).lines == ["hello", "more"]


def test_tabs_are_expanded_from_the_column_they_start_at() -> None:
    screen, out = make_screen()
    screen.write_text("ab\tc\n\td")
    screen.flush()
    assert shown(out).lines == ["ab      c", "        d"]
    assert screen.column == 9


def test_unchanged_live_rows_are_not_written_again() -> None:
    screen, out = make_screen()
    screen.draw_live(["same"])
    screen.flush()
    written = len(out.getvalue())
    screen.draw_live(["same"])
    screen.flush()
    assert len(out.getvalue()) == written


def test_widths_count_wide_characters_twice() -> None:
    assert cell_width("abc") == 3 and cell_width("漢字") == 4
    # Mixed: ASCII one each, the others as wcwidth says (a combining mark none).
    assert cell_width("⠋ running · 漢 e\u0301") == 16
    assert cell_width("· ·") == 3  # the second time from the table, the same
    assert fit("漢字漢字", 5) == "漢字…"
    assert fit("short", 10) == "short"
