"""A session's hooks and notifications (issue 23), as the container builds them.

Hooks come from every layer of treadle's configuration (``[hooks]``: the user's file,
then the project's in a trusted folder) and from Claude Code's settings in the
workspace (``.claude/settings.json``, ``.claude/settings.local.json``), which count
only where the folder is trusted for them as they are now. What was left out, and why,
is one line at the start.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.transcript.sessions import TRANSCRIPT
from treadle.domain.values.events import Notice
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.paths import read_settings_file
from treadle.entrypoints.trust import (
    CLAUDE_SETTINGS,
    read_claude_settings,
    trust_state,
)
from treadle.ports.hooks import Hooks
from treadle.ports.notify import Notifier
from treadle.ports.process import ProcessRunner

if TYPE_CHECKING:
    from treadle.domain.values.hook_table import HookTable

PROBLEMS_NAMED = 3
UNTRUSTED_BECAUSE = {
    "untrusted": "this folder is not trusted",
    "changed": "they changed since you trusted this folder (a command may have written them)",
    "unrecorded": "this folder was trusted before treadle recorded what they say",
}


@dataclass(frozen=True, slots=True)
class SessionHooks:
    """The hooks a session runs (None: none is set anywhere), and what it should say of
    those it does not."""

    table: HookTable | None = None
    notices: tuple[Notice, ...] = ()


def read_session_hooks(app: AppConfig) -> SessionHooks:
    """The configuration's hooks, then the workspace's Claude Code settings' (trusted).
    With neither, nothing of the hooks' table and rules is loaded."""
    workspace = os.path.realpath(app.workspace)
    content = read_claude_settings(workspace)
    if content is None and not app.hooks:
        return SessionHooks()
    from treadle.domain.values.hook_table import HookTable

    table, problems = configured_hooks(app)
    notices: list[Notice] = []
    if content is None:
        return SessionHooks(table)
    found = HookTable()
    all_problems = list(problems)
    for name in CLAUDE_SETTINGS:
        path = os.path.join(workspace, name)
        hooks, said = _settings_hooks(path)
        found += hooks
        all_problems += [f"{path}: {line}" for line in said]
    if all_problems:
        named = "; ".join(all_problems[:PROBLEMS_NAMED])
        more = len(all_problems) - PROBLEMS_NAMED
        notices.append(
            Notice("hooks_unreadable", named + (f"; and {more} more" if more > 0 else ""))
        )
    if found.groups:
        state = trust_state(workspace, content, os.environ, part="claude")
        if state == "trusted":
            table += found
        else:
            events = ", ".join(sorted({g.event.value for g in found.groups}))
            notices.append(
                Notice(
                    "hooks_untrusted",
                    f"hooks of {', '.join(found.sources())} ({events}): not run, as "
                    f"{UNTRUSTED_BECAUSE[state]}; if they are yours: treadle trust {workspace}",
                )
            )
    return SessionHooks(table, tuple(notices))


def configured_hooks(app: AppConfig) -> tuple[HookTable, tuple[str, ...]]:
    """The hooks of treadle's own files, each group with the file it came from."""
    from treadle.domain.rules.hooks import read_hooks
    from treadle.domain.values.hook_table import HookTable

    table = HookTable()
    problems: list[str] = []
    for event, groups in app.hooks.items():
        for group in groups:
            source = str(group.get("source", app.origin("hooks")))
            found, said = read_hooks({event: [group]}, source)
            table += found
            problems += said
    return table, tuple(problems)


def _settings_hooks(path: str) -> tuple[HookTable, tuple[str, ...]]:
    """The hooks of one Claude Code settings file (its other settings are Claude
    Code's own, and not read)."""
    from treadle.domain.rules.hooks import read_hooks
    from treadle.domain.values.hook_table import HookTable

    try:
        data = json.loads(read_settings_file(path))
    except FileNotFoundError:
        return HookTable(), ()
    except OSError as error:
        return HookTable(), (f"cannot be read: {error.strerror or error}",)
    except ValueError as error:
        return HookTable(), (f"cannot be read: {error}",)
    if not isinstance(data, dict) or "hooks" not in data:
        return HookTable(), ()
    return read_hooks(data["hooks"], path)


def build_hooks(
    app: AppConfig, runner: ProcessRunner, session_dir: str, found: SessionHooks
) -> Hooks | None:
    """The hooks port over the session's runner; None when no hook is set (nothing of
    the hooks' adapter is imported then)."""
    if found.table is None or not found.table.groups:
        return None
    from treadle.adapters.workflows.hooks import CommandHooks

    return CommandHooks(
        found.table,
        runner,
        workspace=os.path.realpath(app.workspace),
        session_id=os.path.basename(session_dir),
        transcript_path=os.path.join(session_dir, TRANSCRIPT) if session_dir else "",
    )


def build_notifier(
    app: AppConfig,
    mode: str,
    runner: ProcessRunner,
    session_dir: str,
    redactor: Redactor | None = None,
) -> Notifier | None:
    """A bell (or OSC 9) on an interactive terminal, the ``notify`` command anywhere it
    is set, or nothing (``notify = false``, or no one at a terminal to hear it)."""
    if app.notify is False:
        return None
    from treadle.adapters.terminal.notify import NotifyCommand, TerminalBell

    redact = redactor.redact if redactor is not None else str
    if isinstance(app.notify, tuple):
        return NotifyCommand(
            app.notify,
            runner,
            cwd=os.path.realpath(app.workspace),
            session_id=os.path.basename(session_dir),
            redact=redact,
        )
    if mode != "tty":
        return None
    out = sys.stdout.fileno()
    return TerminalBell(lambda data: os.write(out, data), os.environ, redact)


def hook_lines(found: SessionHooks) -> list[str]:
    """``treadle context``'s list of the hooks: each command with its event, matcher,
    deadline and file; then what was left out, and why."""
    groups = found.table.groups if found.table is not None else ()
    lines = [f"hooks: {sum(len(g.commands) for g in groups)}"]
    for group in groups:
        matcher = f" {group.matcher}" if group.matcher else ""
        for command in group.commands:
            lines.append(
                f"  {group.event.value}{matcher}: {command.command}  "
                f"({command.timeout:g} s; {group.source})"
            )
    lines += [f"  {notice.text}" for notice in found.notices]
    return lines
