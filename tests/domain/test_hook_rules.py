"""Hooks' rules (issue 23) on plain values: reading Claude Code's table, matching a
tool under both names, what a hook is told, and what its ending means."""

from __future__ import annotations

import json

from treadle.domain.rules.hook_turns import stop_goes_on, with_context
from treadle.domain.rules.hooks import (
    combine,
    commands_for,
    decide,
    hook_payload,
    hooks_table_value,
    matches,
    read_hooks,
)
from treadle.domain.rules.notify import notify_payload, ring_bytes, speaks_osc9
from treadle.domain.values.hook_table import HookRun
from treadle.domain.values.hooks import HookEvent, HookInput, HookVerdict

SETTINGS = {
    "PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]},
        {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "lint.sh"}]},
        {"matcher": "mcp__github__.*", "hooks": [{"type": "command", "command": "gh.sh"}]},
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "check.sh"}]}],
}


def pre(tool: str) -> list[str]:
    table, _ = read_hooks(SETTINGS, "settings.json")
    return [c.command for c in commands_for(table, HookInput(HookEvent.PRE_TOOL_USE, tool))]


def test_a_matcher_names_a_tool_by_claude_code_s_name_or_treadle_s():
    assert pre("bash") == ["guard.sh"]
    assert pre("edit_file") == ["lint.sh"] and pre("write_file") == ["lint.sh"]
    assert pre("read_file") == []
    assert pre("mcp__github__create_issue") == ["gh.sh"]
    assert matches("bash", "bash", tool=True) and matches("Bash", "bash", tool=True)
    assert not matches("Bas", "bash", tool=True)  # the whole name, not a part of it
    assert matches("", "anything") and matches("Notebook.*", "edit_file", tool=True)


def test_a_group_without_a_matcher_runs_at_every_one_of_its_event():
    table, _ = read_hooks(SETTINGS, "settings.json")
    stop = commands_for(table, HookInput(HookEvent.STOP))
    assert [c.command for c in stop] == ["check.sh"] and stop[0].timeout == 60.0


def test_the_same_command_in_two_groups_runs_once():
    table, _ = read_hooks(
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"command": "log.sh"}]},
                {"matcher": "*", "hooks": [{"command": "log.sh"}]},
            ]
        },
        "x",
    )
    assert len(commands_for(table, HookInput(HookEvent.PRE_TOOL_USE, "bash"))) == 1


def test_what_cannot_be_taken_is_said_and_the_rest_kept():
    table, problems = read_hooks(
        {
            "PreToolUse": [
                {"matcher": "(", "hooks": [{"command": "a"}]},
                {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "is it ok?"}]},
                {"matcher": "Bash", "hooks": [{"command": "b", "timeout": -1}]},
                {"matcher": "Bash", "hooks": [{"command": "ok"}]},
            ],
            "SessionEnd": [{"hooks": [{"command": "bye"}]}],
        },
        "x",
    )
    assert [c.command for g in table.groups for c in g.commands] == ["ok"]
    assert len(problems) == 4
    assert "SessionEnd: not an event" in problems[3]
    assert "'prompt' hooks are not run" in problems[1]
    assert read_hooks(["not", "a table"], "x")[1] == ("hooks must be a table of events",)


def test_a_table_reads_back_as_the_files_write_it():
    table, _ = read_hooks(SETTINGS, "x")
    again, problems = read_hooks(hooks_table_value(table), "x")
    assert again == table and problems == ()


def test_a_hook_is_told_what_happened_in_claude_code_s_words():
    happened = HookInput(HookEvent.PRE_TOOL_USE, "edit_file", {"path": "a.py", "old_string": "x"})
    payload = hook_payload(happened, session_id="s1", transcript_path="/t.jsonl", cwd="/w")
    assert payload == {
        "session_id": "s1",
        "transcript_path": "/t.jsonl",
        "cwd": "/w",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"path": "a.py", "old_string": "x", "file_path": "a.py"},
        "treadle_tool_name": "edit_file",
    }
    stop = hook_payload(
        HookInput(HookEvent.STOP, stop_hook_active=True), session_id="", transcript_path="", cwd=""
    )
    assert stop["stop_hook_active"] is True
    json.dumps(payload)  # it is JSON


def test_exit_2_refuses_with_stderr_as_the_reason():
    verdict = decide(HookEvent.PRE_TOOL_USE, HookRun("guard", 2, stderr="rm is not allowed\n"))
    assert verdict.blocked and verdict.reason == "rm is not allowed"


def test_json_on_stdout_may_refuse_or_add_context():
    block = decide(HookEvent.STOP, HookRun("c", 0, '{"decision": "block", "reason": "run tests"}'))
    assert block.blocked and block.reason == "run tests"
    deny = json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "not in prod",
            }
        }
    )
    assert decide(HookEvent.PRE_TOOL_USE, HookRun("c", 0, deny)).reason == "not in prod"
    added = json.dumps({"hookSpecificOutput": {"additionalContext": "branch: main"}})
    verdict = decide(HookEvent.USER_PROMPT_SUBMIT, HookRun("c", 0, added))
    assert not verdict.blocked and verdict.context == ("branch: main",)


def test_plain_stdout_is_context_only_where_claude_code_adds_it():
    assert decide(HookEvent.SESSION_START, HookRun("c", 0, "today: Tuesday\n")).context == (
        "today: Tuesday",
    )
    assert decide(HookEvent.PRE_TOOL_USE, HookRun("c", 0, "chatter")).context == ()


def test_a_failing_or_hanging_hook_is_one_line_and_refuses_nothing():
    failed = decide(HookEvent.PRE_TOOL_USE, HookRun("lint.sh", 1, stderr="boom\nmore"))
    assert not failed.blocked
    assert failed.problems == ("PreToolUse hook 'lint.sh' failed with exit 1: boom",)
    hung = decide(HookEvent.STOP, HookRun("sleep 99", None, timed_out=True, timeout=2))
    assert hung.problems == ("Stop hook 'sleep 99' was stopped at its deadline of 2 s",)
    broken = decide(HookEvent.STOP, HookRun("c", 0, "{not json"))
    assert not broken.blocked and "cannot be read" in broken.problems[0]
    unstarted = decide(HookEvent.STOP, HookRun("c", None, failure="sandbox"))
    assert "could not start: sandbox" in unstarted.problems[0]


def test_one_refusal_refuses_for_all_and_every_reason_is_kept():
    verdict = combine(
        [
            HookVerdict(ran=1),
            HookVerdict(blocked=True, reason="a", ran=1),
            HookVerdict(blocked=True, reason="b", problems=("p",), ran=1),
        ]
    )
    assert verdict == HookVerdict(True, "a\nb", (), ("p",), 3)


def test_a_stop_hook_sends_a_turn_on_once():
    refusal = HookVerdict(blocked=True, reason="tests fail")
    assert stop_goes_on(refusal, 0)
    assert not stop_goes_on(refusal, 1)
    assert not stop_goes_on(HookVerdict(), 0)


def test_context_follows_the_message_marked_as_the_hooks():
    assert with_context("fix it", ()) == "fix it"
    assert with_context("fix it", ("a", "b")) == "fix it\n\n<hook-context>\na\n\nb\n</hook-context>"


def test_osc_9_where_the_terminal_shows_it_else_a_bell():
    assert ring_bytes("Turn finished", {"TERM_PROGRAM": "iTerm.app"}) == (
        b"\x1b]9;treadle: Turn finished\x07"
    )
    assert ring_bytes("x", {"TERM": "xterm-kitty"}).startswith(b"\x1b]9;")
    assert speaks_osc9({"WT_SESSION": "1"}) and speaks_osc9({"TERM_PROGRAM": "ghostty"})
    assert ring_bytes("x", {"TERM": "xterm-256color"}) == b"\x07"
    assert ring_bytes("x", {"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/t"}) == b"\x07"
    # The text cannot end the sequence early or smuggle another one in.
    assert ring_bytes("a\x07b\x1b]0;x", {"TERM_PROGRAM": "WezTerm"}).count(b"\x07") == 1


def test_a_notify_command_gets_codex_s_event():
    payload = notify_payload(
        "turn_ended", "Turn finished", cwd="/w", session_id="s", last_answer="Done."
    )
    assert payload["type"] == "agent-turn-complete"
    assert payload["last-assistant-message"] == "Done."
    assert notify_payload("question", "Which?", cwd="", session_id="")["type"] == (
        "user-input-requested"
    )


def test_a_pre_tool_use_hook_may_say_yes_for_the_person_unless_another_refuses():
    allow = json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}})
    verdict = decide(HookEvent.PRE_TOOL_USE, HookRun("c", 0, allow))
    assert verdict.allowed and not verdict.blocked
    assert not decide(HookEvent.STOP, HookRun("c", 0, allow)).allowed
    refused = HookVerdict(blocked=True, reason="no", ran=1)
    assert not combine([verdict, refused]).allowed
    assert combine([verdict, HookVerdict(ran=1)]).allowed
