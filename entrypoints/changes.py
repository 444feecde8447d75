"""``treadle undo``, ``treadle redo`` and ``treadle diff``, and ``/undo``, ``/redo`` and
``/diff`` in an interactive session: what the last turn changed, and taking it back.

Each works on the checkpoints of one workspace, kept in the state folder whatever the
session: ``undo`` puts the workspace back as it was before the last turn run in it
(again: the turn before that), ``redo`` takes the last undo back, ``diff`` shows what
changed since the last turn started. They print what they did, as lines.

Example::

    report = undo_last_turn(shadow_for(state, "."))
    print("\\n".join(report.lines))     # Undid the turn “fix the tests” …
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TextIO, TypeVar

from returns.result import Failure, Result, Success

from treadle.adapters.checkpoints import (
    Changes,
    Checkpoint,
    Restored,
    ShadowRepository,
    shadow_for,
)
from treadle.adapters.transcript.sessions import RUNNING, SessionStore
from treadle.domain.values.text import one_line, printable, quoted_path
from treadle.entrypoints.config import USAGE_ERROR
from treadle.entrypoints.paths import state_dir

Command = Callable[[], Awaitable[None]]
T = TypeVar("T")
PATH_WIDTH = 1_000
"""Characters shown of one file name (a model may have made it, any length)."""


@dataclass(frozen=True, slots=True)
class Report:
    """What a command did, as lines to print; ``ok`` False when it could not."""

    lines: tuple[str, ...]
    ok: bool = True
    diff: bool = False
    """The lines are a diff (to colour on a terminal)."""


def undo_last_turn(shadow: ShadowRepository) -> Report:
    return _report(
        shadow.undo(),
        lambda done: Report(
            _restored_lines(
                f"Undid {_turn(done.to)}", done, "treadle redo (or /redo) takes this undo back."
            )
        ),
    )


def redo_last_undo(shadow: ShadowRepository) -> Report:
    head = "Redid: the workspace is as it was before the undo of"
    return _report(
        shadow.redo(),
        lambda done: Report(
            _restored_lines(
                f"{head} {_turn(done.to)}", done, "treadle undo takes this turn back again."
            )
        ),
    )


def show_changes(shadow: ShadowRepository) -> Report:
    def shown(changes: Changes) -> Report:
        since = _turn(changes.since)
        if not changes.text.strip():
            return Report((f"No change since the start of {since}.",))
        # The files' names and contents are the model's: no escape code of theirs
        # reaches the terminal, whatever reads the output.
        patch = (printable(line) for line in changes.text.removesuffix("\n").split("\n"))
        return Report((f"Changes since the start of {since}:", *patch), diff=True)

    return _report(shadow.changes(), shown)


def _report(outcome: Result[T, str], done: Callable[[T], Report]) -> Report:
    """What ``done`` makes of a success; a failure is its reason, as a report."""
    match outcome:
        case Success(value):
            return done(value)
        case Failure(why):
            return Report((str(why),), ok=False)
    raise AssertionError("unreachable")


def _restored_lines(head: str, restored: Restored, after: str) -> tuple[str, ...]:
    if not restored.restored and not restored.removed:
        return (f"{head}: nothing had changed since.", *_warnings(restored))
    lines = [f"{head}:"]
    lines += [f"  restored  {_path(path)}" for path in restored.restored]
    lines += [f"  removed   {_path(path)}" for path in restored.removed]
    return (*lines, *_warnings(restored), after)


def _path(path: str) -> str:
    """A file name, made by the model maybe, on one line and told apart from any other:
    quoted with escapes when it holds what a terminal cannot show (a newline in it would
    forge a line of treadle's; a byte that is not UTF-8 would vanish)."""
    shown = quoted_path(path)
    return shown if len(shown) <= PATH_WIDTH else shown[: PATH_WIDTH - 1] + "…"


def _warnings(restored: Restored) -> list[str]:
    return [f"warning: {one_line(notice, 20 * PATH_WIDTH)}" for notice in restored.notices]


def _turn(checkpoint: Checkpoint) -> str:
    """``the turn “fix the tests” (session 2025…, 12:03)``."""
    manifest = checkpoint.manifest
    task = f" “{one_line(manifest.task, 200)}”" if manifest.task else ""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(manifest.created))
    where = f"session {manifest.session}, {when}" if manifest.session else when
    return f"the turn{task} ({where})"


# The subcommands --------------------------------------------------------------------


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``undo``, ``redo`` and ``diff`` for the subcommands' parser."""
    helps = {
        "undo": "put the workspace back as it was before the last turn",
        "redo": "take the last undo back",
        "diff": "show what changed since the last turn started",
    }
    for name, text in helps.items():
        parser = commands.add_parser(name, help=text)
        parser.add_argument("--workspace", help="the folder (default: here)")


def run_change_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``treadle undo|redo|diff``: 0 when done (a turn that changed nothing is
    undone all the same: the next undo goes a turn further back), 1 when there is
    nothing to undo, redo or compare with, or it failed (the reason on stderr), 2 when
    a turn is running in the folder."""
    workspace = os.path.realpath(args.workspace or os.getcwd())
    if not os.path.isdir(workspace):
        print(f"treadle: {workspace}: no such folder", file=sys.stderr)
        return USAGE_ERROR
    state = str(state_dir())
    busy = busy_with_a_turn(state, workspace, args.command) if args.command != "diff" else ""
    if busy:
        print(f"treadle: {busy}", file=sys.stderr)
        return USAGE_ERROR
    shadow = shadow_for(state, workspace)
    action = {"undo": undo_last_turn, "redo": redo_last_undo, "diff": show_changes}
    report = action[args.command](shadow)
    if not report.ok:
        print(f"treadle: {one_line(report.lines[0], 20 * PATH_WIDTH)}", file=sys.stderr)
        return 1
    print("\n".join(coloured(report, out)), file=out)
    return 0


def busy_with_a_turn(state: str, workspace: str, command: str) -> str:
    """Why ``command`` must wait, when a session is in the middle of a turn in
    ``workspace``: undoing under it would pull the files from under a running turn."""
    store = SessionStore(os.path.join(state, "sessions"))
    for session_id in store.ids():
        row = store.row(session_id)
        if row.meta.workspace == workspace and row.status == RUNNING:
            return (
                f"a turn is running in {workspace} (session {session_id}): "
                f"{command} when it has ended"
            )
    return ""


def session_commands(
    state: str, workspace: str, show: Callable[[Report], None]
) -> dict[str, Command]:
    """``/undo``, ``/redo`` and ``/diff`` for an interactive session, between its turns;
    ``show`` puts a report on the screen."""
    shadow = shadow_for(state, workspace)

    def command(name: str, action: Callable[[ShadowRepository], Report]) -> Command:
        async def run() -> None:
            busy = busy_with_a_turn(state, workspace, name) if name != "/diff" else ""
            show(Report((busy,), ok=False) if busy else await asyncio.to_thread(action, shadow))

        return run

    return {
        "/undo": command("/undo", undo_last_turn),
        "/redo": command("/redo", redo_last_undo),
        "/diff": command("/diff", show_changes),
    }


def coloured(report: Report, out: TextIO) -> Sequence[str]:
    """The report's lines, a diff coloured when ``out`` is a terminal that takes colour."""
    if not report.diff or not out.isatty() or os.environ.get("NO_COLOR"):
        return report.lines
    from treadle.adapters.blessed_terminal.display import Styles, diff_lines
    from treadle.adapters.blessed_terminal.terminal import quiet_blessed_terminal

    styles = Styles.of(quiet_blessed_terminal())
    return [report.lines[0], *diff_lines("\n".join(report.lines[1:]), styles)]
