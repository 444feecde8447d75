"""Running a session from the command line: configuration, wiring, signals, exit code."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import signal
import sys
import time
from pathlib import Path

from treadle.domain.stop import StopSignal
from treadle.entrypoints.config import AppConfig
from treadle.ports.events import TurnOutcome

SECOND_INTERRUPT_WINDOW = 2.0


def state_dir() -> Path:
    """Where sessions live: ``TREADLE_STATE_DIR``, else the platform's state folder."""
    override = os.environ.get("TREADLE_STATE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_state_dir("treadle"))


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def flag_values(args: argparse.Namespace) -> dict[str, object]:
    values: dict[str, object] = {}
    for key in ("model", "base_url", "approval", "workspace"):
        value = getattr(args, key, None)
        if value is not None:
            values[key] = value
    return values


def run_session(args: argparse.Namespace) -> int:
    try:
        app = AppConfig().with_values(flag_values(args), "flag")
    except ValueError as error:
        print(f"treadle: {error}", file=sys.stderr)
        return 2
    task = args.task
    if task is None:
        if sys.stdin.isatty() and sys.stdout.isatty():
            print("treadle: the interactive session comes with the terminal interface; "
                  "give a task for now", file=sys.stderr)
            return 2
        task = sys.stdin.read().strip()
        if not task:
            print("treadle: no task given", file=sys.stderr)
            return 2
    mode = "json" if args.json else "plain"
    session_id = new_session_id()
    session_path = state_dir() / "sessions" / session_id
    return asyncio.run(_one_turn(app, task, mode, str(session_path), session_id))


async def _one_turn(app: AppConfig, task: str, mode: str, session_dir: str, session_id: str) -> int:
    from dependency_injector import providers

    from treadle.entrypoints.container import Container, ModelNotConfigured

    container = Container()
    container.app.override(providers.Object(app))
    container.mode.override(providers.Object(mode))
    container.session_dir.override(providers.Object(session_dir))
    container.resume_hint.override(
        providers.Object(f" — resume with: treadle --resume {session_id}")
    )
    terminal = container.terminal()
    try:
        agent = container.agent()
    except ModelNotConfigured as error:
        outcome = TurnOutcome.blocked(str(error))
        print(outcome.screen_line)
        return outcome.exit_code
    stop = StopSignal()
    _install_interrupts(stop)
    outcome = await agent.run_turn(task, stop)
    transcript = container.transcript()
    if transcript is not None:
        transcript.close()
    del terminal
    return outcome.exit_code


def _install_interrupts(stop: StopSignal) -> None:
    """Ctrl-C or SIGTERM pauses the turn; a second Ctrl-C within 2 s exits at once."""
    loop = asyncio.get_running_loop()
    first: list[float] = []

    def interrupted(signum: int) -> None:
        now = time.monotonic()
        if stop.is_set and signum == signal.SIGINT and first and now - first[0] < SECOND_INTERRUPT_WINDOW:
            os._exit(130)
        first[:] = [now]
        stop.set("interrupted")

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, interrupted, signum)
