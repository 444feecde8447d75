"""What the container builds, provider by provider: the functions behind
:class:`~treadle.entrypoints.container.Container`.

Each imports what it builds when it is called, so that a session loads only the
adapters it uses (no MCP client without servers, no batch engine outside a batch).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

from treadle.adapters.instructions import ProjectInstructions, read_instructions
from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.terminal.plain_terminal import (
    JsonLinesTerminal,
    PlainTerminal,
    terminal_columns,
)
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript, refuse_unless_a_file
from treadle.adapters.transcript.session_log import LOG_FILE, session_log
from treadle.adapters.transcript.sessions import (
    META,
    TRANSCRIPT,
    SessionLock,
    SessionLog,
    SessionStore,
    SessionUnusable,
)
from treadle.domain.loop.background import BackgroundProcesses
from treadle.domain.loop.context import SharedWindow
from treadle.domain.loop.settings import SubAgentClocks, TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.approval import POLICIES
from treadle.domain.rules.context_window import ContextSettings, ContextState
from treadle.domain.rules.history import History
from treadle.domain.rules.interrupts import CtrlC
from treadle.domain.rules.limits import SpendingLimits
from treadle.domain.rules.tokens import as_is
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.events import Notice
from treadle.domain.values.model import ContextWindow
from treadle.domain.values.output import OutputContract
from treadle.domain.values.tools import ToolLimits
from treadle.entrypoints.config import (
    DEFAULT,
    DEFAULT_MAX_TOKENS,
    RECORDED_SETTINGS,
    AppConfig,
    mcp_server_configs,
    model_prices,
    settings_environment,
)
from treadle.entrypoints.interrupts import LeaveNow
from treadle.entrypoints.model_choice import ModelChoice
from treadle.entrypoints.paths import cache_dir, config_dir
from treadle.entrypoints.paths import state_dir as state_folder
from treadle.entrypoints.providers import resolve
from treadle.ports.clock import Clock
from treadle.ports.isolation import WorkspaceIsolation
from treadle.ports.model import Model, ModelServer
from treadle.ports.process import ProcessRunner
from treadle.ports.terminal import Terminal
from treadle.ports.tools import Tool
from treadle.ports.transcript import TranscriptStore
from treadle.ports.turn_start import TurnStart

if TYPE_CHECKING:
    from returns.result import Result

    from treadle.adapters.checkpoints import ShadowRepository
    from treadle.adapters.mcp.servers import McpServers
    from treadle.adapters.sandbox import Sandbox
    from treadle.adapters.telemetry import Telemetry
    from treadle.domain.rules.network import NetworkMode, NetworkPolicy
    from treadle.domain.rules.sandbox import SandboxMode
    from treadle.domain.values.process import ProcessError, ProcessResult, ProcessSpec


def build_model(app: AppConfig, clock: Clock, session_id: str = "") -> Model:
    """The model adapter ``app.model`` names, built by its provider's row (see
    :mod:`treadle.entrypoints.providers`); ``session_id`` keys OpenAI's prompt cache.

    ModelNotConfigured when no row takes the name, or its adapter cannot start.
    """
    provider, name = resolve(app.model)
    key_env = app.key_env or provider.key_env
    return provider.build(
        ModelChoice(
            name=name,
            clock=clock,
            base_url=app.base_url,
            api_key=(os.environ.get(key_env) or None) if key_env else None,
            key_env=key_env,
            api=app.api,
            connect_timeout=app.connect_timeout,
            read_timeout=app.read_timeout,
            answer_limit=app.answer_limit,
            event_limit=app.event_limit,
            effort=app.effort,
            session=session_id,
            reasoning_echo=app.reasoning_echo != "off",
        )
    )


def build_server(model: Model) -> ModelServer | None:
    """Who says what the model's window is: the model's own adapter, when it can."""
    return model if isinstance(model, ModelServer) else None


def build_runner(
    app: AppConfig, redactor: Redactor, sandbox: Callable[[], Sandbox]
) -> ProcessRunner:
    """The session's runner; ``sandbox`` makes (or gives) the session's one sandbox."""

    def runner() -> ProcessRunner:
        from treadle.adapters.process import SubprocessRunner

        return SubprocessRunner(
            passthrough_env=app.env_passthrough, redactor=redactor, sandbox=sandbox()
        )

    return RunnerOnFirstCommand(runner)


class RunnerOnFirstCommand:
    """The session's runner, made when the first command runs: a turn that runs none
    (most answers, every first request) never loads the process adapters."""

    def __init__(self, build: Callable[[], ProcessRunner]) -> None:
        self._build = build
        self._runner: ProcessRunner | None = None

    async def run(self, spec: ProcessSpec) -> Result[ProcessResult, ProcessError]:
        if self._runner is None:
            self._runner = self._build()
        return await self._runner.run(spec)


def open_sandboxes() -> Iterator[list[Sandbox]]:
    """The sandboxes the session made (one), closed at its end: their proxies stop."""
    made: list[Sandbox] = []
    try:
        yield made
    finally:
        for sandbox in made:
            sandbox.close()


def session_network(app: AppConfig) -> NetworkPolicy:
    """``sandbox_network`` with its lists: commands' network, and MCP servers' unless a
    server names its own."""
    from treadle.domain.rules.network import NetworkPolicy

    return NetworkPolicy(
        cast("NetworkMode", app.sandbox_network),
        allow=app.network_allow,
        deny=app.network_deny,
        loopback=app.network_loopback,
    )


def build_sandbox(app: AppConfig, state_dir: str, made: list[Sandbox] | None = None) -> Sandbox:
    """The session's sandbox: ``app.sandbox`` over the workspace. A mode the person set
    (a file, a variable, a flag) is explicit: without Landlock it refuses commands.
    ``made`` (:func:`open_sandboxes`) keeps it for the session's end."""
    from treadle.adapters.checkpoints import workspace_key
    from treadle.adapters.sandbox import Sandbox

    workspace = os.path.realpath(app.workspace)
    cache = cache_dir(state_dir, workspace_key(workspace))
    mode = cast("SandboxMode", app.sandbox)
    explicit = app.origin("sandbox") != DEFAULT
    network = session_network(app)
    network_explicit = any(
        app.origin(key) != DEFAULT for key in ("sandbox_network", "network_loopback")
    )
    sandbox = Sandbox(
        mode,
        workspace,
        explicit=explicit,
        writable=app.sandbox_writable,
        cache=cache,
        network=network,
        network_explicit=network_explicit,
    )
    if made is not None:
        made.append(sandbox)
    return sandbox


def build_turn_start(
    app: AppConfig, state_dir: str, session_dir: str, sandbox: Callable[[], Sandbox]
) -> TurnStart | None:
    """Before each turn: a checkpoint of the workspace (only for a session, which has a
    state folder to keep it in) and the sandbox's warning. The sandbox is made there,
    in the turn start's thread, unless a command came first."""
    if not state_dir:
        return None
    from treadle.adapters.turn_start import HostTurnStart

    def shadow() -> ShadowRepository:
        from treadle.adapters.checkpoints import shadow_for  # with the first checkpoint

        return shadow_for(state_dir, app.workspace)

    return HostTurnStart(shadow, session=os.path.basename(session_dir), sandbox=sandbox)


def build_isolation(app: AppConfig, sandbox: Callable[[], Sandbox]) -> WorkspaceIsolation:
    """Sub-agents' worktrees (``isolation: "worktree"``, issue 27), under ``worktree_dir``
    or the state folder's ``worktrees``; commands may write the ones made. Offered to
    every agent the container builds, a replay's as a session's: their requests match."""
    from treadle.adapters.worktree_isolation import WorktreeIsolation

    root = (
        os.path.expanduser(app.worktree_dir)
        if app.worktree_dir
        else str(state_folder() / "worktrees")
    )
    return WorktreeIsolation(root, lambda folder: sandbox().allow_writing(folder))


def build_tools(
    servers: McpServers | None = None, background: BackgroundProcesses | None = None
) -> list[Tool]:
    """The built-in tools (bash's background processes in ``background``), and
    ``mcp_resource`` when a server that started offers resources. The servers' own tools
    are the agent's catalog (``TurnPorts.catalog``): offered whole, or through
    ``tool_search`` past ``mcp_tool_budget``."""
    from treadle.adapters.tools import file_tools

    resources = servers.session_tools() if servers is not None else []
    return core_tools(background) + file_tools() + resources


def mcp_auth_dir() -> str:
    """Where ``treadle mcp login`` keeps the servers' OAuth tokens: the state folder."""
    return str(state_folder() / "mcp-auth")


def open_mcp_servers(
    app: AppConfig, session_dir: str, redactor: Redactor
) -> Iterator[McpServers | None]:
    """The configured MCP servers (started by :func:`start_session`), their stderr in
    the session's folder; None when there are none, and then the MCP client is never
    imported. Closing them is awaited by :func:`end_session`; what is still running at
    the end is killed here."""
    configs = mcp_server_configs(app)
    if not configs:
        yield None
        return
    from treadle.adapters.mcp.servers import McpServers

    servers = McpServers(
        configs,
        workspace=os.path.realpath(app.workspace),
        log_dir=session_dir,
        passthrough_env=app.env_passthrough,
        allowed=app.mcp_allowed,
        redactor=redactor,
        auth_dir=mcp_auth_dir(),
        network=session_network(app),
    )
    try:
        yield servers
    finally:
        servers.kill_now()


def read_project_instructions(app: AppConfig) -> ProjectInstructions:
    """AGENTS.md from the user's folder and from the project root down, unless turned off."""
    if not app.project_instructions:
        return ProjectInstructions()
    return read_instructions(
        app.workspace,
        user_folder=str(config_dir(os.environ)),
        limit=app.project_instructions_limit,
    )


def build_terminal(
    mode: str,
    resume_hint: str,
    leave_now: LeaveNow,
    verbose: bool = False,
    ctrl_c: CtrlC | None = None,
) -> Terminal:
    """The screen for ``mode``: ``json`` (one event per line), ``tty`` (the full display
    with its keys) or ``plain`` (lines, for a pipe or ``--print``). ``verbose`` shows
    the model's reasoning in full (plain lines show it only then); ``ctrl_c`` is the
    memory of the last Ctrl-C the full display shares with the signals.

    The headless lines end with the outcome: it waits for the session's end
    (:func:`~treadle.entrypoints.container.end_screen`), or for leaving at once."""
    if mode == "tty":
        from treadle.adapters.blessed_terminal import BlessedTerminal

        return BlessedTerminal(
            resume_hint=resume_hint, leave_now=leave_now, verbose=verbose, ctrl_c=ctrl_c
        )
    terminal: PlainTerminal
    if mode == "json":
        terminal = JsonLinesTerminal(resume_hint=resume_hint, outcome_last=True)
    else:
        # On a terminal, --print wraps the answer to its width; a pipe or a file gets it as is.
        width = terminal_columns(sys.stdout)
        terminal = PlainTerminal(
            resume_hint=resume_hint, verbose=verbose, width=width, outcome_last=True
        )
    leave_now.finish_screen = terminal.finish
    return terminal


def build_redactor(app: AppConfig) -> Redactor:
    """Secrets out of transcripts and the screen: secret-looking variables and the key."""
    key_envs = [app.key_env] if app.key_env else []
    # What MCP servers are configured with: tokens in their env, headers or variables,
    # each under a name of its own that the redactor is told is a secret.
    configured = {}
    servers = mcp_server_configs(app)
    if servers:
        from treadle.adapters.mcp.config import secret_values, stored_tokens
    for server in servers:
        key_envs += [server.bearer_token_env] if server.bearer_token_env else []
        signed_in = stored_tokens(mcp_auth_dir(), server.name) if server.oauth else []
        for index, value in enumerate([*secret_values(server), *signed_in]):
            configured[f"TREADLE_MCP_{server.name}_SECRET_{index}"] = value
    environ = settings_environment(os.environ)
    return Redactor.from_environ({**environ, **configured}, also=[*key_envs, *configured])


def open_telemetry(app: AppConfig, redactor: Redactor) -> Iterator[Telemetry | None]:
    """OpenTelemetry while the session runs, when an endpoint is configured (``[otel]``
    or ``OTEL_EXPORTER_OTLP_ENDPOINT``); its last spans and metrics are flushed at the
    end. Without one, nothing of OpenTelemetry is imported."""
    endpoint = app.otel.get("endpoint") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
    if not endpoint:
        yield None
        return
    try:
        from treadle.adapters.telemetry import Telemetry, TelemetryConfig
    except ImportError:
        print(
            "treadle: telemetry is configured but the otel extra is not installed "
            "(pip install 'treadle[otel]'); the session runs without it",
            file=sys.stderr,
        )
        yield None
        return
    config = TelemetryConfig(endpoint, bool(app.otel.get("log_prompts", False)))
    telemetry = Telemetry.start(config, app.model, redactor.redact)
    try:
        yield telemetry
    finally:
        telemetry.close()


def observed(transcript: SessionLog | None, telemetry: Telemetry | None) -> TranscriptStore | None:
    """The transcript the agent records to: the session's, seen by telemetry too."""
    if telemetry is None:
        return transcript
    from treadle.adapters.telemetry import TelemetryTee

    return TelemetryTee(transcript, telemetry.tracer)


def open_session_log(app: AppConfig, session_dir: str, redactor: Redactor) -> Iterator[str]:
    """The session's ``treadle.log`` while the session runs (no file without a session)."""
    if not session_dir:
        yield ""
        return
    with session_log(os.path.join(session_dir, LOG_FILE), redactor.redact, app.log_level) as path:
        yield path


def open_transcript(
    app: AppConfig, session_dir: str, redactor: Redactor, screen: Terminal
) -> Iterator[SessionLog | None]:
    """The session's transcript and record, in ``session_dir`` (created when new), held
    with the session's lock while it is open.

    Raises SessionBusy when another treadle holds the session, SessionUnusable when the
    state folder cannot hold it; a write that fails later is a notice, not the turn's end.
    """
    if not session_dir:
        yield None
        return
    folder = Path(session_dir)
    lock = SessionLock(folder)
    refuse_unless_a_file(folder / TRANSCRIPT)  # a FIFO would block its opening for ever
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock.acquire()
        if not (folder / META).is_file():
            SessionStore(folder.parent, redactor.redact).create(
                folder.name,
                workspace=os.path.realpath(app.workspace),
                model=app.model,
                base_url=app.base_url,
                settings={key: getattr(app, key) for key in RECORDED_SETTINGS},
            )
        transcript = JsonlTranscript(folder / TRANSCRIPT, redact=redactor)
        transcript.open()
    except OSError as error:
        lock.release()
        where = error.filename or folder
        raise SessionUnusable(
            f"cannot keep the session in {where}: {error.strerror or error} "
            "(TREADLE_STATE_DIR moves the state folder)"
        ) from None

    def tell(problem: str) -> None:
        screen.show(Notice("transcript_failed", problem))

    log = SessionLog(folder, transcript, redactor.redact, on_problem=tell, lock=lock)
    try:
        yield log
    finally:
        log.close()


def conversation_so_far(log: SessionLog | None) -> History:
    """A session folder that already holds a transcript is continued (``--resume``)."""
    try:
        history = log.conversation_so_far() if log is not None else None
    except OSError as error:  # the repairs it records could not be written
        raise SessionUnusable(
            f"cannot continue the session in {log.folder if log else ''}: {error.strerror or error}"
        ) from None
    return history if history is not None else History()


def context_so_far(
    log: SessionLog | None, history: History
) -> tuple[ContextState, ContextWindow | None]:
    """What a continued session's accounting knew, and its window (nothing when new)."""
    if log is None:
        return ContextState(messages=len(history)), None
    return log.context_so_far(history)


def subagents_so_far(log: SessionLog | None, history: History) -> int:
    """The number of the last sub-agent a continued session started (its next is
    numbered after it); 0 when new. ``history`` is rebuilt first, reading the record."""
    return log.subagents_so_far() if log is not None else 0


def build_settings(
    app: AppConfig,
    session_dir: str,
    interactive: bool,
    log_path: str,
    instructions: ProjectInstructions,
    redactor: Redactor | None = None,
) -> TurnSettings:
    approval = app.approval or ("ask" if interactive else "auto")
    if approval not in POLICIES:
        raise ValueError(f"approval must be one of {', '.join(POLICIES)}, not {approval!r}")
    max_tokens = app.max_tokens if app.max_tokens is not None else DEFAULT_MAX_TOKENS
    return TurnSettings(
        workspace=os.path.realpath(app.workspace),
        session_dir=session_dir,
        instructions=instructions.text,
        budget=TokenBudget(
            max_tokens,
            app.token_growth,
            app.max_tokens_cap,
            app.continuations,
            app.thinking_budget,
        ),
        context=context_settings(app),
        approval=approval,
        allowed_prefixes=app.allowed_prefixes,
        limits=ToolLimits(
            default_timeout=app.tool_timeout,
            max_timeout=app.tool_timeout_max,
            output_limit=app.output_limit,
            passthrough_env=app.env_passthrough,
            background_limit=app.background_limit,
        ),
        subagents=SubAgentClocks(app.subagent_check_interval, app.subagent_deadline),
        subagent_depth=app.subagent_depth,
        mcp_tool_budget=app.mcp_tool_budget,
        log_path=log_path,
        prices=model_prices(app),
        output=output_contract_of(app),
        spending=SpendingLimits(app.max_cost, app.max_tokens_total, app.max_requests, app.max_time),
        # Estimated as recorded: a replay of the transcript sends the same max_tokens.
        recorded=redactor.redact_value if redactor is not None else as_is,
    )


def output_contract_of(app: AppConfig) -> OutputContract | None:
    """The final answer's contract, when an output schema is configured; SchemaUnusable
    says why the file cannot be one (checked before the session starts)."""
    if not app.output_schema:
        return None
    from treadle.adapters.output_schema import load_output_schema  # jsonschema: only then

    return load_output_schema(Path(app.workspace, app.output_schema))


def context_settings(app: AppConfig) -> ContextSettings:
    """How the conversation is kept within the window: the configured window (if any)
    with its origin, the threshold, and whether the budget follows the window."""
    window = None
    if app.context_window is not None:
        window = ContextWindow(
            app.context_window, f"configuration ({app.origin('context_window')})"
        )
    return ContextSettings(
        window=window,
        compact_at=app.compact_at,
        follow_window=app.max_tokens is None,
    )


def build_agent(
    ports: TurnPorts,
    settings: TurnSettings,
    tools: list[Tool],
    history: History,
    leave: LeaveNow,
    resumed: tuple[ContextState, ContextWindow | None],
    subagents_started: int = 0,
) -> Agent:
    """The session's agent; leaving at once records its running turn as paused."""
    state, window = resumed
    agent = Agent(
        ports,
        settings,
        tools,
        history=history,
        context=state,
        window=SharedWindow(window),
        subagents_started=subagents_started,
    )
    leave.record = agent.abandon_turn
    return agent
