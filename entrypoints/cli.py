"""The ``treadle`` command.

``treadle "task"`` runs one turn and exits with its outcome's code. Imports are lazy:
``treadle --version`` loads no HTTP stack, terminal library or container.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from treadle import __version__

SUBCOMMANDS = (
    "replay",
    "sessions",
    "config",
    "mcp",
    "context",
    "trust",
    "undo",
    "redo",
    "diff",
    "batch",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="treadle",
        description="A terminal coding agent: the model asks, the tools run, until it answers.",
        epilog="Also: treadle replay TRANSCRIPT [--check] [--recorded-tools] · "
        "treadle sessions · treadle config · treadle mcp · treadle context · "
        "treadle trust [FOLDER] · treadle undo · treadle redo · treadle diff · "
        "treadle batch TASKS.jsonl",
    )
    parser.add_argument("task", nargs="?", help="the task for one turn (none: interactive)")
    parser.add_argument(
        "--model", help="PROVIDER:NAME (openai:gpt-4.1, openai-responses:…, anthropic:…) or demo"
    )
    parser.add_argument("--base-url", help="the model server, e.g. http://127.0.0.1:11434/v1")
    parser.add_argument("--approval", choices=["ask", "auto", "read-only"])
    parser.add_argument("--workspace", help="the folder the tools work in (default: here)")
    parser.add_argument(
        "--sandbox",
        choices=["workspace-write", "read-only", "off"],
        help="what commands may write (default: workspace-write, with Landlock)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--print", action="store_true", help="headless: plain lines")
    output.add_argument("--json", action="store_true", help="headless: one JSON event per line")
    parser.add_argument(
        "--verbose", action="store_true", help="show the model's reasoning in full (with --print)"
    )
    parser.add_argument("--resume", metavar="ID", help="continue a session")
    parser.add_argument(
        "--session-id", metavar="ID", help="start a new session with this id (for scripts)"
    )
    parser.add_argument("--version", action="version", version=f"treadle {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["batch"]:
            from treadle.entrypoints.batch import run_batch_command

            return run_batch_command(argv[1:])
        if argv and argv[0] in SUBCOMMANDS:
            from treadle.entrypoints.commands import run_subcommand

            return run_subcommand(argv)
        args = build_parser().parse_args(argv)
        from treadle.entrypoints.session import run_session

        return run_session(args)
    except BrokenPipeError:  # `treadle sessions | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
