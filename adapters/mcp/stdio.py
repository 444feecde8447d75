"""The stdio transport, on treadle's own process machinery rather than the SDK's.

The server runs in its own session and process group with the environment commands
get (secrets left out unless let through, the server's ``env`` on top) and the run's
and the watchdog's markers, so that whatever it starts is found and stopped with it
— at the end of the session, when it stops answering, on a second Ctrl-C
(``kill_every_command_now``) and, through the watchdog, after a ``kill -9`` of
treadle. Its stderr goes to a log file, never to the screen.

The streams follow the SDK's transport contract: one JSON-RPC message per line, read
into ``SessionMessage`` items (its strings well-formed, see :func:`.wire.message_of`;
or the exception a line that is not JSON raised), written back the same way. A
message over :data:`MAX_MESSAGE` bytes ends the connection.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field

import anyio
import anyio.abc
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from returns.result import Success

from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.values import MAX_MESSAGE, OVERSIZED
from treadle.adapters.mcp.wire import message_of
from treadle.adapters.process.environment import child_environment
from treadle.adapters.process.tree import (
    CommandTree,
    active_commands,
    become_subreaper,
    running_trees,
)
from treadle.adapters.process.watchdog import OWNER_MARKER, ensure_watchdog
from treadle.adapters.sandbox import Launch, Sandbox
from treadle.adapters.sandbox.spawner import Start, plan_start
from treadle.domain.rules.network import NetworkPolicy

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
HARD_GRACE = 0.2
"""Between SIGTERM and SIGKILL for a server that stopped answering."""
_POLL = 0.01


@dataclass
class ServerProcess:
    """What the connection knows of its server's process, and asks of its end.

    ``hard`` (set before the end) skips the grace a well-behaved server gets to exit
    after its stdin closes. ``ended`` is set when its stdout ends: it exited, closed
    its side of the connection, or sent a message over :data:`MAX_MESSAGE`
    (``oversized``), which ends it.
    """

    grace: float = 1.0
    hard: bool = False
    pid: int | None = None
    exit_code: int | None = None
    oversized: bool = False
    ended: anyio.Event = field(default_factory=anyio.Event)


def server_environment(
    config: McpServerConfig, passthrough: Collection[str], run_id: str
) -> dict[str, str]:
    """The commands' environment, the server's own ``env`` over it, and the markers."""
    return child_environment(
        os.environ, passthrough=passthrough, extra=config.env, run_id=run_id, owner=OWNER_MARKER
    )


def _launch(
    config: McpServerConfig, workspace: str, passthrough: Collection[str], run_id: str
) -> tuple[list[str], str, dict[str, str]]:
    """The command line, the folder (``cwd`` is relative to the workspace) and the
    environment to start the server with."""
    cwd = os.path.join(workspace, os.path.expanduser(config.cwd)) if config.cwd else workspace
    environment = server_environment(config, passthrough, run_id)
    environment.setdefault("PWD", os.path.abspath(cwd))
    return [os.path.expanduser(config.command), *config.args], cwd, environment


OPEN = NetworkPolicy()


@dataclass
class _Confined:
    """A server started under a network mode: its own sandbox (files not confined),
    the launch it made, and the exec helper's start."""

    box: Sandbox
    launch: Launch
    start: Start

    async def started(self, timeout: float) -> None:
        """Once the process exists: the proxy's port handed over (allowlist), and the
        helper's word that the server is confined, or OSError saying why not."""
        self.start.started()
        await anyio.to_thread.run_sync(self.launch.started)
        said = await self.start.said(timeout)
        if said.failure:
            raise OSError(f"the network sandbox could not be set up: {said.failure}")

    def close(self) -> None:
        self.start.close()
        self.launch.finished()
        self.box.close()


def _confinement(network: NetworkPolicy, workspace: str) -> _Confined | None:
    """How a server starts under ``network``: None when it keeps the network; OSError
    when the mode cannot be had (it fails closed, as commands do)."""
    if not network.confined:
        return None
    box = Sandbox("off", workspace, network=network, network_explicit=True)
    launched = box.launch()
    if not isinstance(launched, Success):
        box.close()
        raise OSError(launched.failure())
    launch = launched.unwrap()
    port = launch.proxy.port if launch.proxy is not None else 0
    start = plan_start(
        launch.ruleset,
        -1,
        native=False,
        network=launch.network,
        channel=launch.channel[1],
        port=port,
    )
    return _Confined(box, launch, start)


def _open_log(path: str) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)


@contextlib.asynccontextmanager
async def stdio_transport(
    config: McpServerConfig,
    *,
    workspace: str,
    passthrough: Collection[str],
    log_path: str,
    process_state: ServerProcess,
    network: NetworkPolicy = OPEN,
) -> AsyncIterator[TransportStreams]:
    """Start the server, yield its streams, and stop it and all it started on the way out.

    ``network`` is what it may reach, as commands do (the session's ``sandbox_network``
    or the server's own ``network``): under off or allowlist it starts through the
    sandbox's exec helper, Landlock's network rules and the socket filter in force
    (its files are not confined), with a proxy of its own under allowlist.

    Raises OSError when the command cannot be started, or not confined as asked.
    """
    run_id = os.urandom(16).hex()
    argv, cwd, environment = _launch(config, workspace, passthrough, run_id)
    confined = _confinement(network, workspace)
    if confined is not None:
        argv = [*confined.start.prefix, *argv]
        environment.update(confined.launch.env)
    become_subreaper()
    ensure_watchdog()
    errlog = _open_log(log_path)
    try:
        process = await anyio.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            cwd=cwd,
            env=environment,
            start_new_session=True,
            pass_fds=confined.start.pass_fds if confined is not None else (),
        )
    except BaseException:
        if confined is not None:
            confined.close()
        raise
    finally:
        os.close(errlog)  # the server holds its own copy
    if confined is not None:
        try:
            await confined.started(config.startup_timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            confined.close()
            raise
    pid = process_state.pid = process.pid
    # Registered like a command: cleanup never reaps it, and a hard exit kills it.
    active_commands.add(pid)
    tree = running_trees[pid] = CommandTree(pid, run_id)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as pumps:
            pumps.start_soon(_read_messages, process, read_send, process_state)
            pumps.start_soon(_write_messages, process, write_receive)
            try:
                yield read_receive, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, tree, process_state)
                pumps.cancel_scope.cancel()
    finally:
        if process.returncode is None:  # cancelled from outside during the stop
            tree.kill_now()
        if confined is not None:
            confined.close()
        process_state.exit_code = process.returncode
        active_commands.discard(pid)
        running_trees.pop(pid, None)
        for stream in (read_receive, write_send, read_send, write_receive):
            stream.close()
        _close_transport(process)


async def _read_messages(
    process: anyio.abc.Process,
    messages: anyio.abc.ObjectSendStream[SessionMessage | Exception],
    process_state: ServerProcess,
) -> None:
    """Lines from the server's stdout, as messages, until it ends or grows too long."""
    assert process.stdout is not None
    buffer = bytearray()
    searched = 0
    try:
        async with messages:
            while True:
                try:
                    chunk = await process.stdout.receive(CHUNK)
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                buffer += chunk
                while (end := buffer.find(b"\n", searched)) >= 0:
                    line = bytes(buffer[:end])
                    del buffer[: end + 1]
                    searched = 0
                    if line.strip():
                        await messages.send(message_of(line))
                searched = len(buffer)
                if len(buffer) > MAX_MESSAGE:
                    log.warning("MCP server %s sent %s", process.pid, OVERSIZED)
                    process_state.oversized = process_state.hard = True
                    return
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return  # the session has gone
    finally:
        process_state.ended.set()


async def _write_messages(
    process: anyio.abc.Process, messages: anyio.abc.ObjectReceiveStream[SessionMessage]
) -> None:
    assert process.stdin is not None
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with messages:
            async for message in messages:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(line.encode() + b"\n")


async def _stop(process: anyio.abc.Process, tree: CommandTree, state: ServerProcess) -> None:
    """Close stdin and give the server its grace to leave; then stop the whole tree
    (also when the server left: what it started may still run in its group)."""
    await _close(process.stdin)
    if not state.hard:
        await _exited(process, state.grace)
    await tree.stop(HARD_GRACE if state.hard else state.grace)
    # The event loop's child watcher collects the leader's status; wait for it.
    await _exited(process, 1.0)
    await _close(process.stdout)


async def _close(stream: anyio.abc.AsyncResource | None) -> None:
    if stream is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()


async def _exited(process: anyio.abc.Process, seconds: float) -> bool:
    """Poll the return code: ``process.wait()`` would also wait for the pipes to close,
    which a child holding them open delays without end."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:  # noqa: ASYNC110 - no event says it ended
            await anyio.sleep(_POLL)
    return process.returncode is not None


def _close_transport(process: anyio.abc.Process) -> None:
    """Close the event loop's transport of the process, without waiting on it (anyio's
    ``aclose`` would wait). Nothing public reaches it, so the SDK does the same walk."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, ProcessLookupError):
            close()
