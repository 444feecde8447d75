"""Hooks as Claude Code writes them (issue 23): reading a ``hooks`` table, matching a
group to what happened, telling a hook what happened, and reading what its command's
ending means.

>>> table, problems = read_hooks(
...     {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]},
...     "settings.json",
... )
>>> [c.command for c in commands_for(table, HookInput(HookEvent.PRE_TOOL_USE, "bash"))]
['guard']
>>> decide(HookEvent.PRE_TOOL_USE, HookRun("guard", 2, stderr="no rm here")).reason
'no rm here'
>>> claude_names("edit_file")
('Edit', 'MultiEdit', 'NotebookEdit')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from treadle.domain.rules.workflows import CLAUDE_TOOL_NAMES
from treadle.domain.values.hook_table import HookCommand, HookGroup, HookRun, HookTable
from treadle.domain.values.hooks import DEFAULT_HOOK_TIMEOUT, HookEvent, HookInput, HookVerdict

BLOCK_EXIT = 2
"""The exit code by which a hook refuses (Claude Code's)."""
CONTEXT_EVENTS = frozenset({HookEvent.SESSION_START, HookEvent.USER_PROMPT_SUBMIT})
"""Events whose hooks' plain stdout joins the conversation, as Claude Code adds it."""
SHOWN_COMMAND = 60
"""The most of a command a line about it shows."""
PATH_ALIASES = {"read_file", "write_file", "edit_file"}
"""treadle's file tools, whose ``path`` is Claude Code's ``file_path``."""


# Reading a table -----------------------------------------------------------------------


def read_hooks(data: object, source: str) -> tuple[HookTable, tuple[str, ...]]:
    """The hooks of a ``hooks`` table as Claude Code's settings write it, and what in it
    was not taken (one line each: an event treadle does not have, a ``prompt`` hook, a
    matcher that is no regular expression…). ``source`` names the file."""
    if not isinstance(data, Mapping):
        return HookTable(), ("hooks must be a table of events",)
    groups: list[HookGroup] = []
    problems: list[str] = []
    known = {event.value: event for event in HookEvent}
    for name, entries in data.items():
        event = known.get(str(name))
        if event is None:
            problems.append(f"{name}: not an event treadle runs hooks at ({', '.join(known)})")
            continue
        if not isinstance(entries, Sequence) or isinstance(entries, str):
            problems.append(f"{name}: must be a list of {{matcher, hooks}} tables")
            continue
        for index, entry in enumerate(entries):
            where = f"{name}[{index}]"
            group = _group(event, entry, source, where, problems)
            if group is not None:
                groups.append(group)
    return HookTable(tuple(groups)), tuple(problems)


def _group(
    event: HookEvent, entry: object, source: str, where: str, problems: list[str]
) -> HookGroup | None:
    if not isinstance(entry, Mapping):
        problems.append(f"{where}: must be a table with matcher and hooks")
        return None
    matcher = entry.get("matcher", "")
    if not isinstance(matcher, str):
        problems.append(f"{where}.matcher: must be text")
        return None
    if matcher not in ("", "*"):
        try:
            re.compile(matcher)
        except re.error as error:
            problems.append(f"{where}.matcher: not a regular expression ({error})")
            return None
    hooks = entry.get("hooks", ())
    if not isinstance(hooks, Sequence) or isinstance(hooks, str):
        problems.append(f"{where}.hooks: must be a list of {{type, command}} tables")
        return None
    commands: list[HookCommand] = []
    for index, hook in enumerate(hooks):
        command = _command(hook, f"{where}.hooks[{index}]", problems)
        if command is not None:
            commands.append(command)
    if not commands:
        return None
    return HookGroup(event, "" if matcher == "*" else matcher, tuple(commands), source)


def _command(hook: object, where: str, problems: list[str]) -> HookCommand | None:
    if not isinstance(hook, Mapping):
        problems.append(f"{where}: must be a table with type and command")
        return None
    kind = hook.get("type", "command")
    if kind != "command":
        problems.append(f"{where}.type: {kind!r} hooks are not run by treadle (only command)")
        return None
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        problems.append(f"{where}.command: must be a command line")
        return None
    timeout = hook.get("timeout", DEFAULT_HOOK_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        problems.append(f"{where}.timeout: must be a number of seconds above 0")
        return None
    return HookCommand(command, float(timeout))


def hooks_table_value(table: HookTable) -> dict[str, list[dict[str, object]]]:
    """A table as the files write it (what ``treadle config`` and a check give back)."""
    value: dict[str, list[dict[str, object]]] = {}
    for group in table.groups:
        value.setdefault(group.event.value, []).append(
            {
                "matcher": group.matcher,
                "hooks": [
                    {"type": "command", "command": c.command, "timeout": c.timeout}
                    for c in group.commands
                ],
            }
        )
    return value


# Matching ------------------------------------------------------------------------------


def claude_names(tool: str) -> tuple[str, ...]:
    """Claude Code's names of one of treadle's tools (the first is the one a hook is
    told); a tool of its own (an MCP server's ``mcp__s__t``) keeps its name."""
    names = tuple(claude for claude, ours in CLAUDE_TOOL_NAMES.items() if ours == tool)
    return names or (tool,)


def matches(matcher: str, subject: str, *, tool: bool = False) -> bool:
    """Whether a group's ``matcher`` takes ``subject``: empty (or ``*``) takes all; else
    the name itself or a regular expression over the whole of it, as Claude Code reads
    one. A tool's subject is tried under each of its names, Claude Code's and treadle's
    (``Bash`` and ``bash``; ``Edit|Write`` takes ``edit_file``)."""
    if not matcher:
        return True
    names = (*claude_names(subject), subject) if tool else (subject,)
    for name in names:
        if matcher == name:
            return True
        try:
            if re.fullmatch(matcher, name):
                return True
        except re.error:
            return False
    return False


def commands_for(table: HookTable, happened: HookInput) -> list[HookCommand]:
    """The commands to run for what ``happened``, in order, each command line once
    (two groups naming the same command run it once, as Claude Code does)."""
    tool = happened.event in (HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE)
    chosen: dict[str, HookCommand] = {}
    for group in table.groups:
        if group.event is happened.event and matches(group.matcher, happened.subject, tool=tool):
            for command in group.commands:
                chosen.setdefault(command.command, command)
    return list(chosen.values())


# What a hook is told -------------------------------------------------------------------


def claude_tool_input(tool: str, arguments: Mapping[str, object]) -> dict[str, object]:
    """A call's arguments as Claude Code names them (``path`` is ``file_path`` for the
    file tools); treadle's own names are kept beside them."""
    shaped = dict(arguments)
    if tool in PATH_ALIASES and "path" in shaped and "file_path" not in shaped:
        shaped["file_path"] = shaped["path"]
    return shaped


def hook_payload(
    happened: HookInput, *, session_id: str, transcript_path: str, cwd: str
) -> dict[str, object]:
    """The JSON a hook reads on stdin, with Claude Code's field names."""
    payload: dict[str, object] = {
        "session_id": session_id,
        "transcript_path": transcript_path,
        "cwd": cwd,
        "hook_event_name": happened.event.value,
    }
    match happened.event:
        case HookEvent.PRE_TOOL_USE | HookEvent.POST_TOOL_USE:
            payload["tool_name"] = claude_names(happened.tool_name)[0]
            payload["tool_input"] = claude_tool_input(happened.tool_name, happened.tool_input)
            payload["treadle_tool_name"] = happened.tool_name
            if happened.event is HookEvent.POST_TOOL_USE:
                payload["tool_response"] = dict(happened.tool_response or {})
        case HookEvent.USER_PROMPT_SUBMIT:
            payload["prompt"] = happened.prompt
        case HookEvent.STOP | HookEvent.SUBAGENT_STOP:
            payload["stop_hook_active"] = happened.stop_hook_active
        case HookEvent.SESSION_START:
            payload["source"] = happened.source
        case HookEvent.PRE_COMPACT:
            payload["trigger"] = happened.trigger
            payload["custom_instructions"] = ""
        case HookEvent.NOTIFICATION:
            payload["message"] = happened.message
            payload["notification_type"] = happened.notification_type
    if happened.agent:
        payload["agent"] = happened.agent
    return payload


# What its ending means -----------------------------------------------------------------


def shown_command(command: str) -> str:
    """A command as a line about it shows it: one line, at most :data:`SHOWN_COMMAND`."""
    line = " ".join(command.split())
    return line if len(line) <= SHOWN_COMMAND else line[: SHOWN_COMMAND - 1] + "…"


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def decide(event: HookEvent, run: HookRun) -> HookVerdict:
    """What one hook's ending says. Exit 2 refuses, its stderr the reason; exit 0 with
    a JSON object on stdout may refuse (``decision: block``, ``continue: false``,
    ``permissionDecision: deny``), say yes for the person to a call
    (``permissionDecision: allow``), or add context (``additionalContext``; for
    SessionStart and UserPromptSubmit, plain stdout too); any other ending is a
    problem, one line, and refuses nothing."""
    named = f"{event.value} hook {shown_command(run.command)!r}"
    if run.failure:
        return HookVerdict(problems=(f"{named} could not start: {run.failure}",), ran=1)
    if run.timed_out:
        return HookVerdict(
            problems=(f"{named} was stopped at its deadline of {run.timeout:g} s",), ran=1
        )
    if run.exit_code == BLOCK_EXIT:
        reason = run.stderr.strip() or f"{named} refused (exit 2) without saying why"
        return HookVerdict(blocked=True, reason=reason, ran=1)
    if run.exit_code is None:
        return HookVerdict(problems=(f"{named} was killed by a signal",), ran=1)
    if run.exit_code != 0:
        said = _first_line(run.stderr) or _first_line(run.stdout)
        return HookVerdict(
            problems=(f"{named} failed with exit {run.exit_code}" + (f": {said}" if said else ""),),
            ran=1,
        )
    return _read_output(event, run.stdout, named)


def _read_output(event: HookEvent, stdout: str, named: str) -> HookVerdict:
    text = stdout.strip()
    if not text.startswith("{"):
        context = (text,) if text and event in CONTEXT_EVENTS else ()
        return HookVerdict(context=context, ran=1)
    try:
        said = json.loads(text)
    except ValueError:
        return HookVerdict(problems=(f"{named} wrote JSON that cannot be read",), ran=1)
    if not isinstance(said, dict):
        return HookVerdict(problems=(f"{named} wrote JSON that is no object",), ran=1)
    specific = said.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    added = specific.get("additionalContext")
    contexts = (added,) if isinstance(added, str) and added.strip() else ()
    reasons = [said.get("reason"), said.get("stopReason"), specific.get("permissionDecisionReason")]
    reason = next((r for r in reasons if isinstance(r, str) and r.strip()), "")
    blocked = (
        said.get("decision") == "block"
        or said.get("continue") is False
        or specific.get("permissionDecision") == "deny"
    )
    if blocked and not reason:
        reason = f"{named} refused without saying why"
    allowed = event is HookEvent.PRE_TOOL_USE and (
        specific.get("permissionDecision") == "allow" or said.get("decision") == "approve"
    )
    return HookVerdict(
        blocked=blocked,
        reason=reason if blocked else "",
        context=contexts,
        ran=1,
        allowed=allowed and not blocked,
    )


def combine(verdicts: Iterable[HookVerdict]) -> HookVerdict:
    """The verdict of an event's hooks together: one refusal refuses; every reason,
    context and problem is kept, in order."""
    blocked = allowed = False
    reasons: list[str] = []
    context: list[str] = []
    problems: list[str] = []
    ran = 0
    for verdict in verdicts:
        blocked = blocked or verdict.blocked
        allowed = allowed or verdict.allowed
        if verdict.blocked and verdict.reason:
            reasons.append(verdict.reason)
        context += verdict.context
        problems += verdict.problems
        ran += verdict.ran
    joined = "\n".join(reasons)
    return HookVerdict(
        blocked, joined, tuple(context), tuple(problems), ran, allowed and not blocked
    )
