"""An answer's markdown rendered for the terminal, checked on plain values."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from treadle.adapters.blessed_terminal.markdown import (
    AnswerRenderer,
    MarkdownStyles,
    pending_rows,
)
from treadle.adapters.blessed_terminal.screen import cell_width


def rendered(text: str, width: int = 40, styles: MarkdownStyles | None = None) -> list[str]:
    renderer = AnswerRenderer(styles or MarkdownStyles(), lambda: width)
    return renderer.feed(text) + renderer.finish()


def marked() -> MarkdownStyles:
    """Styles that show where they were applied."""
    return MarkdownStyles(
        bold=lambda t: f"<b>{t}</b>",
        italic=lambda t: f"<i>{t}</i>",
        underline=lambda t: f"<u>{t}</u>",
        dim=lambda t: f"<d>{t}</d>",
        code=lambda t: f"<c>{t}</c>",
        heading=lambda t: f"<h>{t}</h>",
    )


def test_a_heading_loses_its_marks_and_takes_the_heading_style() -> None:
    assert rendered("## What I did\n", styles=marked()) == ["<h>What I did</h>"]


def test_emphasis_code_and_links_are_styled_without_their_marks() -> None:
    rows = rendered("a **b** *c* `d` [e](https://x.example) <https://y.example>\n", 80, marked())
    assert rows == [
        "a <b>b</b> <i>c</i> <c>d</c> <u>e</u> <d>(https://x.example)</d> <u>https://y.example</u>"
    ]


def test_a_paragraph_is_wrapped_at_word_boundaries_within_the_width() -> None:
    text = "the quick brown fox jumps over the lazy dog " * 4
    rows = rendered(text.strip() + "\n", 30)
    assert all(cell_width(row) <= 29 for row in rows)
    assert " ".join(rows).split() == text.split()


def test_a_word_wider_than_the_row_is_broken_rather_than_overflowing() -> None:
    rows = rendered("x" * 50 + "\n", 21)
    assert rows == ["x" * 20, "x" * 20, "x" * 10]


def test_wide_characters_count_two_columns() -> None:
    rows = rendered("漢字 " * 20 + "\n", 21)
    assert all(cell_width(row) <= 20 for row in rows)


def test_a_list_item_wraps_with_a_hanging_indent() -> None:
    rows = rendered("- one two three four five six seven eight nine ten eleven\n", 25)
    assert rows[0].startswith("• one")
    assert all(row.startswith("  ") and row[2] != " " for row in rows[1:])
    assert len(rows) > 1


def test_numbered_and_task_items_keep_their_numbers_and_show_their_state() -> None:
    assert rendered("1. first\n2) second\n- [x] done\n- [ ] todo\n") == [
        "1. first",
        "2) second",
        "• ☑ done",
        "• ☐ todo",
    ]


def test_a_block_quote_has_a_gutter_on_every_row() -> None:
    rows = rendered("> " + "word " * 20 + "\n", 30)
    assert len(rows) > 1 and all(row.startswith("▌ ") for row in rows)


def test_fenced_code_keeps_its_lines_and_indentation_behind_a_gutter() -> None:
    rows = rendered("```python\ndef f():\n    return 1\n```\nafter\n")
    assert rows == ["│ python", "│ def f():", "│     return 1", "after"]


def test_code_is_highlighted_only_when_colour_is_on() -> None:
    colour = MarkdownStyles(colour=True)
    shown = rendered("```python\nreturn 'x'\n```\n", styles=colour)
    assert "\x1b[" in shown[1]
    assert "\x1b[" not in "".join(rendered("```python\nreturn 'x'\n```\n"))


def test_a_table_is_drawn_once_its_last_row_is_in_with_its_columns_aligned() -> None:
    renderer = AnswerRenderer(MarkdownStyles(), lambda: 60)
    assert renderer.feed("| a | bb |\n|---|---|\n| ccc | d |\n") == []
    assert "| ccc | d |" in renderer.pending()
    rows = renderer.feed("after\n")
    assert rows == [
        "┌─────┬────┐",
        "│ a   │ bb │",
        "├─────┼────┤",
        "│ ccc │ d  │",
        "└─────┴────┘",
        "after",
    ]


def test_a_table_too_wide_wraps_its_cells_within_the_width() -> None:
    rows = rendered("| a | b |\n|---|---|\n| " + "long words " * 10 + "| x |\n", 40)
    assert all(cell_width(row) <= 39 for row in rows)
    assert len({row.index("│", 1) for row in rows if row.startswith("│")}) == 1


def test_a_line_with_a_pipe_that_heads_no_table_is_a_plain_line() -> None:
    assert rendered("a | b\nnext\n") == ["a | b", "next"]


def test_runs_of_blank_lines_become_one() -> None:
    assert rendered("a\n\n\n\nb\n") == ["a", "", "b"]


def test_pieces_cut_anywhere_render_as_the_whole_does() -> None:
    text = "# T\n\n- **bold** item\n\n```\ncode\n```\n| a | b |\n|-|-|\n| 1 | 2 |\nend"
    whole = rendered(text)
    renderer = AnswerRenderer(MarkdownStyles(), lambda: 40)
    rows = [row for char in text for row in renderer.feed(char)] + renderer.finish()
    assert rows == whole


def test_the_unfinished_line_is_pending_not_committed() -> None:
    renderer = AnswerRenderer(MarkdownStyles(), lambda: 40)
    assert renderer.feed("done\nhalf a li") == ["done"]
    assert renderer.pending() == "half a li"
    assert pending_rows("x" * 100, 21)[-1] == "x" * 20
    assert len(pending_rows("x" * 1000, 21)) == 3


def test_the_unfinished_line_shows_as_it_will_be_committed() -> None:
    line = "- changed **runner.py** so that a command stopped at its deadline keeps its output"
    renderer = AnswerRenderer(marked(), lambda: 40)
    renderer.feed(line)
    live = renderer.pending_rows(40, most=10)
    assert live == renderer.finish()  # the rows do not move when the line is committed
    assert live[0].startswith("• changed <b>runner.py</b>") and live[1].startswith("  ")


def test_the_unfinished_line_of_a_code_block_shows_behind_its_gutter() -> None:
    renderer = AnswerRenderer(MarkdownStyles(), lambda: 40)
    assert renderer.feed("```python\n") == ["│ python"]
    renderer.feed("def fix(pa")
    assert renderer.pending_rows(40) == ["│ def fix(pa"]
    renderer.feed("th):\n``")
    assert renderer.pending_rows(40) == []  # the fence closing: nothing to show


def test_the_live_rows_of_an_unfinished_line_are_its_last_ones() -> None:
    renderer = AnswerRenderer(MarkdownStyles(), lambda: 21)
    renderer.feed("word " * 200)
    assert len(renderer.pending_rows(21)) == 3
    assert len(renderer.pending_rows(21, most=8)) == 8


def test_escape_sequences_from_the_model_never_reach_the_terminal() -> None:
    rows = rendered("\x1b]0;owned\x07**a**\x1b[2J\n")
    assert rows == ["a"]


def test_without_colour_the_layout_is_the_same() -> None:
    text = "## H\n- item one two three four five six seven\n| a | b |\n|-|-|\n| 1 | 2 |\n"
    plain = rendered(text, 30)

    unmarked = [re.sub(r"</?[a-z]>", "", row) for row in rendered(text, 30, marked())]
    assert unmarked == plain


@given(st.text(max_size=300), st.integers(min_value=1, max_value=200))
def test_any_text_renders_within_the_width_without_failing(text: str, width: int) -> None:
    rows = rendered(text, width)
    limit = max(20, width - 1)
    assert all(cell_width(row) <= limit for row in rows)


@given(
    st.lists(
        st.tuples(st.text("ab", min_size=1, max_size=12), st.sampled_from([" ", "  ", "\t"])),
        max_size=30,
    ),
    st.integers(1, 40),
)
def test_plain_text_wraps_the_same_on_the_fast_way_as_on_the_general_one(
    words: list[tuple[str, str]], width: int
) -> None:
    from treadle.adapters.blessed_terminal import markdown

    text = "".join(word + space for word, space in words)
    fast = markdown._wrap_plain(text, width)
    general = markdown._wrap([(text, str.upper)], width)  # styled: never the fast way
    if fast is not None:
        assert fast == [row.lower() for row in general]
    else:
        assert any(len(word) > width for word, _ in words)
