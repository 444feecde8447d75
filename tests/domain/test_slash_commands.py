"""The interactive prompt's lines, read on plain values: a task, a command, or a
``/word`` that names none."""

from __future__ import annotations

import pytest

from treadle.domain.rules.slash_commands import (
    BUILT_IN,
    Run,
    Task,
    Unknown,
    help_lines,
    read_line,
    unknown_line,
)

KNOWN = {"/diff", "/undo", "/redo", "/help"}


@pytest.mark.parametrize(
    ("line", "asked"),
    [
        ("", None),
        ("   ", None),
        ("fix the test", Task("fix the test")),
        ("  fix it  ", Task("fix it")),
        ("/diff", Run("/diff")),
        ("/undo please", Run("/undo", "please")),
        ("/quit", Run("/quit")),
        ("/exit", Run("/exit")),
        ("/help", Run("/help")),
        ("/nonsense", Unknown("/nonsense", None)),
        ("/hlep", Unknown("/hlep", "/help")),
        ("/usr/bin/env is missing", Task("/usr/bin/env is missing")),
        (" /tmp is full", Task("/tmp is full")),
    ],
)
def test_a_line_is_a_task_a_command_or_an_unknown_word(line: str, asked: object) -> None:
    assert read_line(line, KNOWN) == asked


def test_help_lists_every_command_with_what_it_does() -> None:
    lines = help_lines(BUILT_IN)
    for command in BUILT_IN:
        assert any(line.startswith(command.name) and command.summary in line for line in lines)
    # The summaries start in one column, after the longest name and two spaces.
    width = max(len(c.name) for c in BUILT_IN)
    assert {line.index(c.summary) for line, c in zip(lines, BUILT_IN, strict=False)} == {width + 2}


def test_an_unknown_word_is_said_with_the_command_it_was_likely_meant_as() -> None:
    assert unknown_line(Unknown("/hlep", "/help")) == (
        "unknown command /hlep — did you mean /help? (/help lists them; nothing was sent)"
    )
    assert "did you mean" not in unknown_line(Unknown("/nonsense", None))
