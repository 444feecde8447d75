"""The diff of a change to one file: edits, whole-file writes, new files and deletions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from treadle.domain.rules.diffs import (
    NO_NEWLINE,
    bounded_diff,
    describe_counts,
    diff_counts,
    unified_diff,
)

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def test_an_edit_shows_the_changed_line_with_its_context_under_git_style_headers() -> None:
    after = CALC.replace("return a - b", "return a + b", 1)
    assert unified_diff("calc.py", CALC, after).splitlines() == [
        "--- a/calc.py",
        "+++ b/calc.py",
        "@@ -1,5 +1,5 @@",
        " def add(a, b):",
        "-    return a - b",
        "+    return a + b",
        " ",
        " ",
        " def sub(a, b):",
    ]


def test_a_new_file_comes_from_dev_null_and_every_line_is_added() -> None:
    diff = unified_diff("src/new.py", None, "x = 1\ny = 2\n")
    assert diff.splitlines() == [
        "--- /dev/null",
        "+++ b/src/new.py",
        "@@ -0,0 +1,2 @@",
        "+x = 1",
        "+y = 2",
    ]
    assert diff_counts(diff) == (2, 0)


def test_a_deleted_file_goes_to_dev_null_and_every_line_is_removed() -> None:
    diff = unified_diff("old.txt", "gone\n", None)
    assert diff.splitlines() == ["--- a/old.txt", "+++ /dev/null", "@@ -1 +0,0 @@", "-gone"]
    assert describe_counts(diff) == "+0 −1"


def test_a_whole_file_write_shows_every_replaced_line() -> None:
    diff = unified_diff("notes.md", "one\ntwo\n", "three\n")
    assert diff_counts(diff) == (1, 2)
    assert "-one\n-two\n+three\n" in diff


def test_a_last_line_without_a_newline_is_marked_as_git_marks_it() -> None:
    diff = unified_diff("f", "a\nb", "a\nb\n")
    assert diff.splitlines()[-3:] == ["-b", NO_NEWLINE, "+b"]


def test_nothing_changed_is_no_diff_and_an_empty_new_file_still_has_headers() -> None:
    assert unified_diff("same", "x\n", "x\n") == ""
    assert unified_diff("empty", None, "") == "--- /dev/null\n+++ b/empty\n"


def test_a_long_diff_keeps_its_head_and_tail_and_says_what_it_left_out() -> None:
    diff = unified_diff("big", None, "".join(f"line {n}\n" for n in range(5_000)))
    kept = bounded_diff(diff, max_lines=100).splitlines()
    assert len(kept) == 101
    assert kept[:3] == ["--- /dev/null", "+++ b/big", "@@ -0,0 +1,5000 @@"]
    assert kept[50] == "[… 4,903 lines of the diff left out …]"
    assert kept[-1] == "+line 4999"


def test_an_over_long_line_is_cut_saying_how_much_is_missing() -> None:
    diff = unified_diff("min.js", None, "x" * 5_000 + "\n")
    kept = bounded_diff(diff, width=100).splitlines()
    assert kept[-1] == "+" + "x" * 99 + " [… 4,901 more characters on this line]"
    assert bounded_diff("+short\n") == "+short\n"


lines = st.lists(st.sampled_from(["a", "b", "c", "", "  d", "a\r", "\x0cpage"]), max_size=12)


@given(lines, lines, st.booleans(), st.booleans())
def test_a_diff_with_all_its_context_holds_exactly_both_versions(
    old: list[str], new: list[str], old_ends: bool, new_ends: bool
) -> None:
    before = "\n".join(old) + ("\n" if old_ends and old else "")
    after = "\n".join(new) + ("\n" if new_ends and new else "")
    diff = unified_diff("f", before, after, context=1_000)
    sides: dict[str, list[str]] = {"-": [], "+": []}
    previous = " "
    for line in diff.split("\n")[3:-1]:
        if line == NO_NEWLINE:
            for sign in "-+":
                if previous in (" ", sign):
                    sides[sign][-1] = sides[sign][-1].removesuffix("\n")
            continue
        previous = line[0]
        for sign in "-+":
            if previous in (" ", sign):
                sides[sign].append(line[1:] + "\n")
    if before != after:
        assert "".join(sides["-"]) == before
        assert "".join(sides["+"]) == after


def test_a_form_feed_or_a_lone_carriage_return_does_not_end_a_line() -> None:
    diff = unified_diff("f", "one\x0ctwo\rthree\n", "changed\n")
    assert diff_counts(diff) == (1, 1)
    assert NO_NEWLINE not in diff
