"""An interactive session: a prompt, then a turn, then the prompt again, on one conversation.

``treadle`` with no task in a terminal runs :func:`run_interactive_session`. Every
turn goes to the same :class:`~treadle.domain.loop.turn.Agent`, so the model sees the
whole conversation so far; a paused turn's history stays valid and the next
message simply goes on from it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from treadle import __version__
from treadle.domain.loop.stop import StopSignal
from treadle.domain.loop.turn import Agent
from treadle.domain.values.outcome import NoModel, end_turn
from treadle.entrypoints.config import AppConfig

EXIT_COMMANDS = frozenset({"/exit", "/quit"})
SECOND_INTERRUPT_WINDOW = 2.0


class TaskPrompt(Protocol):
    """Where the session reads its next task (the blessed terminal, or a test's script)."""

    async def read_task(self) -> str | None:
        """The next line typed; None when the person leaves (Ctrl-D)."""
        ...

    def stop_prompt(self) -> None:
        """End the prompt being read, as if the person left."""
        ...


@dataclass
class SessionInterrupts:
    """What SIGINT and SIGTERM do during a session.

    During a turn they stop it (pause); a second SIGINT within two seconds of the
    first, while the turn is still stopping, exits at once after ``restore``. At
    the prompt they end the session. SIGTERM also ends the session after the turn.
    """

    prompt: TaskPrompt
    restore: Callable[[], None] = field(default=lambda: None)
    stop: StopSignal | None = None
    ending: bool = False
    _first: float | None = None

    def signalled(self, signum: int) -> None:
        if signum == signal.SIGTERM:
            self.ending = True
        stop = self.stop
        if stop is None:
            self.ending = True
            self.prompt.stop_prompt()
            return
        now = time.monotonic()
        if (
            signum == signal.SIGINT
            and stop.is_set
            and self._first is not None
            and now - self._first < SECOND_INTERRUPT_WINDOW
        ):
            self.restore()
            os._exit(130)
        self._first = now
        stop.set("interrupted")

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self.signalled, signum)


async def run_interactive(
    agent: Agent, prompt: TaskPrompt, interrupts: SessionInterrupts | None = None
) -> int:
    """Read a task, run a turn on it, and again, until the person leaves.

    An empty line is ignored; ``/exit`` or Ctrl-D ends the session. Returns the
    session's exit code: 0, or 130 when a signal ended it.
    """
    interrupts = interrupts or SessionInterrupts(prompt)
    while not interrupts.ending:
        line = await prompt.read_task()
        if line is None:
            break
        task = line.strip()
        if not task:
            continue
        if task in EXIT_COMMANDS:
            break
        stop = StopSignal()
        interrupts.stop = stop
        try:
            await agent.run_turn(task, stop)
        finally:
            interrupts.stop = None
    return 130 if interrupts.ending else 0


def run_interactive_session(app: AppConfig, session_dir: str, session_id: str) -> int:
    """``treadle`` alone in a terminal: wire the container and run the session."""
    greeting = [
        f"treadle {__version__} · {app.model or 'no model'} · {os.path.realpath(app.workspace)}",
        "Type a task and press Enter. Esc stops a turn; /exit or Ctrl-D leaves.",
    ]
    return asyncio.run(_session(app, session_dir, session_id, greeting))


async def _session(app: AppConfig, session_dir: str, session_id: str, greeting: list[str]) -> int:
    from dependency_injector import providers

    from treadle.entrypoints.container import Container, ModelNotConfigured

    container = Container()
    container.app.override(providers.Object(app))
    container.mode.override(providers.Object("tty"))
    container.interactive.override(providers.Object(True))
    container.session_dir.override(providers.Object(session_dir))
    container.resume_hint.override(
        providers.Object(f" — type to go on, or later: treadle --resume {session_id}")
    )
    terminal = container.terminal()
    try:
        try:
            agent = container.agent()
        except ModelNotConfigured as error:
            outcome = end_turn(NoModel(str(error)))
            print(outcome.screen_line)
            return outcome.exit_code
        terminal.note(greeting)
        terminal.open_session()
        interrupts = SessionInterrupts(terminal, terminal.restore)
        interrupts.install()
        return await run_interactive(agent, terminal, interrupts)
    finally:
        terminal.close()
        transcript = container.transcript()
        if transcript is not None:
            transcript.close()
