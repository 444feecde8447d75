"""``treadle acp``: treadle as an Agent Client Protocol agent, for editors (issue 24).

JSON-RPC over stdin and stdout, through the official SDK (``agent-client-protocol``).
Each ACP session is a treadle session of its own, with its transcript, checkpoints and
container, in the folder the client names; ``session/prompt`` runs one turn on it,
``session/cancel`` stops that turn as Esc does (every command's tree killed, the turn
paused with a valid conversation), ``session/load`` continues any recorded session.
The approval policies are the session's modes. stdout carries nothing but protocol
messages: whatever else would be printed goes to stderr, the tracebacks to the
session's ``treadle.log``. When the client closes stdin, or a signal comes, every turn
is stopped, every session closed and treadle exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from acp import PROTOCOL_VERSION, RequestError
from acp.agent.connection import AgentSideConnection
from acp.helpers import update_agent_message_text, update_current_mode
from acp.interfaces import Agent as AcpAgent
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ElicitationCapabilities,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
    TextContentBlock,
    TextResourceContents,
)

from treadle import __version__
from treadle.adapters.acp.terminal import AcpTerminal
from treadle.adapters.acp.updates import history_updates
from treadle.adapters.transcript.sessions import (
    MetaDamaged,
    SessionBusy,
    SessionNotFound,
    SessionStore,
)
from treadle.domain.loop.stop import StoppedFirst, StopSignal
from treadle.domain.loop.turn import Agent
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome
from treadle.domain.values.text import well_formed
from treadle.entrypoints.config import USAGE_ERROR, AppConfig, ConfigError, load_config
from treadle.entrypoints.config_rules import check_together
from treadle.entrypoints.container import (
    Container,
    ModelNotConfigured,
    collect_from_now_on,
    end_session,
    session_container,
    start_session,
    unusable_session,
)
from treadle.entrypoints.injector import providers
from treadle.entrypoints.paths import sessions_dir
from treadle.entrypoints.session import missing_key, new_session_id
from treadle.ports.model import Model

log = logging.getLogger("treadle.acp")

MODES = (
    SessionMode(id="ask", name="Ask", description="ask before a call that writes or runs"),
    SessionMode(id="auto", name="Auto", description="run calls without asking"),
    SessionMode(id="read-only", name="Read only", description="refuse calls that write or run"),
)
"""treadle's approval policies, as ACP session modes."""

STOP_REASONS: dict[OutcomeKind, StopReason] = {
    OutcomeKind.FINISHED: "end_turn",
    OutcomeKind.PAUSED: "cancelled",
    OutcomeKind.FAILED: "end_turn",
    OutcomeKind.BLOCKED: "end_turn",
    OutcomeKind.WAITING: "end_turn",
}
"""How a turn's outcome ends an ACP prompt; every one but finished and paused also says
its line, so that the person sees why."""

MODEL_OPTION = "model"
"""The id of the session's configuration option that chooses its model."""

STOPPING = 5.0
"""The longest the end waits for the stopped turns to record how they ended."""


def stop_reason(outcome: TurnOutcome) -> StopReason:
    return STOP_REASONS[outcome.kind]


@dataclass
class AcpSession:
    """One session the client opened: its container, agent, screen and running turn."""

    id: str
    container: Container
    agent: Agent
    terminal: AcpTerminal
    stop: StopSignal | None = None
    turn: asyncio.Task[TurnOutcome] | None = None
    model: str = ""
    """The model answering, as the person named it (``--model``, or chosen since)."""
    next_model: Model | None = None
    """A model chosen while a turn ran: it answers from the next turn on."""


class TreadleAgent:
    """The ACP ``Agent`` side: each request, answered from treadle's sessions."""

    def __init__(self, flags: dict[str, object], models: Sequence[str] = ()) -> None:
        self.flags = flags
        self.models = tuple(models)
        """The models ``--models`` offers the editor, beside each session's own."""
        self.client: Client | None = None
        self.sessions: dict[str, AcpSession] = {}
        self.elicitation: ElicitationCapabilities | None = None
        """Which of a server's questions the editor can show (its ``initialize``)."""

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **_: Any,
    ) -> InitializeResponse:
        self.elicitation = getattr(client_capabilities, "elicitation", None)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
            ),
            agent_info=Implementation(name="treadle", title="treadle", version=__version__),
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        return None

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any) -> NewSessionResponse:
        app = with_client_servers(self._config(cwd), mcp_servers or [])
        session = await self._open(app, new_session_id(), resuming=False)
        return NewSessionResponse(
            session_id=session.id, modes=self._modes(session), config_options=self._options(session)
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any
    ) -> LoadSessionResponse:
        if session_id in self.sessions:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "open already"})
        store = SessionStore(sessions_dir())
        try:
            found = store.find(session_id)
            meta = store.meta(found)
        except (SessionNotFound, MetaDamaged) as error:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "reason": str(error)}
            ) from None
        recorded = {"model": meta.model, "base_url": meta.base_url, "workspace": meta.workspace}
        app = with_client_servers(self._config(cwd, session=(found, recorded)), mcp_servers or [])
        session = await self._open(app, found, resuming=True)
        session.terminal.send(*history_updates(list(session.agent.history.messages)))
        await session.terminal.flush()
        return LoadSessionResponse(
            modes=self._modes(session), config_options=self._options(session)
        )

    async def set_session_mode(
        self, mode_id: str, session_id: str, **_: Any
    ) -> SetSessionModeResponse:
        session = self._session(session_id)
        if mode_id not in {mode.id for mode in MODES}:
            known = ", ".join(mode.id for mode in MODES)
            raise RequestError.invalid_params({"modeId": mode_id, "reason": f"one of {known}"})
        agent = session.agent
        agent.settings = dataclasses.replace(agent.settings, approval=mode_id)  # type: ignore[arg-type]
        session.terminal.send(update_current_mode(mode_id))
        await session.terminal.flush()
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        """The editor chose a model: it answers from the next request of a turn not yet
        started (a turn running goes on with the model it began with)."""
        session = self._session(session_id)
        if config_id != MODEL_OPTION:
            raise RequestError.invalid_params({"configId": config_id, "reason": "no such option"})
        offered = self._offered(session)
        if not isinstance(value, str) or value not in offered:
            reason = f"one of {', '.join(offered)}"
            raise RequestError.invalid_params({"value": value, "reason": reason})
        if value != session.model:
            try:
                model = session.container.models()(value)
            except ModelNotConfigured as error:
                raise RequestError.invalid_params({"value": value, "reason": str(error)}) from None
            session.model = value
            if session.stop is None:
                use_model(session.agent, model)
            else:
                session.next_model = model
            log.info("session %s: the model is now %s", session.id, value)
        return SetSessionConfigOptionResponse(config_options=self._options(session))

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        session = self._session(session_id)
        if session.stop is not None:
            raise RequestError.invalid_request({"reason": "a turn is running in this session"})
        task = prompt_text(prompt)
        if not task.strip():
            raise RequestError.invalid_params({"reason": "the prompt holds no text"})
        if session.next_model is not None:
            use_model(session.agent, session.next_model)
            session.next_model = None
        stop = StopSignal()
        session.stop = stop
        session.turn = asyncio.ensure_future(session.agent.run_turn(task, stop))
        try:
            outcome = await asyncio.shield(session.turn)
        finally:
            session.stop = None
        terminal = session.terminal
        if outcome.kind is not OutcomeKind.FINISHED:
            terminal.send(update_agent_message_text(f"\n\n{outcome.screen_line}\n"))
        await terminal.flush()
        return PromptResponse(stop_reason=stop_reason(outcome))

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.stop is not None:
            session.stop.set("interrupted")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # Sessions -------------------------------------------------------------------

    def _config(self, cwd: str, session: tuple[str, dict[str, str]] | None = None) -> AppConfig:
        if not os.path.isabs(cwd):
            raise RequestError.invalid_params({"cwd": cwd, "reason": "not an absolute path"})
        try:
            app = load_config(flags=self.flags, environ=os.environ, session=session, cwd=cwd)
        except ConfigError as error:
            raise RequestError.invalid_params({"reason": str(error)}) from None
        missing = missing_key(app)
        if missing:
            raise RequestError.auth_required({"reason": missing})
        return app

    async def _open(self, app: AppConfig, session_id: str, *, resuming: bool) -> AcpSession:
        assert self.client is not None
        folder = str(sessions_dir() / session_id)
        container = session_container(app, mode="acp", session_dir=folder, resume_hint="")
        container.interactive.override(providers.Object(True))  # the editor answers approvals
        terminal = AcpTerminal(self.client, session_id, _real(app.workspace), self.elicitation)
        container.terminal.override(providers.Object(terminal))
        refused: tuple[type[Exception], ...] = (
            ModelNotConfigured,
            SessionBusy,
            *unusable_session(),
        )
        try:
            agent = await start_session(container)
        except refused as error:
            await end_session(container)
            raise RequestError.invalid_params({"reason": str(error)}) from None
        except BaseException:
            await end_session(container)
            raise
        if isinstance(agent, StoppedFirst):  # pragma: no cover - no stop before a session
            await end_session(container)
            raise RequestError.internal_error({"reason": "stopped while starting"})
        collect_from_now_on()
        container.leave_now().record = agent.abandon_turn
        session = AcpSession(session_id, container, agent, terminal, model=app.model)
        self.sessions[session_id] = session
        log.info(
            "session %s %s in %s", session_id, "resumed" if resuming else "opened", app.workspace
        )
        return session

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "reason": "no such session"}
            )
        return session

    def _modes(self, session: AcpSession) -> SessionModeState:
        return SessionModeState(
            current_mode_id=session.agent.settings.approval, available_modes=list(MODES)
        )

    def _offered(self, session: AcpSession) -> list[str]:
        return list(dict.fromkeys([session.model, *self.models]))

    def _options(self, session: AcpSession) -> list[Any]:
        """The session's configuration options: its model, among those offered."""
        choices = [
            SessionConfigSelectOption(value=name, name=name) for name in self._offered(session)
        ]
        return [
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION,
                name="Model",
                category="model",
                description="the model that answers, from the next turn on",
                current_value=session.model,
                options=choices,
            )
        ]

    async def close(self) -> None:
        """Stop every running turn (its commands with it) and close every session."""
        running = [s for s in self.sessions.values() if s.stop is not None]
        for session in running:
            assert session.stop is not None
            session.stop.set("interrupted")
        turns = [s.turn for s in running if s.turn is not None]
        if turns:  # a stopped turn ends in well under a second; never wait for ever
            await asyncio.wait(turns, timeout=STOPPING)
        for session in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await session.terminal.close()
            with contextlib.suppress(Exception):
                await end_session(session.container)
        self.sessions.clear()


def use_model(agent: Agent, model: Model) -> None:
    """``model`` answers ``agent`` and the sub-agents it starts from now on."""
    agent.responder.model = model
    agent.ports = dataclasses.replace(agent.ports, model=model)


CLIENT_SERVERS = "the editor (session/new)"
"""The origin of the MCP servers the editor adds to a session."""


def server_tables(servers: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """The editor's MCP servers as treadle's ``[mcp_servers.NAME]`` tables: a command's
    (stdio) or an address's (HTTP; SSE is not spoken and left out). A name treadle
    would refuse has its other characters made ``_``."""
    tables: dict[str, dict[str, Any]] = {}
    for server in servers:
        name = re.sub(r"[^A-Za-z0-9_-]", "_", str(getattr(server, "name", ""))) or "editor"
        if isinstance(server, McpServerStdio):
            table: dict[str, Any] = {"command": server.command, "args": list(server.args)}
            if server.env:
                table["env"] = {variable.name: variable.value for variable in server.env}
        elif isinstance(server, HttpMcpServer):
            table = {"url": server.url}
            if server.headers:
                table["headers"] = {header.name: header.value for header in server.headers}
        else:
            log.info("MCP server %s left out: treadle does not speak %s", name, type(server))
            continue
        tables[name] = table
    return tables


def with_client_servers(app: AppConfig, servers: Sequence[Any]) -> AppConfig:
    """``app`` with the editor's MCP servers beside its own (the editor's win a name):
    they are the person's own, as their configuration file is."""
    tables = server_tables(servers)
    if not tables:
        return app
    try:
        return check_together(app.with_values({"mcp_servers": tables}, CLIENT_SERVERS))
    except (ConfigError, ValueError) as error:
        raise RequestError.invalid_params({"mcpServers": str(error)}) from None


def _real(path: str) -> str:
    return os.path.realpath(path)


def prompt_text(blocks: Sequence[Any]) -> str:
    """The task a prompt's content blocks make: its text, and the text of the resources
    it embeds (a file the person attached), each headed by its name."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(f"<context uri={resource.uri!r}>\n{resource.text}\n</context>")
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"(see {block.uri})")
    return well_formed("\n\n".join(parts))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="treadle acp",
        description="treadle as an Agent Client Protocol agent on stdin and stdout (for editors)",
    )
    parser.add_argument("--model", help="the model (as for treadle)")
    parser.add_argument("--base-url", help="the model server")
    parser.add_argument("--approval", choices=[mode.id for mode in MODES])
    parser.add_argument("--sandbox", choices=["workspace-write", "read-only", "off"])
    parser.add_argument("--network", dest="sandbox_network", choices=["on", "off", "allowlist"])
    parser.add_argument(
        "--models",
        metavar="M1,M2",
        help="the models the editor may switch a session to, beside its own (comma-separated)",
    )
    return parser


def run_acp_command(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    offered = [name.strip() for name in (args.models or "").split(",") if name.strip()]
    args.models = None
    flags = {k: v for k, v in vars(args).items() if v is not None}
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    # From here on fd 1 is stderr: a stray print (ours, a library's) cannot break the
    # protocol, which alone writes to the real stdout.
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        asyncio.run(serve(TreadleAgent(flags, offered), protocol))
    except ConfigError as error:
        print(f"treadle: {error}", file=sys.stderr)
        return USAGE_ERROR
    return 0


async def serve(agent: TreadleAgent, protocol: Any) -> None:
    """Answer the client on stdin and ``protocol`` until stdin closes or a signal comes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, writing = await loop.connect_write_pipe(_WriteProtocol, protocol)
    writer = asyncio.StreamWriter(transport, writing, None, loop)
    connection = AgentSideConnection(cast(AcpAgent, agent), writer, reader, listening=False)
    listening = asyncio.ensure_future(connection.listen())
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, listening.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await listening
    finally:
        await agent.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(connection.close()), 1.0)


class _WriteProtocol(asyncio.streams.FlowControlMixin):
    """A pipe's writing side that ``StreamWriter.drain`` can wait on."""
