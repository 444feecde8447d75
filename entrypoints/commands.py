"""``treadle replay``, ``treadle sessions``, ``treadle config``, ``treadle mcp``,
``treadle context`` and ``treadle trust`` (and ``treadle undo``, ``redo`` and
``diff``, in :mod:`treadle.entrypoints.changes`).

``run_subcommand(["replay", "t.jsonl", "--check"])`` returns the exit code: 0 when the
replay made every recorded request, 1 (with ``--check``) at the first divergence, 2
for a transcript that cannot be read or a broken configuration. Without ``--check`` a
replay exits as its last turn did (1 for ``Turn failed``, as the turn itself would).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.system_clock import SystemClock
from treadle.adapters.terminal.plain_terminal import PlainTerminal
from treadle.adapters.transcript.jsonl_transcript import read_transcript
from treadle.adapters.transcript.replay_model import (
    Divergence,
    Recording,
    ReplayModel,
    recorded_tools,
)
from treadle.adapters.transcript.session_fork import ForkRefused, fork_session
from treadle.adapters.transcript.sessions import (
    META,
    MetaDamaged,
    SessionNotFound,
    SessionStore,
    read_meta,
)
from treadle.domain.loop.stop import StopSignal
from treadle.domain.loop.turn import Agent
from treadle.domain.rules import context_window as rules
from treadle.domain.rules.context_window import window_of
from treadle.domain.rules.fork import fork_line
from treadle.domain.rules.resume import rebuild_context, rebuild_history, subagents_started
from treadle.domain.values.conversation import Message
from treadle.domain.values.model import ServerFacts
from treadle.domain.values.outcome import TurnOutcome
from treadle.domain.values.text import one_line
from treadle.entrypoints.config import (
    DEFAULT_MAX_TOKENS,
    USAGE_ERROR,
    AppConfig,
    ConfigError,
    check_value,
    describe_config,
    flag_values,
    load_config,
)
from treadle.entrypoints.paths import new_session_id, sessions_dir
from treadle.entrypoints.providers import ModelNotConfigured
from treadle.entrypoints.trust import trust_folder
from treadle.entrypoints.worktrees import add_parsers as add_worktree_parsers
from treadle.entrypoints.worktrees import run_worktree_command

REPLAY_STOP = "the recording ends here"
_TIMING = re.compile(r"\b\d+(?:\.\d+)? s\b")
# Where a re-run command's full output was saved: a new name in the replay's own folder.
_SAVED_OUTPUT = re.compile(r"\S*\boutput-\d{8}-\d{6}-[0-9a-f]{8}\.log")
# The path a result gives for it, whole or cut short by the window's truncation.
_SAVED_OUTPUT_AT = re.compile(r"(?<=The full output is in )\S+")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="treadle")
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="re-run a recorded session")
    replay.add_argument("transcript", help="a transcript.jsonl, or a session id")
    replay.add_argument("--check", action="store_true", help="exit 1 at the first divergence")
    replay.add_argument(
        "--recorded-tools", action="store_true", help="answer tool calls from the recording"
    )
    replay.add_argument("--workspace", help="where real tools run (default: here)")
    commands.add_parser("sessions", help="list the sessions, newest first")
    fork = commands.add_parser("fork", help="a new session from the first turns of another")
    fork.add_argument("session", help="the session to fork: an id, a unique start of one, last")
    fork.add_argument(
        "--at", type=int, metavar="N", help="keep its first N turns (default: all of them)"
    )
    config = commands.add_parser("config", help="the effective configuration and its origins")
    config.add_argument("--model")
    config.add_argument("--base-url")
    config.add_argument("--approval")
    config.add_argument("--workspace")
    # Issue 12: MCP servers and project instructions.
    mcp = commands.add_parser("mcp", help="the MCP servers: whether each starts, and its tools")
    mcp.add_argument("--workspace")
    mcp.add_argument(
        "action", nargs="?", choices=("login", "logout"), help="sign in to a server, or out"
    )
    mcp.add_argument("name", nargs="?", help="the server (its [mcp_servers.NAME])")
    context = commands.add_parser("context", help="the project instructions the model gets")
    context.add_argument("--workspace")
    trust = commands.add_parser(
        "trust",
        help="let this folder's .treadle.toml, as it is now, set its server, key and approvals",
    )
    trust.add_argument("folder", nargs="?", default=".", help="the folder (default: here)")
    config.add_argument("--sandbox")
    config.add_argument("--network", dest="sandbox_network")
    from treadle.entrypoints.changes import add_parsers

    add_parsers(commands)
    add_worktree_parsers(commands)
    return parser


def run_subcommand(argv: Sequence[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = build_parser().parse_args(list(argv))
    try:
        if args.command == "sessions":
            return list_sessions(out)
        if args.command == "fork":
            return fork(args.session, args.at, out)
        if args.command == "config":
            return show_config(args, out)
        if args.command == "mcp":
            from treadle.entrypoints.project_context import mcp_sign_in, show_mcp_servers

            if args.action:
                return asyncio.run(mcp_sign_in(args, out))
            return asyncio.run(show_mcp_servers(args, out))
        if args.command == "context":
            from treadle.entrypoints.project_context import show_context

            return show_context(args, out)
        if args.command == "trust":
            return trust(args.folder, out)
        if args.command == "worktree":
            return run_worktree_command(args, out)
        if args.command in ("undo", "redo", "diff"):
            from treadle.entrypoints.changes import run_change_command

            return run_change_command(args, out)
        return asyncio.run(replay(args, out))
    except ConfigError as error:
        print(f"treadle: {error}", file=sys.stderr)
        return USAGE_ERROR


# sessions --------------------------------------------------------------------------


def list_sessions(out: TextIO) -> int:
    store = SessionStore(sessions_dir())
    rows = store.rows()
    if not rows:
        print(f"No sessions yet in {store.root}", file=out)
        return 0
    home = str(Path.home())
    # Which session each was forked from, in a column of its own once there is a fork.
    forks = any(row.meta.forked_from for row in rows)
    table = [("ID", "STARTED", "OUTCOME", "TOKENS", "FOLDER", *(("FORKED FROM",) * forks), "TASK")]
    for row in rows:
        meta = row.meta
        folder = meta.workspace
        if folder == home or folder.startswith(home + os.sep):
            folder = "~" + folder[len(home) :]
        started = meta.created[:16].replace("T", " ")
        folder, task = one_line(folder, 200), one_line(meta.task, 60)
        parent = (
            (f"{one_line(meta.forked_from, 100)} @{meta.forked_at}" if meta.forked_from else "-",)
            if forks
            else ()
        )
        table.append((meta.id, started, row.status, f"{row.tokens:,}", folder, *parent, task))
    columns = len(table[0]) - 1
    widths = [max(len(line[i]) for line in table) for i in range(columns)]
    for line in table:
        cells = [
            cell.rjust(w) if i == 3 else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=False))
        ]
        print("  ".join([*cells, line[columns]]).rstrip(), file=out)
    return 0


# fork ------------------------------------------------------------------------------


def fork(reference: str, at: int | None, out: TextIO) -> int:
    """``treadle fork ID [--at N]``: a new session from ID's first N turns, ID untouched."""
    store = SessionStore(sessions_dir())
    try:
        parent = store.find(reference)
        forked = fork_session(store, parent, new_session_id(), at)
    except (SessionNotFound, ForkRefused, MetaDamaged) as error:
        print(f"treadle: {error}", file=sys.stderr)
        return USAGE_ERROR
    except OSError as error:
        print(f"treadle: cannot fork into {store.root}: {error.strerror or error}", file=sys.stderr)
        return USAGE_ERROR
    print(fork_line(forked.id, parent, forked.forked_at), file=out)
    return 0


# config ----------------------------------------------------------------------------


def show_config(args: argparse.Namespace, out: TextIO) -> int:
    app = load_config(flags=flag_values(args), environ=os.environ)
    for line in describe_config(app, os.environ, in_force(app)):
        print(line, file=out)
    return 0


# trust -----------------------------------------------------------------------------


def trust(folder: str, out: TextIO) -> int:
    """Trust ``folder`` with its project file as it is now: the file may set what could
    send the key elsewhere, until it changes."""
    if not os.path.isdir(folder):
        raise ConfigError(f"{folder}: no such folder")
    try:
        record = trust_folder(folder, os.environ)
    except OSError as error:
        where = error.filename or "the config folder"
        raise ConfigError(f"cannot record the trust in {where}: {error.strerror}") from None
    print(
        f"Trusted {os.path.realpath(folder)} with its .treadle.toml and .claude/settings.json "
        f"as they are now (recorded in {record}; a change to either asks again)",
        file=out,
    )
    return 0


def in_force(app: AppConfig) -> list[str]:
    """The window and the budgets in force for the configured model, and where the
    window comes from: the server is asked, as a session's first turn asks it (a hosted
    API is not: its window is the table's)."""
    from treadle.entrypoints.wiring import build_model, build_server, context_settings

    try:
        server = build_server(build_model(app, SystemClock()))
    except ModelNotConfigured:
        return []
    facts = asyncio.run(server.facts()) if server is not None else ServerFacts()
    settings = context_settings(app)
    window = rules.merge_window(None, facts.window, settings.window)
    where = f" at {app.base_url}" if app.base_url else ""
    lines = [f"In force for {app.model}{where}:"]
    tokens = window.tokens if window is not None else None
    if window is None:
        lines.append("  context window   not known: learned from the server's first refusal")
    else:
        lines.append(f"  context window   {window.tokens:,} tokens ({window.origin})")
    configured = app.max_tokens if app.max_tokens is not None else DEFAULT_MAX_TOKENS
    budget = rules.initial_budget(configured, tokens, follow_window=settings.follow_window)
    how = " (a quarter of the window)" if budget < configured else ""
    lines.append(f"  output budget    {budget:,} tokens{how}")
    if tokens is not None:
        at = int(tokens * settings.compact_at)
        lines.append(f"  compacts past    {at:,} tokens ({settings.compact_at:g} of the window)")
    result = rules.result_bytes(tokens, app.output_limit)
    lines.append(f"  one tool result  at most {result:,} bytes")
    lines += [f"  warning: {text}" for _, text in facts.warnings]
    return lines


# replay ----------------------------------------------------------------------------


@dataclass
class _TurnStop:
    """The stop of the turn being replayed: the recording cuts it where it was cut."""

    signal: StopSignal | None = None

    def cut(self) -> None:
        if self.signal is not None:
            self.signal.set(REPLAY_STOP)


def recorded_config(transcript: Path) -> AppConfig:
    """The defaults, with what the session recorded of its configuration (not yours)."""
    app = AppConfig()
    if not (transcript.parent / META).is_file():
        return app
    try:
        settings = read_meta(transcript.parent).settings
    except MetaDamaged as error:
        raise ConfigError(str(error)) from None
    values = {}
    for key, value in settings.items():
        if value is None:
            continue  # not set in the session: the default, as it was then
        try:
            values[key] = check_value(key, value)
        except (KeyError, ValueError) as problem:
            raise ConfigError(f"{transcript.parent / META}: {key}: {problem}") from None
    return app.with_values(values, "recorded session")


def find_transcript(reference: str) -> Path:
    path = Path(reference)
    if path.is_file():
        return path

    store = SessionStore(sessions_dir())
    try:
        return store.transcript_path(store.find(reference))
    except SessionNotFound:
        raise ConfigError(f"{reference}: no such transcript or session") from None


async def replay(args: argparse.Namespace, out: TextIO) -> int:
    """Re-run a recorded session: the container, with the recording as the model."""
    from dependency_injector import providers

    from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal
    from treadle.entrypoints.container import Container, build_tools, end_screen

    path = find_transcript(args.transcript)
    try:
        recording = Recording(read_transcript(path))
    except (OSError, ValueError) as error:
        print(f"treadle: {path}: {error}", file=sys.stderr)
        return USAGE_ERROR
    app = recorded_config(path)
    app = replace(app, approval="auto", workspace=args.workspace or os.getcwd())
    redactor = Redactor.from_environ(os.environ)

    def normalize(message: Message) -> Message:
        message = redactor.redact_value(message)
        if message.role == "tool" and not args.recorded_tools:  # real commands take their time
            text = _SAVED_OUTPUT.sub("OUTPUT.log", _TIMING.sub("N s", message.text))
            text = _SAVED_OUTPUT_AT.sub("OUTPUT.log", text)
            message = replace(message, text=text)
        return message

    turn_stop = _TurnStop()
    model = ReplayModel(recording, normalize=normalize, on_cut=turn_stop.cut)
    container = Container()
    tools = recorded_tools(
        build_tools(background=container.background()),
        recording,
        answer_from_recording=args.recorded_tools,
        on_cut=turn_stop.cut,
    )
    container.app.override(providers.Object(app))
    container.model.override(providers.Object(model))
    container.tools.override(providers.Object(tools))
    container.redactor.override(providers.Object(redactor))
    terminal = RecordingTerminal() if args.check else PlainTerminal(out, outcome_last=True)
    container.terminal.override(providers.Object(terminal))
    # A replay runs none of the session's hooks, nor rings: they are commands, and
    # what they said is in the recorded conversation (issue 23).
    container.hooks.override(providers.Object(None))
    container.notifier.override(providers.Object(None))
    if args.recorded_tools:
        clock = FakeClock()
        container.clock.override(providers.Object(clock))
        container.runner.override(providers.Object(FakeRunner(clock)))
    with folder_as_long_as(str(path.resolve().parent)) as session_dir:
        # Tools that save output need a folder; a replay keeps no transcript or log of its own.
        container.session_dir.override(providers.Object(session_dir))
        container.transcript.override(providers.Object(None))
        container.log_path.override(providers.Object(""))
        try:
            outcomes: list[TurnOutcome] = []
            divergence = await replay_turns(
                container.agent(), model, turn_stop, normalize, outcomes.append
            )
        finally:
            try:
                try:
                    await container.background().stop_all()  # what its commands left running
                finally:
                    container.shutdown_resources()
            finally:  # each turn's outcome is its last line, the last turn's too
                end_screen(container)
    # Without --check the replay is a run of the session: it exits as its last turn ended.
    code = outcomes[-1].exit_code if outcomes and not args.check else 0
    if divergence is not None:
        print(f"replay diverged at {divergence.describe()}", file=out if args.check else sys.stderr)
        return 1 if args.check else code
    print(f"replay: {model.requests} requests, no divergence from {path}", file=out)
    return code


@contextmanager
def folder_as_long_as(session: str) -> Iterator[str]:
    """A new temporary folder whose path is as long as the recorded ``session``'s, where
    one can be made (else a shorter one). A re-run command's saved output is named in
    its result by a path in this folder: the same length, so the result takes the room
    it took in the recorded window, and the replay's accounting comes to the same
    figures (its budgets, when to prune, when to compact)."""
    with tempfile.TemporaryDirectory(prefix="treadle-replay-") as base:
        pad = len(session) - len(base) - 1
        if not 0 < pad < 256:
            yield base
            return
        folder = os.path.join(base, "r" * pad)
        os.mkdir(folder)
        yield folder


async def replay_turns(
    agent: Agent,
    model: ReplayModel,
    turn_stop: _TurnStop,
    normalize: Callable[[Message], Message],
    ended: Callable[[TurnOutcome], None] = lambda outcome: None,
) -> Divergence | None:
    """Run the recorded main turns on ``agent``, one after the other, to the first divergence.

    Between turns the conversation must be the recorded one; after a turn cut short (Esc,
    a kill) it goes on from the conversation as the session recorded it. Each turn
    starts from what the session knew then, as a resumed one does: the conversation
    (compacted or not), its accounting and the window.
    """
    recording = model.recording
    for index, turn in enumerate(recording.turns):
        if index:
            before = recording.events[: turn.start]
            expected = rebuild_history(before)
            if not recording.turns[index - 1].stopped:
                difference = first_difference(agent.history.messages, expected.messages, normalize)
                if difference:
                    return Divergence(model.requests, "", f"after turn {index}: {difference}")
            agent.resume_from(
                expected, rebuild_context(before, expected), subagents_started(before)
            )
            agent.window.window = window_of(before)
        model.start_turn(index)
        turn_stop.signal = StopSignal()
        ended(await agent.run_turn(turn.task, turn_stop.signal))
        if model.divergence is not None:
            return model.divergence
    return model.leftover()


def first_difference(
    now: Sequence[Message], then: Sequence[Message], normalize: Callable[[Message], Message]
) -> str:
    """Where two conversations part, or "" when they do not."""
    if len(now) != len(then):
        return f"the conversation has {len(now)} messages, the recording {len(then)}"
    for index, (a, b) in enumerate(zip(now, then, strict=True)):
        if normalize(a) != normalize(b):
            return f"message {index + 1} ({b.role}) differs"
    return ""
