"""What a command printed, as the screen shows it: plain values in, lines out."""

from __future__ import annotations

from treadle.domain.rules.output_preview import (
    KEPT_BYTES,
    LINE_CHARS,
    OutputWatch,
    more_lines,
    preview_lines,
    screen_line,
)


def numbered(count: int, start: int = 1) -> bytes:
    return b"".join(b"line %d\n" % n for n in range(start, start + count))


def watched(*chunks: bytes) -> OutputWatch:
    watch = OutputWatch()
    for chunk in chunks:
        watch.feed(chunk)
    return watch


def test_a_line_loses_its_escape_sequences_and_controls() -> None:
    assert screen_line("\x1b[31mred\x1b[0m \x1b]0;title\x07ok\x07") == "red ok"
    assert screen_line("bell\x07 and \u202eevil") == "bell and evil"


def test_a_carriage_return_keeps_what_a_terminal_would_show() -> None:
    assert screen_line("10%\r50%\r100%") == "100%"
    assert screen_line("done\r") == "done"  # a CRLF ending is no overwrite


def test_tabs_become_spaces_and_a_long_line_is_cut() -> None:
    assert screen_line("a\tb") == "a       b"
    long = screen_line("x" * 10_000)
    assert len(long) == LINE_CHARS and long.endswith("…")


def test_few_lines_are_all_shown_without_a_marker() -> None:
    assert watched(b"one\ntwo\n").preview() == "one\ntwo"
    assert watched(numbered(11)).preview().split("\n") == [f"line {n}" for n in range(1, 12)]


def test_many_lines_keep_head_and_tail_and_say_how_many_are_left_out() -> None:
    lines = watched(numbered(100)).preview().split("\n")
    assert lines[:5] == [f"line {n}" for n in range(1, 6)]
    assert lines[5] == "… 90 more lines"
    assert lines[6:] == [f"line {n}" for n in range(96, 101)]


def test_twelve_lines_leave_two_out_never_a_marker_for_one() -> None:
    lines = watched(numbered(12)).preview().split("\n")
    assert lines[5] == "… 2 more lines" and len(lines) == 11


def test_output_in_many_small_chunks_gives_the_same_preview() -> None:
    data = numbered(1_000)
    whole = watched(data)
    pieces = watched(*(data[i : i + 7] for i in range(0, len(data), 7)))
    assert pieces.preview() == whole.preview()
    assert pieces.live_lines() == whole.live_lines()
    assert pieces.line_count == whole.line_count == 1_000


def test_the_live_lines_are_the_last_five_newest_last_an_unfinished_one_included() -> None:
    watch = watched(numbered(20), b"Downloading... 40%")
    assert watch.live_lines() == ("line 17", "line 18", "line 19", "line 20", "Downloading... 40%")
    assert watch.line_count == 21


def test_no_output_has_no_preview_and_no_live_lines() -> None:
    watch = watched(b"")
    assert watch.preview() == "" and watch.live_lines() == () and watch.line_count == 0


def test_a_huge_line_keeps_memory_flat_and_still_counts_lines() -> None:
    watch = watched(b"a" * (5 * KEPT_BYTES), b"\nend\n")
    assert watch.line_count == 2
    lines = watch.preview().split("\n")
    assert lines[0].startswith("aaa") and lines[0].endswith("…") and lines[-1] == "end"


def test_undecodable_bytes_are_replaced_not_fatal() -> None:
    assert watched(b"bad \xff byte\n").preview() == "bad \ufffd byte"


def test_the_preview_rule_with_a_head_cut_short_says_what_falls_between() -> None:
    # The head could keep only its first (giant) line; the tail holds lines 3 to 8.
    assert preview_lines(["line 1"], [f"line {n}" for n in range(3, 9)], 8) == [
        "line 1",
        more_lines(2),
        *(f"line {n}" for n in range(4, 9)),
    ]
    assert more_lines(1) == "… 1 more line" and more_lines(1234) == "… 1,234 more lines"
