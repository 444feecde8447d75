"""The composition root: one container wiring adapters to ports, for every way treadle runs.

A one-turn run, an interactive session, a replay and a batch are all this container
with some providers overridden; tests and library users override them the same way::

    container = Container()
    container.model.override(providers.Object(ScriptedModel([...])))
    agent = container.agent()

What each provider builds is in :mod:`treadle.entrypoints.wiring`. The session's
resources (its transcript and its ``treadle.log``) are opened when first asked for and
closed by ``container.shutdown_resources()``. A session of the command line starts
with :func:`start_session` (its MCP servers start before its agent is built) and ends
with :func:`end_session`.
"""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING

from treadle.adapters.instructions import ProjectInstructions
from treadle.adapters.secrets.redact import RedactingTerminal, Redactor
from treadle.adapters.system_clock import SystemClock
from treadle.adapters.terminal.plain_terminal import PlainTerminal
from treadle.adapters.transcript.jsonl_transcript import TranscriptDamaged
from treadle.adapters.transcript.sessions import (
    MetaDamaged,
    SessionBusy,
    SessionLog,
    SessionUnusable,
)
from treadle.domain.loop.background import BackgroundProcesses
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts
from treadle.domain.rules.background import session_end_line
from treadle.domain.rules.context_window import ContextState
from treadle.domain.rules.history import History
from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.values.events import Notice, TurnEvent
from treadle.domain.values.model import ContextWindow
from treadle.domain.values.workflows import Workflows
from treadle.entrypoints.batch_wiring import (
    BatchOptions,
    build_batch_screen,
    build_turn_engine,
    open_results_log,
)
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.hooks import (
    SessionHooks,
    build_hooks,
    build_notifier,
    read_session_hooks,
)
from treadle.entrypoints.injector import containers, providers
from treadle.entrypoints.interrupts import LeaveNow
from treadle.entrypoints.paths import state_dir
from treadle.entrypoints.providers import HTTP_PROVIDERS, ModelNotConfigured
from treadle.entrypoints.wiring import (
    build_agent,
    build_isolation,
    build_model,
    build_redactor,
    build_runner,
    build_sandbox,
    build_server,
    build_settings,
    build_terminal,
    build_tools,
    build_turn_start,
    context_so_far,
    conversation_so_far,
    observed,
    open_mcp_servers,
    open_sandboxes,
    open_session_log,
    open_telemetry,
    open_transcript,
    read_project_instructions,
    subagents_so_far,
)
from treadle.entrypoints.workflows import (
    ModelMaker,
    model_maker,
    models_by_name,
    offer_skills,
    read_workflows,
    with_skill_tool,
    workflow_notices,
)
from treadle.ports.clock import Clock
from treadle.ports.hooks import Hooks
from treadle.ports.model import Model, ModelServer
from treadle.ports.notify import Notifier
from treadle.ports.process import ProcessRunner
from treadle.ports.terminal import Terminal
from treadle.ports.tools import Tool
from treadle.ports.turn_start import TurnStart

if TYPE_CHECKING:
    from treadle.adapters.mcp.servers import McpServers
    from treadle.adapters.sandbox import Sandbox
    from treadle.adapters.telemetry import Telemetry
    from treadle.ports.batch import BatchScreen, ResultsLog, TurnEngine

__all__ = [
    "HTTP_PROVIDERS",
    "Container",
    "ModelNotConfigured",
    "build_model",
    "build_redactor",
    "build_tools",
    "collect_from_now_on",
    "end_screen",
    "end_session",
    "refusal",
    "session_container",
    "start_session",
    "unusable_session",
]


class Container(containers.DeclarativeContainer):
    """Production defaults; every provider can be overridden."""

    app: providers.Provider[AppConfig] = providers.Object(AppConfig())
    mode: providers.Provider[str] = providers.Object("plain")
    interactive: providers.Provider[bool] = providers.Object(False)
    session_dir: providers.Provider[str] = providers.Object("")
    state_dir: providers.Provider[str] = providers.Object("")
    resume_hint: providers.Provider[str] = providers.Object("")
    verbose: providers.Provider[bool] = providers.Object(False)
    session_id: providers.Provider[str] = providers.Callable(os.path.basename, session_dir)

    leave_now: providers.Provider[LeaveNow] = providers.Singleton(LeaveNow)
    # The one memory of the last Ctrl-C: the terminal's keys and the signals share it.
    ctrl_c: providers.Provider[CtrlC] = providers.Singleton(CtrlC)
    clock: providers.Provider[Clock] = providers.Singleton(SystemClock)
    model: providers.Provider[Model] = providers.Singleton(build_model, app, clock, session_id)
    terminal: providers.Provider[Terminal] = providers.Singleton(
        build_terminal, mode, resume_hint, leave_now, verbose, ctrl_c
    )
    redactor: providers.Provider[Redactor] = providers.Singleton(build_redactor, app)
    # Made by whoever needs it first: the turn start's thread (its warning), or the
    # first command; never before the first request (entrypoints.NOT_BEFORE_FIRST_REQUEST).
    # What the session's end closes of the sandbox: the allowlist's proxy (issue 28).
    sandboxes: providers.Resource[list[Sandbox]] = providers.Resource(open_sandboxes)
    sandbox: providers.Provider[Sandbox] = providers.ThreadSafeSingleton(
        build_sandbox, app, state_dir, sandboxes
    )
    runner: providers.Provider[ProcessRunner] = providers.Singleton(
        build_runner, app, redactor, sandbox.provider
    )
    turn_start: providers.Provider[TurnStart | None] = providers.Singleton(
        build_turn_start, app, state_dir, session_dir, sandbox.provider
    )
    screen: providers.Provider[Terminal] = providers.Singleton(
        RedactingTerminal, terminal, redactor
    )
    log_path: providers.Provider[str] = providers.Resource(
        open_session_log, app, session_dir, redactor
    )
    transcript: providers.Provider[SessionLog | None] = providers.Resource(
        open_transcript, app, session_dir, redactor, screen
    )
    telemetry: providers.Provider[Telemetry | None] = providers.Resource(
        open_telemetry, app, redactor
    )
    history: providers.Provider[History] = providers.Singleton(conversation_so_far, transcript)
    resumed: providers.Provider[tuple[ContextState, ContextWindow | None]] = providers.Singleton(
        context_so_far, transcript, history
    )
    subagents_started: providers.Provider[int] = providers.Singleton(
        subagents_so_far, transcript, history
    )
    server: providers.Provider[ModelServer | None] = providers.Singleton(build_server, model)
    mcp_servers: providers.Resource[McpServers | None] = providers.Resource(
        open_mcp_servers, app, session_dir, redactor
    )
    workflows: providers.Provider[Workflows] = providers.Singleton(read_workflows, app)
    # Issue 23: the hooks of the configuration and of Claude Code's settings, and the bell.
    hook_setup: providers.Provider[SessionHooks] = providers.Singleton(read_session_hooks, app)
    hooks: providers.Provider[Hooks | None] = providers.Singleton(
        build_hooks, app, runner, session_dir, hook_setup
    )
    notifier: providers.Provider[Notifier | None] = providers.Singleton(
        build_notifier, app, mode, runner, session_dir, redactor
    )
    models: providers.Provider[ModelMaker] = providers.Singleton(
        model_maker, app, clock, session_id
    )
    # The session's background processes (issue 27): bash starts them, its end stops them.
    background: providers.Provider[BackgroundProcesses] = providers.Singleton(BackgroundProcesses)
    tools: providers.Provider[list[Tool]] = providers.Singleton(
        with_skill_tool, providers.Singleton(build_tools, mcp_servers, background), workflows
    )
    instructions: providers.Provider[ProjectInstructions] = providers.Singleton(
        read_project_instructions, app
    )
    settings: providers.Provider[TurnSettings] = providers.Singleton(
        offer_skills,
        providers.Singleton(
            build_settings, app, session_dir, interactive, log_path, instructions, redactor
        ),
        workflows,
    )
    ports: providers.Provider[TurnPorts] = providers.Singleton(
        TurnPorts,
        model=model,
        clock=clock,
        runner=runner,
        terminal=screen,
        transcript=providers.Singleton(observed, transcript, telemetry),
        turn_start=turn_start,
        server=server,
        models=providers.Singleton(models_by_name, models),
        hooks=hooks,
        notifier=notifier,
        isolation=providers.Singleton(build_isolation, app, sandbox.provider),
        catalog=mcp_servers,
    )
    agent: providers.Provider[Agent] = providers.Singleton(
        build_agent, ports, settings, tools, history, leave_now, resumed, subagents_started
    )

    # treadle batch (issue 13): the engine that runs the turns, RESULTS, the progress.
    batch_options: providers.Provider[BatchOptions] = providers.Object(BatchOptions())
    turn_engine: providers.Provider[TurnEngine] = providers.Singleton(
        build_turn_engine, batch_options, clock
    )
    batch_results: providers.Provider[ResultsLog] = providers.Resource(
        open_results_log, batch_options
    )
    batch_screen: providers.Provider[BatchScreen] = providers.Singleton(
        build_batch_screen, batch_options
    )


def session_container(
    app: AppConfig, *, mode: str, session_dir: str, resume_hint: str, verbose: bool = False
) -> Container:
    """The container for a session of the command line: a one-turn run or an interactive one."""
    container = Container()
    container.verbose.override(providers.Object(verbose))
    container.app.override(providers.Object(app))
    container.mode.override(providers.Object(mode))
    container.interactive.override(providers.Object(mode == "tty"))
    container.session_dir.override(providers.Object(session_dir))
    container.resume_hint.override(providers.Object(resume_hint))
    container.state_dir.override(providers.Object(str(state_dir())))
    return container


async def start_session(container: Container) -> Agent:
    """The session's agent, once its MCP servers have started.

    The model is built first (a missing one ends the session before any server
    starts); what the person should know of the project instructions and of servers
    that failed is shown, and kept in the transcript, once.
    """
    container.model()
    container.log_path()  # the servers' start is logged in the session's treadle.log
    screen, transcript = container.screen(), container.transcript()

    def notify(event: TurnEvent) -> None:
        screen.show(event)
        if transcript is not None:
            transcript.record(event)

    for notice in container.instructions().notices():
        notify(notice)
    for notice in workflow_notices(container.workflows(), container.app().workspace):
        notify(notice)
    for notice in container.hook_setup().notices:
        notify(notice)
    servers = container.mcp_servers()
    if servers is not None:
        await servers.start(notify)
    return container.agent()


async def end_session(container: Container) -> None:
    """Stop the session's background processes and MCP servers, then close its
    resources (the sandbox's proxy)."""
    try:
        try:
            said = session_end_line(await container.background().stop_all())
            if said:
                notice = Notice("background_stopped", said)
                container.screen().show(notice)
                transcript = container.transcript()
                if transcript is not None:
                    transcript.record(notice)
        finally:
            servers = container.mcp_servers() if container.mcp_servers.initialized else None
            if servers is not None:
                await servers.close()
    finally:
        container.shutdown_resources()


def end_screen(container: Container) -> None:
    """The headless screen writes the outcome it held back: its last line, after all
    that the session's end said (an MCP server stopped as it closed, a checkpoint)."""
    terminal = container.terminal()
    if isinstance(terminal, PlainTerminal):
        terminal.finish()


def collect_from_now_on() -> None:
    """The session is built: what start-up made stays (frozen out of the collector's
    way), and the cycle collector runs again for the turn (see cli.main)."""
    gc.freeze()
    gc.enable()


def unusable_session() -> tuple[type[Exception], ...]:
    """What opening a session may raise that is the user's to fix: one line, exit 2."""
    return (TranscriptDamaged, MetaDamaged, SessionBusy, SessionUnusable)


def refusal(error: Exception, session_id: str) -> str:
    """The one line for a session that cannot be opened."""
    if isinstance(error, ValueError):  # a damaged transcript or record
        return f"treadle: cannot continue session {session_id}: {error}"
    return f"treadle: {error}"
