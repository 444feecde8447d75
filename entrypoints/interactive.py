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
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from treadle import __version__
from treadle.adapters.transcript.session_fork import ForkRefused, fork_session
from treadle.adapters.transcript.sessions import SessionStore
from treadle.domain.loop.stop import StopSignal
from treadle.domain.loop.turn import Agent
from treadle.domain.rules.background import listing_lines
from treadle.domain.rules.fork import fork_line
from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.rules.resumed_view import resumed_view
from treadle.domain.rules.slash_commands import (
    BUILT_IN,
    LEAVE,
    Run,
    SlashCommand,
    Task,
    Unknown,
    help_lines,
    read_line,
    unknown_line,
)
from treadle.domain.rules.workflows import command_entries
from treadle.domain.values.events import Notice
from treadle.domain.values.outcome import EXIT_CODES, NoModel, OutcomeKind, end_turn
from treadle.domain.values.workflows import Workflows
from treadle.entrypoints.changes import Report, session_commands
from treadle.entrypoints.config import USAGE_ERROR, AppConfig
from treadle.entrypoints.container import (
    Container,
    ModelNotConfigured,
    collect_from_now_on,
    end_session,
    refusal,
    session_container,
    start_session,
    unusable_session,
)
from treadle.entrypoints.injector import providers
from treadle.entrypoints.interrupts import SignalPolicy
from treadle.entrypoints.paths import new_session_id, state_dir
from treadle.entrypoints.workflows import (
    CommandTurn,
    ModelMaker,
    command_turn,
    run_command_turn,
    skill_lines,
)
from treadle.ports.model import Model

if TYPE_CHECKING:
    from treadle.adapters.blessed_terminal import BlessedTerminal


NO_WORKFLOWS = Workflows()


class McpPrompt(Protocol):
    """A server's prompt as a slash command (``/NAME``), and what ``/help`` says of it."""

    @property
    def name(self) -> str: ...

    @property
    def server(self) -> str: ...

    @property
    def summary(self) -> str: ...


class McpPrompts(Protocol):
    """The MCP servers' prompts (``McpServers``): listed, and expanded into a task (a
    ``ValueError`` says in one line why one cannot be)."""

    def prompt_commands(self) -> Sequence[McpPrompt]: ...

    async def expand_prompt(self, command: str, text: str) -> str: ...


class TaskPrompt(Protocol):
    """Where the session reads its next task (the blessed terminal, or a test's script)."""

    async def read_task(self) -> str | None:
        """The next line typed; None when the person leaves (Ctrl-D)."""
        ...

    def stop_prompt(self) -> None:
        """End the prompt being read, as if the person left."""
        ...

    def report(self, lines: list[str], *, problem: bool = False) -> None:
        """Lines the session says between turns; a problem marked as one."""
        ...


@dataclass
class SessionInterrupts:
    """What the stop signals do during a session (with the keyboard's Ctrl-C, the
    terminal sees to its own keys).

    During a turn they stop it (pause); a second SIGINT within the window leaves at
    once, as everywhere (``leave_now``). At the prompt they end the session. SIGTERM,
    SIGHUP and SIGQUIT also end the session after the turn.
    """

    prompt: TaskPrompt
    leave_now: Callable[[], None] = field(default=lambda: None)
    stop: StopSignal | None = None
    ending: bool = False
    now: Callable[[], float] = time.monotonic
    ctrl_c: CtrlC | None = None  # the terminal's memory of the last Ctrl-C

    def __post_init__(self) -> None:
        self._policy = SignalPolicy(
            self._stop_turn, self.leave_now, self._at_rest, self.now, self.ctrl_c
        )

    def signalled(self, signum: int) -> None:
        self._policy.signalled(signum)

    def install(self) -> None:
        self._policy.install()

    def _stop_turn(self, signum: int) -> bool:
        if signum != signal.SIGINT:
            self.ending = True
        if self.stop is None:
            return False
        self.stop.set("interrupted")
        return True

    def _at_rest(self, signum: int) -> None:
        self.ending = True
        self.prompt.stop_prompt()


async def run_interactive(
    agent: Agent,
    prompt: TaskPrompt,
    interrupts: SessionInterrupts | None = None,
    commands: Mapping[str, Callable[[], Awaitable[None]]] | None = None,
    found: Workflows = NO_WORKFLOWS,
    models: ModelMaker | None = None,
    mcp: McpPrompts | None = None,
) -> int:
    """Read a task, run a turn on it, and again, until the person leaves.

    An empty line is ignored; ``/exit`` or Ctrl-D ends the session; a line that names
    one of ``commands`` (``/undo``, ``/diff``…) runs it instead of a turn, one of the
    commands or skills ``found`` runs a turn on its prompt (``models`` builds the model
    it names), ``/help`` lists them all, and an unknown ``/word`` is said to be one and
    never sent (see :mod:`~treadle.domain.rules.slash_commands`). The prompts of the
    MCP servers (``mcp``) are commands too, ``/mcp__SERVER__PROMPT arguments``, as the
    servers list them at the time. Returns the session's exit code: 0, or 130 when a
    signal ended it.
    """
    interrupts = interrupts or SessionInterrupts(prompt)
    commands = commands or {}
    listed = [c for c in BUILT_IN if c.name in commands or c.name in {"/help", *LEAVE}]
    # The project's and the user's commands and skills (issue 23); a built-in one wins.
    taken = {*commands, "/help", *LEAVE}
    listed += command_entries(found, taken)
    prompts = {f"/{c.name}" for c in found.commands} | {f"/{s.name}" for s in found.skills}
    while not interrupts.ending:
        line = await prompt.read_task()
        if line is None:
            break
        # A server may change its prompts mid-session (notifications/prompts/list_changed).
        served = {f"/{c.name}": c for c in mcp.prompt_commands()} if mcp is not None else {}
        asked = read_line(line, {*commands, "/help", *prompts, *served})
        if asked is None:
            continue
        if isinstance(asked, Unknown):
            prompt.report([unknown_line(asked)], problem=True)
            continue
        turn = CommandTurn(asked.text, "", None) if isinstance(asked, Task) else None
        if isinstance(asked, Run):
            if asked.name in LEAVE:
                break
            if asked.name == "/help":
                mcp_entries = [SlashCommand(name, c.summary) for name, c in served.items()]
                prompt.report(help_lines([*listed, *mcp_entries]))
                continue
            if asked.name in served and mcp is not None:
                try:
                    task = await mcp.expand_prompt(asked.name[1:], asked.arguments)
                except ValueError as problem:  # a missing argument, a server's refusal
                    prompt.report([str(problem)], problem=True)
                    continue
                said = f"{asked.name} from MCP server {served[asked.name].server}"
                turn = CommandTurn(task, "", Notice("command_run", said))
            elif asked.name in commands:
                await commands[asked.name]()
                continue
            else:
                turn = command_turn(found, asked.name, asked.arguments)
            if turn is None:
                continue
        stop = StopSignal()
        interrupts.stop = stop
        try:
            if turn is not None:
                await run_command_turn(agent, turn, models or _no_models, stop)
        finally:
            interrupts.stop = None
    return EXIT_CODES[OutcomeKind.PAUSED] if interrupts.ending else 0


def _no_models(name: str) -> Model:
    raise ModelNotConfigured(f"no model {name!r} can be built here")


def run_interactive_session(
    app: AppConfig, session_dir: str, session_id: str, *, verbose: bool = False
) -> int:
    """``treadle`` alone in a terminal: wire the container and run the session."""
    greeting = [
        f"treadle {__version__} · {app.model or 'no model'} · {os.path.realpath(app.workspace)}",
        "Type a task and press Enter. Esc stops a turn; /exit or Ctrl-D leaves.",
        "/diff shows what the last turn changed, /undo takes it back; /help lists all.",
    ]
    return asyncio.run(_session(app, session_dir, session_id, greeting, verbose))


async def _session(
    app: AppConfig, session_dir: str, session_id: str, greeting: list[str], verbose: bool
) -> int:
    from treadle.adapters.blessed_terminal import BlessedTerminal

    hint = f" — type to go on, or later: treadle --resume {session_id}"
    container = session_container(app, mode="tty", session_dir=session_dir, resume_hint=hint)
    terminal = BlessedTerminal(
        resume_hint=hint,
        leave_now=container.leave_now(),
        verbose=verbose,
        ctrl_c=container.ctrl_c(),
    )
    container.terminal.override(providers.Object(terminal))
    # A signal while the session starts (MCP servers may take seconds) ends it cleanly.
    interrupts = SessionInterrupts(terminal, terminal.leave_now, ctrl_c=terminal.ctrl_c)
    interrupts.install()
    try:
        try:
            agent = await start_session(container)
        except ModelNotConfigured as error:
            outcome = end_turn(NoModel(str(error)))
            print(outcome.screen_line)
            return outcome.exit_code
        except unusable_session() as error:
            print(refusal(error, session_id), file=sys.stderr)
            return USAGE_ERROR
        collect_from_now_on()
        # Keys first, then the greeting that invites them: a key typed the moment it shows
        # (a Ctrl-C right behind an Enter) is read by treadle, not taken by the terminal.
        terminal.open_session()
        log = container.transcript()
        recorded = log.recorded() if log is not None else []
        if recorded:  # --resume: where the conversation was, before the prompt
            terminal.show_resumed(session_id, resumed_view(recorded))
        terminal.note(greeting)
        commands = {
            **change_commands(app, terminal),
            **workflow_commands(container, agent, terminal),
            **process_commands(container, terminal),
            **fork_commands(session_dir, terminal),
        }
        found, models = container.workflows(), container.models()
        servers = container.mcp_servers()
        code = await run_interactive(agent, terminal, interrupts, commands, found, models, servers)
        await agent.hooks.settle()  # the last turn's end told to a notify command, a hook
        return code
    finally:
        terminal.close()
        await end_session(container)


def change_commands(
    app: AppConfig, terminal: BlessedTerminal
) -> dict[str, Callable[[], Awaitable[None]]]:
    """``/undo``, ``/redo`` and ``/diff``, their reports shown on ``terminal``."""

    def show(report: Report) -> None:
        if report.diff:
            terminal.show_diff(report.lines[0], "\n".join(report.lines[1:]))
        else:
            terminal.report(list(report.lines), problem=not report.ok)

    return session_commands(str(state_dir()), os.path.realpath(app.workspace), show)


def workflow_commands(
    container: Container, agent: Agent, terminal: TaskPrompt
) -> dict[str, Callable[[], Awaitable[None]]]:
    """``/skills``: the skills found, as ``treadle context`` lists them (issue 23)."""
    found = container.workflows()

    async def skills() -> None:
        window = agent.responder.context.window
        terminal.report(skill_lines(found, window.tokens if window else None))

    return {"/skills": skills}


def process_commands(
    container: Container, terminal: TaskPrompt
) -> dict[str, Callable[[], Awaitable[None]]]:
    """``/processes``: the session's background processes, running and ended (issue 27)."""
    background, clock = container.background(), container.clock()

    async def processes() -> None:
        terminal.report(listing_lines(background.views(), clock.now()))

    return {"/processes": processes}


def fork_commands(
    session_dir: str, terminal: TaskPrompt
) -> dict[str, Callable[[], Awaitable[None]]]:
    """``/fork``: this session so far copied into a new one (issue 27); this one goes on,
    the fork is resumed apart (``treadle --resume``, in another terminal)."""

    async def fork() -> None:
        folder = Path(session_dir)
        try:
            forked = fork_session(SessionStore(folder.parent), folder.name, new_session_id(), None)
        except ForkRefused as error:
            terminal.report([str(error)], problem=True)
        except OSError as error:
            terminal.report([f"cannot fork: {error.strerror or error}"], problem=True)
        else:
            terminal.report([fork_line(forked.id, folder.name, forked.forked_at)])

    return {"/fork": fork}
