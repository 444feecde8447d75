"""What the screen says about the context window: one line per pruning or compaction,
notes that wait for a continued answer's end, the blessed display's styled lines."""

from __future__ import annotations

import io

from treadle.adapters.blessed_terminal.display import TurnView
from treadle.adapters.terminal.plain_terminal import PlainTerminal, describe_event, tokens_text
from treadle.domain.values.conversation import Message, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    TurnEnded,
    WindowFilled,
)
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome

COMPACTED = ContextCompacted(13_100, 2_400, 16_000, (Message.user("t"), Message.user("s")))


def test_a_compaction_is_one_line_of_figures() -> None:
    assert describe_event(COMPACTED) == ["context 13.1k/16k · compacted to 2.4k"]
    pruned = ContextPruned(13_100, 9_800, 16_000, (4, 6), (Message.tool("a", "s"),) * 2)
    assert describe_event(pruned) == ["context 13.1k/16k · pruned 2 old tool results to 9.8k"]
    from dataclasses import replace

    assert describe_event(replace(COMPACTED, agent="agent-1", dropped=12)) == [
        "[agent-1] context 13.1k/16k · compacted to 2.4k (the summary left out the 12 "
        "oldest messages)"
    ]
    assert "made from the record" in describe_event(replace(COMPACTED, summarized=False))[0]


def test_token_counts_read_at_a_glance() -> None:
    assert [tokens_text(n) for n in (950, 2_400, 16_000, 16_384, 131_072)] == [
        "950",
        "2.4k",
        "16k",
        "16.4k",
        "131.1k",
    ]


def test_a_learned_window_is_said_and_a_configured_one_is_not() -> None:
    learned = ContextWindowKnown(2_048, "the server's refusal")
    assert describe_event(learned) == [
        "context window 2,048 tokens, learned from the server's refusal"
    ]
    assert describe_event(ContextWindowKnown(32_768, "llama.cpp /props n_ctx")) == []


def test_context_notes_wait_for_the_end_of_a_continued_answer() -> None:
    out = io.StringIO()
    terminal = PlainTerminal(out)
    terminal.show(AnswerDelta("Chapter one, "))
    terminal.show(WindowFilled(2_048, 1_714, 334))
    terminal.show(CompactionStarted(2_000, 2_048, 3))
    terminal.show(COMPACTED)
    terminal.show(AnswerDelta("chapter two."))
    terminal.show(TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(1, 2), 3, 0.5))
    lines = out.getvalue().splitlines()
    assert lines[0] == "Chapter one, chapter two."
    assert lines[1].startswith("… the answer filled the context window (2,048 tokens")
    assert lines[3] == "context 13.1k/16k · compacted to 2.4k"
    assert lines[-1] == "Turn finished"


def test_the_display_shows_context_lines_and_says_when_it_compacts() -> None:
    view = TurnView()
    assert view.lines_for(CompactionStarted(9_000, 16_000, 3), 0.0) == []
    assert view.activity == "compacting the conversation"
    assert view.lines_for(COMPACTED, 0.0) == ["context 13.1k/16k · compacted to 2.4k"]
    filled = view.lines_for(WindowFilled(2_048, 1_714, 334), 0.0)
    assert filled and "filled the context window" in filled[0]
