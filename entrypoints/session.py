"""Running a session from the command line: configuration, wiring, signals, exit code."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.transcript.sessions import (
    MetaDamaged,
    SessionBusy,
    SessionNotFound,
    SessionStore,
    is_locked,
)
from treadle.domain.loop.stop import StoppedFirst, StopSignal
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import Notice, TurnEnded
from treadle.domain.values.outcome import NoModel, OutcomeKind, Stopped, end_turn
from treadle.domain.values.text import well_formed
from treadle.entrypoints.config import (
    USAGE_ERROR,
    AppConfig,
    ConfigError,
    flag_values,
    load_config,
    settings_environment,
)
from treadle.entrypoints.interrupts import SignalPolicy
from treadle.entrypoints.paths import new_session_id, sessions_dir, state_dir
from treadle.entrypoints.providers import key_needed
from treadle.entrypoints.trust import held_back_warning

if TYPE_CHECKING:
    from treadle.domain.loop.turn import Agent

__all__ = ["flag_values", "new_session_id", "state_dir"]  # batch reads them here


SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\Z")
"""What ``--session-id`` accepts: a folder name that cannot climb out of the state folder."""


def chosen_session_id(args: argparse.Namespace) -> str:
    """A new session's id: ``--session-id`` (a batch names its turns' sessions before
    they start), else a fresh one."""
    chosen: str | None = getattr(args, "session_id", None)
    if not chosen:
        return new_session_id()
    if not SESSION_ID.match(chosen):
        raise ConfigError(
            f"flag --session-id: {chosen!r} is not a session id (letters, digits, . _ -)"
        )
    if (sessions_dir() / chosen).exists():
        raise ConfigError(
            f"flag --session-id: session {chosen} exists already (treadle --resume {chosen})"
        )
    return chosen


def open_session(args: argparse.Namespace) -> tuple[AppConfig, str, bool]:
    """The configuration and the session to run in: a new one, or the one --resume names.

    A resumed session keeps its model, server and folder unless a flag says otherwise;
    its folder already holds the transcript, so the container continues it.
    """
    flags = flag_values(args)
    if getattr(args, "resume", None) and getattr(args, "session_id", None):
        raise ConfigError("flags --resume and --session-id: give one (continue, or start anew)")
    if not getattr(args, "resume", None):
        return load_config(flags=flags, environ=os.environ), chosen_session_id(args), False
    store = SessionStore(sessions_dir())
    session_id = store.find(args.resume)
    meta = store.meta(session_id)
    # Said early; the lock itself is taken when the session is opened, and only one wins.
    if is_locked(store.folder(session_id)):
        raise SessionBusy(f"session {session_id} is open in another treadle")
    recorded = {"model": meta.model, "base_url": meta.base_url, "workspace": meta.workspace}
    app = load_config(flags=flags, environ=os.environ, session=(session_id, recorded))
    return app, session_id, True


def hide_environment_from_commands() -> None:
    """Keep commands from reading the key in ``/proc/<treadle>/environ``.

    A process that is not dumpable cannot be read through /proc by another process
    of the same user (root still can). Linux only; elsewhere nothing changes.
    """
    if not sys.platform.startswith("linux"):
        return

    pr_set_dumpable = 4
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)


def missing_key(app: AppConfig) -> str:
    """The line for a hosted model whose key is not set, said before any session or turn
    is made; "" when there is a key, or the server needs none."""
    variable = key_needed(app.model, app.base_url, app.key_env, os.environ)
    if not variable:
        return ""
    return (
        f"no API key for {app.model}: set {variable} (or --base-url, for a server that needs none)"
    )


def ready_to_start(app: AppConfig) -> bool:
    """Say what the project file was not let set; whether the model can be asked (a
    hosted model needs its key before any session or turn is made)."""
    if app.held_back:
        print(f"treadle: {held_back_warning(app)}", file=sys.stderr)
    missing = missing_key(app)
    if missing:
        print(f"treadle: {missing}", file=sys.stderr)
    return not missing


def opened_or_said(args: argparse.Namespace) -> tuple[AppConfig, str, bool] | None:
    """:func:`open_session`, or None once the line that says why it cannot is printed."""
    try:
        app, session_id, resuming = open_session(args)
    except (ConfigError, SessionNotFound, SessionBusy, MetaDamaged) as error:
        redact = Redactor.from_environ(settings_environment(os.environ)).redact
        print(f"treadle: {redact(str(error))}", file=sys.stderr)
        return None
    if app.output_schema:  # a schema that cannot be one is said before anything starts
        from treadle.adapters.output_schema import SchemaUnusable
        from treadle.entrypoints.wiring import output_contract_of

        try:
            output_contract_of(app)
        except SchemaUnusable as error:
            print(
                f"treadle: {app.origin('output_schema')}: output_schema: {error}", file=sys.stderr
            )
            return None
    return (app, session_id, resuming) if ready_to_start(app) else None


def run_session(args: argparse.Namespace) -> int:
    hide_environment_from_commands()
    if getattr(args, "worktree", None) is None:
        return _run_session(args)
    from treadle.entrypoints.worktrees import enter_worktree

    try:
        entered = enter_worktree(args)
    except ConfigError as error:
        print(f"treadle: {error}", file=sys.stderr)
        return USAGE_ERROR
    try:
        return _run_session(args, entered.common_dir)
    finally:  # where the work is, and how to take it or drop it
        for line in entered.leaving():
            print(line, file=sys.stderr)


def _run_session(args: argparse.Namespace, git_dir: str = "") -> int:
    """The session ``args`` asks for; ``git_dir``, when it works in a worktree, is the
    repository's folder its git writes to, which its commands may write too."""
    opened = opened_or_said(args)
    if opened is None:
        return USAGE_ERROR
    app, session_id, resuming = opened
    if git_dir:
        app = replace(app, sandbox_writable=(*app.sandbox_writable, git_dir))
    session_path = sessions_dir() / session_id
    # A command line's bytes that are not UTF-8 arrive as lone surrogates; made
    # well-formed here, they cannot break the transcript, the screen or a tool.
    task = well_formed(args.task) if args.task is not None else None
    tty = _is_terminal(sys.stdout) and not (args.print or args.json)
    keyboard = _is_terminal(sys.stdin)
    verbose = bool(getattr(args, "verbose", False))
    command = getattr(args, "command", None)
    last = getattr(args, "output_last_message", None) or ""
    if command:  # its arguments, if any, are the task's place (issue 23)
        mode = "json" if args.json else "tty" if tty else "plain"
        run = _one_turn(
            app, task or "", mode, str(session_path), session_id, verbose, command, last
        )
        return asyncio.run(run)
    if task is None and resuming and not (tty and keyboard):
        from treadle.domain.rules.resume import RESUME_MESSAGE

        task = RESUME_MESSAGE  # headless: go on; in a terminal, the prompt asks what next
    if task is None:
        if tty and keyboard:
            from treadle.entrypoints.interactive import run_interactive_session

            return run_interactive_session(app, str(session_path), session_id, verbose=verbose)
        if keyboard and _is_terminal(sys.stdout):
            print(
                "treadle: --print and --json need a task (an argument, or on stdin)",
                file=sys.stderr,
            )
            return USAGE_ERROR
        task = _read_stdin()
        if not task:
            print("treadle: no task given", file=sys.stderr)
            return USAGE_ERROR
    mode = "json" if args.json else "tty" if tty else "plain"
    return asyncio.run(
        _one_turn(app, task, mode, str(session_path), session_id, verbose, last_message=last)
    )


def final_answer(agent: Agent) -> str:
    """What ``--output-last-message`` writes: the answer's JSON value under an output
    schema, else its text."""
    if agent.settings.output is not None:
        return json.dumps(agent.value, ensure_ascii=False) + "\n"
    return agent.history.last_assistant_text()


def write_last_message(path: Path, text: str) -> None:
    """The final answer in ``path``, whole or not at all (a reader never sees half)."""
    partial = path.with_name(f".{path.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as error:
        print(
            f"treadle: flag --output-last-message: {path}: cannot be written: "
            f"{error.strerror or error}",
            file=sys.stderr,
        )


def _is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal; a closed standard stream (``0<&-``: Python
    then has None for it) is none."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty())


def _read_stdin() -> str:
    """The task given on stdin; none when stdin is closed."""
    stdin = sys.stdin
    if stdin is None:
        return ""
    return stdin.buffer.read().decode("utf-8", "replace").strip()


async def _one_turn(
    app: AppConfig,
    task: str,
    mode: str,
    session_dir: str,
    session_id: str,
    verbose: bool = False,
    command: str = "",
    last_message: str = "",
) -> int:
    from treadle.entrypoints.container import (
        ModelNotConfigured,
        collect_from_now_on,
        end_screen,
        end_session,
        refusal,
        session_container,
        start_session,
        unusable_session,
    )

    hint = f" — resume with: treadle --resume {session_id}"
    container = session_container(
        app, mode=mode, session_dir=session_dir, resume_hint=hint, verbose=verbose
    )
    # A signal while the session starts (its MCP servers may take seconds) stops the
    # turn before it asks anything: it still ends with its line, paused.
    stop = StopSignal()

    def stop_turn(signum: int) -> bool:
        stop.set("interrupted")
        return True

    SignalPolicy(stop_turn, container.leave_now(), ctrl_c=container.ctrl_c()).install()
    try:
        try:
            agent = await stop.race(start_session(container))
        except ModelNotConfigured as error:
            # Shown as any turn's end would be: a line, or the last JSON event.
            outcome = end_turn(NoModel(str(error)))
            container.screen().show(TurnEnded(outcome, Usage(), 0, 0.0))
            return outcome.exit_code
        except unusable_session() as error:
            print(refusal(error, session_id), file=sys.stderr)
            return USAGE_ERROR
        collect_from_now_on()
        if isinstance(agent, StoppedFirst):  # stopped while its MCP servers started
            outcome = end_turn(Stopped())
            container.screen().show(TurnEnded(outcome, Usage(), 0, 0.0))
            return outcome.exit_code
        if command:
            from treadle.entrypoints.workflows import (
                command_turn,
                run_command_turn,
                unknown_command,
            )

            found = container.workflows()
            turn = command_turn(found, command, task)
            servers = container.mcp_servers()
            if turn is None and servers is not None and command.startswith("mcp__"):
                from treadle.entrypoints.workflows import CommandTurn

                name = command.removeprefix("/")
                try:  # a server's prompt (issue 25): its messages are the task
                    expanded = await servers.expand_prompt(name, task)
                except ValueError as problem:
                    print(f"treadle: {problem}", file=sys.stderr)
                    return USAGE_ERROR
                said = f"/{name} from an MCP server's prompt"
                turn = CommandTurn(expanded, "", Notice("command_run", said))
            if turn is None:
                print(f"treadle: {unknown_command(found, command)}", file=sys.stderr)
                return USAGE_ERROR
            outcome = await run_command_turn(agent, turn, container.models(), stop)
        else:
            outcome = await agent.run_turn(task, stop)
        if last_message and outcome.kind is OutcomeKind.FINISHED:
            write_last_message(Path(last_message), final_answer(agent))
        await agent.hooks.settle()  # the turn's end told to a notify command, a hook
        return outcome.exit_code
    finally:
        try:
            await end_session(container)
        finally:  # the outcome is the last line, after what the end said, crash or not
            end_screen(container)
