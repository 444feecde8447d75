"""Treadle's turn events as ACP session updates: what an editor is told while a turn runs.

Pure: :class:`Updates` keeps what it must remember between events (which sub-agent
runs under which ``agent`` call, which calls the client already knows) and turns each
event into the updates to send, in order. The file contents an edit's diff needs
are read by the caller and handed in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acp.helpers import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import ToolCallLocation, ToolCallStatus, ToolKind

from treadle.domain.values.conversation import Message, ToolCall
from treadle.domain.values.events import (
    AnswerDelta,
    ContinuationRequested,
    MessageAdded,
    Notice,
    PlanUpdated,
    ReasoningDelta,
    RetryScheduled,
    SubAgentFinished,
    SubAgentProgress,
    SubAgentStarted,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEvent,
)

KINDS: Mapping[str, ToolKind] = {
    "bash": "execute",
    "read_file": "read",
    "write_file": "edit",
    "edit_file": "edit",
    "search": "search",
    "find_files": "search",
    "update_plan": "think",
    "ask": "other",
    "agent": "other",
}
"""ACP's kind for each of treadle's tools (an MCP tool is ``other``)."""

EDITS = frozenset({"write_file", "edit_file"})
"""The tools whose result an editor shows as a diff of the file they name."""

OUTPUT_LIMIT = 16_000
"""The most characters of a command's output sent in one update (its tail is kept)."""


def tool_kind(name: str) -> ToolKind:
    return KINDS.get(name, "other")


def call_arguments(call: ToolCall) -> dict[str, Any]:
    """The call's arguments as an object; {} when the model wrote none that parse."""
    try:
        value = json.loads(call.arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def call_path(call: ToolCall) -> str:
    """The file a call names, if it names one (``path``), else ""."""
    path = call_arguments(call).get("path")
    return path if isinstance(path, str) else ""


def title(call: ToolCall, summary: str, agent: str = "") -> str:
    """What the editor shows for a call: ``bash: ls -la``; a sub-agent's prefixed."""
    line = f"{call.name}: {summary}" if summary else call.name
    return f"{agent}: {line}" if agent else line


def bounded(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """The end of ``text`` when it is long: a command's last lines say how it ended."""
    return text if len(text) <= limit else "…" + text[-limit:]


@dataclass(frozen=True, slots=True)
class FileChange:
    """An edit's file before and after (None when it did not exist, or is too big)."""

    path: str
    old: str | None
    new: str | None


@dataclass
class Updates:
    """Events in, ACP updates out, one event at a time."""

    workspace: str = ""
    """Where relative paths are: ACP's locations are absolute."""
    known_calls: set[str] = field(default_factory=set)
    subagent_calls: dict[str, str] = field(default_factory=dict)
    """The ``agent`` call each sub-agent runs under, by the sub-agent's name."""
    _agent_calls: list[str] = field(default_factory=list)
    _names: dict[str, str] = field(default_factory=dict)
    """The tool of each call that ran, by id, until its result is shown."""
    _results: dict[str, str] = field(default_factory=dict)
    """Results the model got before their call was said to have finished."""

    def announced(self, call: ToolCall, summary: str, agent: str = "") -> Any:
        """The call as the client first learns of it (an approval names it first)."""
        self.known_calls.add(call.id)
        path = call_path(call)
        if path and self.workspace:
            path = os.path.normpath(os.path.join(self.workspace, path))
        return start_tool_call(
            call.id,
            title(call, summary, agent),
            kind=tool_kind(call.name),
            status="pending",
            locations=[ToolCallLocation(path=path)] if path else None,
            raw_input=call_arguments(call),
        )

    def of(self, event: TurnEvent, change: FileChange | None = None) -> list[Any]:
        """The updates ``event`` makes; ``change`` is the file a finished edit changed."""
        match event:
            case AnswerDelta(text=text, agent=""):
                return [update_agent_message_text(text)] if text else []
            case ReasoningDelta(text=text, agent=""):
                return [update_agent_thought_text(text)] if text else []
            case ToolStarted(call=call, summary=summary, agent=agent):
                self._names[call.id] = call.name
                if call.name == "agent":
                    self._agent_calls.append(call.id)
                if call.id in self.known_calls:
                    return [update_tool_call(call.id, status="in_progress")]
                start = self.announced(call, summary, agent)
                start.status = "in_progress"
                return [start]
            case ToolOutput(call_id=call_id, lines=lines):
                output = tool_content(text_block(bounded("\n".join(lines))))
                return [update_tool_call(call_id, content=[output])]
            case ToolFinished():
                return [self._finished(event, change)]
            case PlanUpdated(steps=steps, agent=""):
                entries = [plan_entry(step.step, status=step.status) for step in steps]
                return [update_plan(entries)]
            case SubAgentStarted(name=name, task=task):
                call_id = self._agent_calls.pop() if self._agent_calls else ""
                if not call_id:
                    return []
                self.subagent_calls[name] = call_id
                return [_call_text(call_id, f"{name} started: {task}")]
            case SubAgentProgress(name=name, doing=doing, requests=requests, elapsed=elapsed):
                call_id = self.subagent_calls.get(name, "")
                line = f"{name}: {doing} · {requests} requests · {elapsed:.0f} s"
                return [_call_text(call_id, line)] if call_id else []
            case SubAgentFinished(name=name):
                call_id = self.subagent_calls.pop(name, "")
                return [_call_text(call_id, f"{name}: {event.said}")] if call_id else []
            case MessageAdded(message=message) if message.role == "tool":
                return self._result(message)
            case Notice(text=text):
                return [_said(text)]
            case RetryScheduled(attempt=attempt, attempts=attempts, pause=pause, error=error):
                return [_said(f"{error}; retry {attempt} of {attempts} in {pause:.1f} s")]
            case ContinuationRequested(continuation=number, max_tokens=budget):
                return [_said(f"the answer was cut; continuing it ({number}, {budget} tokens)")]
        return []

    def _result(self, message: Message) -> list[Any]:
        """What a tool that shows no preview of its own gave the model (a file's lines,
        matches, an MCP tool's answer): the editor shows it on the call."""
        call_id = message.tool_call_id or ""
        name = self._names.get(call_id, "")
        if not name or name == "bash" or name in EDITS or not message.text:
            return []
        if call_id in self.known_calls:  # still running: shown when it finishes
            self._results[call_id] = bounded(message.text)
            return []
        self._names.pop(call_id, None)
        return [_call_text(call_id, bounded(message.text))]

    def _finished(self, event: ToolFinished, change: FileChange | None) -> Any:
        call = event.call
        status: ToolCallStatus = "failed" if event.is_error else "completed"
        content: list[Any] = []
        if change is not None and change.new != change.old:
            content.append(tool_diff_content(change.path, change.new or "", change.old))
        elif event.diff:
            content.append(tool_content(text_block(bounded(event.diff))))
        if event.preview:
            content.append(tool_content(text_block(bounded(event.preview))))
        result = self._results.pop(call.id, "")
        if result:
            self._names.pop(call.id, None)
            content.append(tool_content(text_block(result)))
        if not content:
            content.append(tool_content(text_block(event.status)))
        known = call.id in self.known_calls
        self.known_calls.discard(call.id)
        if not known:  # a call the client never saw start (a refusal): said in one piece
            start = self.announced(call, "", event.agent)
            start.status = status
            start.content = content
            start.raw_output = {"status": event.status}
            self.known_calls.discard(call.id)
            return start
        return update_tool_call(call.id, status=status, content=content, raw_output=event.status)


def _call_text(call_id: str, text: str) -> Any:
    return update_tool_call(call_id, content=[tool_content(text_block(text))])


def _said(text: str) -> Any:
    """A line treadle says to the person (not the model's words), on its own line."""
    return update_agent_message_text(f"\n\n_treadle: {text}_\n\n")


def history_updates(messages: list[Message] | tuple[Message, ...]) -> list[Any]:
    """A recorded conversation as the updates that would have shown it (session/load):
    the person's messages, the model's answers, each call with how it ended."""
    updates: list[Any] = []
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    for message in messages:
        if message.role == "user" and message.text:
            updates.append(update_user_message_text(message.text))
        elif message.role == "assistant":
            if message.text:
                updates.append(update_agent_message_text(message.text))
            for call in message.tool_calls:
                result = results.get(call.id)
                start = start_tool_call(
                    call.id,
                    title(call, _described(call)),
                    kind=tool_kind(call.name),
                    status="failed" if result is None or result.is_error else "completed",
                    content=[tool_content(text_block(bounded(result.text)))] if result else None,
                    raw_input=call_arguments(call),
                )
                updates.append(start)
    return updates


def _described(call: ToolCall) -> str:
    """A recorded call's one-line summary: its command, path or pattern."""
    arguments = call_arguments(call)
    for key in ("command", "path", "pattern", "task", "question"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value.splitlines()[0][:200] if value else ""
    return ""
