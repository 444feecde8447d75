"""Turn events as ACP session updates, on plain values (issue 24)."""

from __future__ import annotations

from acp.schema import EmbeddedResourceContentBlock, TextContentBlock, TextResourceContents

from treadle.adapters.acp.updates import FileChange, Updates, bounded, history_updates
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    Notice,
    PlanStep,
    PlanUpdated,
    ReasoningDelta,
    SubAgentEnding,
    SubAgentFinished,
    SubAgentStarted,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome
from treadle.entrypoints.acp import prompt_text, stop_reason

LS = ToolCall("c1", "bash", '{"command": "ls"}')
EDIT = ToolCall("c2", "edit_file", '{"path": "src/a.py", "old_string": "a", "new_string": "b"}')


def test_text_and_thoughts_of_the_main_agent_are_chunks_a_sub_agents_are_not() -> None:
    updates = Updates("/w")
    assert [u.session_update for u in updates.of(AnswerDelta("hi"))] == ["agent_message_chunk"]
    assert [u.session_update for u in updates.of(ReasoningDelta("hm"))] == ["agent_thought_chunk"]
    assert updates.of(AnswerDelta("sub", agent="agent-1")) == []
    assert updates.of(AnswerDelta("")) == []


def test_a_call_starts_once_its_output_replaces_its_content_and_it_ends_with_its_status() -> None:
    updates = Updates("/w")
    (start,) = updates.of(ToolStarted(LS, "ls"))
    assert (start.session_update, start.kind, start.status, start.title) == (
        "tool_call",
        "execute",
        "in_progress",
        "bash: ls",
    )
    (output,) = updates.of(ToolOutput("c1", ("a", "b")))
    assert output.content[0].content.text == "a\nb"
    (end,) = updates.of(ToolFinished(LS, "exit 1", True, 0.1, preview="a\nb"))
    assert (end.session_update, end.status, end.raw_output) == (
        "tool_call_update",
        "failed",
        "exit 1",
    )
    assert end.content[0].content.text == "a\nb"


def test_a_call_announced_for_an_approval_is_not_started_twice() -> None:
    updates = Updates("/w")
    announced = updates.announced(EDIT, "edit src/a.py")
    assert announced.locations[0].path == "/w/src/a.py"
    (started,) = updates.of(ToolStarted(EDIT, "edit src/a.py"))
    assert (started.session_update, started.status) == ("tool_call_update", "in_progress")


def test_an_edit_ends_with_the_files_text_before_and_after_and_no_diff_when_nothing_changed() -> (
    None
):
    updates = Updates("/w")
    updates.of(ToolStarted(EDIT, "edit"))
    (end,) = updates.of(
        ToolFinished(EDIT, "edited", False, 0.0), FileChange("/w/src/a.py", "a", "b")
    )
    diff = end.content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", "/w/src/a.py", "a", "b")
    updates.of(ToolStarted(EDIT, "edit"))
    (failed,) = updates.of(
        ToolFinished(EDIT, "no match", True, 0.0), FileChange("/w/src/a.py", "a", "a")
    )
    assert failed.content[0].type == "content"
    assert failed.content[0].content.text == "no match"


def test_a_call_refused_before_it_started_is_sent_whole() -> None:
    (refused,) = Updates("/w").of(ToolFinished(LS, "refused", True, 0.0))
    assert (refused.session_update, refused.status) == ("tool_call", "failed")


def test_the_plan_is_plan_entries_and_a_sub_agent_reports_under_its_call() -> None:
    updates = Updates("/w")
    (plan,) = updates.of(PlanUpdated((PlanStep("read", "completed"), PlanStep("fix"))))
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read", "completed"),
        ("fix", "pending"),
    ]
    spawn = ToolCall("c9", "agent", '{"task": "look"}')
    updates.of(ToolStarted(spawn, "look"))
    (started,) = updates.of(SubAgentStarted("agent-1", "look", 5.0, 60.0))
    assert (
        started.tool_call_id == "c9" and "agent-1 started: look" in started.content[0].content.text
    )
    (ended,) = updates.of(SubAgentFinished("agent-1", SubAgentEnding.DEADLINE, 2, Usage(), 60.0))
    assert ended.tool_call_id == "c9" and ended.content[0].content.text == "agent-1: deadline"


def test_a_notice_is_said_on_a_line_of_its_own() -> None:
    (said,) = Updates().of(Notice("tools_dropped", "the server dropped 2 tools"))
    assert said.content.text.strip() == "_treadle: the server dropped 2 tools_"


def test_a_long_output_keeps_its_end() -> None:
    assert bounded("abcdefgh", 3) == "…fgh"
    assert bounded("abc", 3) == "abc"


def test_history_shows_the_persons_words_the_answers_and_each_call_with_its_result() -> None:
    messages = (
        Message.user("fix it"),
        Message.assistant("Looking.", (LS,)),
        Message("tool", "a.py", tool_call_id="c1"),
        Message.assistant("Done."),
    )
    updates = history_updates(messages)
    assert [u.session_update for u in updates] == [
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "agent_message_chunk",
    ]
    assert (updates[2].title, updates[2].status) == ("bash: ls", "completed")
    assert updates[2].content[0].content.text == "a.py"


def test_a_prompt_is_its_text_and_the_text_of_what_it_embeds() -> None:
    blocks = [
        TextContentBlock(type="text", text="explain"),
        EmbeddedResourceContentBlock(
            type="resource", resource=TextResourceContents(uri="file:///w/a.py", text="x = 1")
        ),
    ]
    assert prompt_text(blocks) == "explain\n\n<context uri='file:///w/a.py'>\nx = 1\n</context>"


def test_every_outcome_has_a_stop_reason_and_only_a_pause_is_cancelled() -> None:
    reasons = {kind: stop_reason(TurnOutcome(kind)) for kind in OutcomeKind}
    assert reasons.pop(OutcomeKind.PAUSED) == "cancelled"
    assert set(reasons.values()) == {"end_turn"}
