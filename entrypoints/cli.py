"""The ``treadle`` command.

``treadle "task"`` runs one turn and exits with its outcome's code. Imports are lazy:
``treadle --version`` loads no HTTP stack, terminal library or container.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from collections.abc import Sequence

from treadle import __version__
from treadle.entrypoints.providers import USAGES

SUBCOMMANDS = (
    "replay",
    "sessions",
    "fork",
    "config",
    "mcp",
    "context",
    "trust",
    "undo",
    "redo",
    "diff",
    "worktree",
    "batch",
    "acp",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="treadle",
        description="A terminal coding agent: the model asks, the tools run, until it answers.",
        epilog="Also: treadle replay TRANSCRIPT [--check] [--recorded-tools] · "
        "treadle sessions · treadle fork ID [--at N] · treadle config · treadle mcp · "
        "treadle context · "
        "treadle trust [FOLDER] · treadle undo · treadle redo · treadle diff · "
        "treadle worktree list|remove NAME · "
        "treadle batch TASKS.jsonl · treadle acp (for editors)",
    )
    parser.add_argument("task", nargs="?", help="the task for one turn (none: interactive)")
    parser.add_argument(
        "--command",
        metavar="NAME",
        help="run the slash command NAME (.claude/commands, skills…); the task is its arguments",
    )
    parser.add_argument("--model", help=f"the model: {USAGES}")
    parser.add_argument("--base-url", help="the model server, e.g. http://127.0.0.1:11434/v1")
    parser.add_argument("--approval", choices=["ask", "auto", "read-only"])
    parser.add_argument("--workspace", help="the folder the tools work in (default: here)")
    parser.add_argument(
        "--sandbox",
        choices=["workspace-write", "read-only", "off"],
        help="what commands may write (default: workspace-write, with Landlock)",
    )
    parser.add_argument(
        "--network",
        dest="sandbox_network",
        choices=["on", "off", "allowlist"],
        help="what network commands reach (default: on; allowlist: network_allow's hosts)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--print", action="store_true", help="headless: plain lines")
    output.add_argument("--json", action="store_true", help="headless: one JSON event per line")
    parser.add_argument(
        "--verbose", action="store_true", help="show the model's reasoning in full (with --print)"
    )
    parser.add_argument(
        "--output-schema",
        metavar="FILE",
        help="the final answer must be one JSON value valid against this JSON Schema",
    )
    parser.add_argument(
        "--output-last-message",
        metavar="FILE",
        help="write the final answer (its JSON value, with a schema) to FILE",
    )
    limits = parser.add_argument_group("limits on what the turn spends (sub-agents included)")
    limits.add_argument("--max-cost", metavar="USD", help="dollars, at the configured prices")
    limits.add_argument("--max-tokens-total", metavar="N", help="tokens of every kind")
    limits.add_argument("--max-requests", metavar="N", help="requests to the model")
    limits.add_argument("--max-time", metavar="DURATION", help="90s, 10m, 1h30m")
    parser.add_argument(
        "--worktree",
        nargs="?",
        const="",
        metavar="NAME",
        help="work in a git worktree on the branch treadle/NAME (made, or reused)",
    )
    parser.add_argument("--resume", metavar="ID", help="continue a session")
    parser.add_argument(
        "--session-id", metavar="ID", help="start a new session with this id (for scripts)"
    )
    parser.add_argument("--version", action="version", version=f"treadle {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _open_closed_standard_streams()
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else ""
    if command:
        # A command stopped by a signal leaves with 130 and a line, not a traceback.
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, _interrupted)
    else:
        from treadle.entrypoints import early_signals

        early_signals.hold()  # until the turn takes them: see early_signals
        # Starting allocates hundreds of thousands of objects and frees few: the cycle
        # collector would only slow it (a tenth of a session's start). The session
        # turns it back on once it is built (session.collect_from_now_on).
        gc.disable()
    try:
        if argv[:1] == ["acp"]:
            from treadle.entrypoints.acp import run_acp_command

            return run_acp_command(argv[1:])
        if argv[:1] == ["batch"]:
            from treadle.entrypoints.batch import run_batch_command

            return run_batch_command(argv[1:])
        if argv and argv[0] in SUBCOMMANDS:
            from treadle.entrypoints.commands import run_subcommand

            return run_subcommand(argv)
        args = build_parser().parse_args(argv)
        from treadle.entrypoints.session import run_session

        code = run_session(args)
        early_signals.ignore()  # the turn has said how it ended
        return code
    except BrokenPipeError:  # `treadle sessions | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        return _stopped(command, "--json" in argv)
    except Exception as bug:  # a bug outside any turn still leaves one line
        return _bug_outside_a_turn(bug)
    finally:
        gc.enable()  # whatever way it left: a program calling main() collects again


def _open_closed_standard_streams() -> None:
    """A standard stream the caller closed (``>&-``, ``0<&-``) reads and writes
    /dev/null, as if redirected there: Python has None for it, and the next file
    treadle opened would take its number (a transcript written as stdout, a command's
    stderr into the log)."""
    for number, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(number)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one
        if getattr(sys, name) is None:
            # Kept open for the life of the process, as the one Python would have made.
            setattr(sys, name, open(number, mode, encoding="utf-8", closefd=False))  # noqa: SIM115


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stopped(command: str, json_lines: bool) -> int:
    """A command (or a turn's last moments) stopped by a signal: one line, or the turn's
    last event with --json when the turn never came to say it, and the paused code."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)  # a second one cannot cut this short
    from treadle.domain.values.outcome import EXIT_CODES, OutcomeKind
    from treadle.entrypoints import early_signals

    paused = EXIT_CODES[OutcomeKind.PAUSED]
    if not command and early_signals.were_taken():
        return paused  # the turn has said (or is saying) how it ended
    if json_lines and not command:
        import json

        from treadle.adapters.transcript.serialize import event_to_record
        from treadle.domain.values.conversation import Usage
        from treadle.domain.values.events import TurnEnded
        from treadle.domain.values.outcome import Stopped, end_turn

        outcome = end_turn(Stopped())
        record = event_to_record(TurnEnded(outcome, Usage(), 0, 0.0))
        record |= {"exit_code": outcome.exit_code, "line": outcome.screen_line}
        print(json.dumps(record), flush=True)
    else:
        print("treadle: stopped", file=sys.stderr)
    return paused


def _bug_outside_a_turn(bug: Exception) -> int:
    """A bug where no turn can take it (start-up, a subcommand): one line on the screen,
    the traceback in ``treadle.log`` in the state folder (a session's own is in its
    folder), secrets redacted."""
    import logging
    import traceback

    from treadle.adapters.secrets.redact import Redactor
    from treadle.domain.values.text import one_line

    redact = Redactor.from_environ(os.environ).redact
    where = ""
    try:
        from treadle.entrypoints.paths import outside_log_path

        path = outside_log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8", errors="backslashreplace") as log:
            log.write(redact(f"--- treadle {__version__}\n{traceback.format_exc()}\n"))
        where = f" (traceback in {path})"
    except Exception:
        logging.getLogger("treadle").debug("no place for the traceback", exc_info=True)

    print(
        f"treadle: internal error: {redact(one_line(f'{type(bug).__name__}: {bug}', 300))}{where}",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
