"""One MCP server for a session: started once, called from any task, stopped once.

The SDK's context managers (the transport, ``ClientSession``) hold anyio task groups
and cancel scopes, which only the task that entered them may leave. So one *owner*
task per server enters them, answers ``initialize`` and lists the tools, then waits
for the end (of the session, or of the server) and leaves them itself. Calls come
from any task.

Stopping a call (Esc, a caller's stop) cancels the task running it exactly once: the
SDK then tells the server (``notifications/cancelled``), and a second cancel during
that courtesy write would suppress it. A server that does not answer a ping after
an abandoned call is stopped, with everything it started. Over HTTP a call whose own
stream broke (the server died) fails at once, and is followed by the same ping.

Example::

    connection = McpConnection(config, workspace=".", passthrough=(), log_path="mcp.log")
    if await connection.start():
        match await connection.call("get_current_time", {"timezone": "UTC"}, timeout=30):
            case Success(answer): print(answer.text)
            case Failure(failure): print(failure.detail)
    await connection.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as mcp
from mcp.client._transport import TransportStreams
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from returns.result import Failure, Result, Success

from treadle import __version__
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.http import OVER_THE_LIMIT, MissingToken, http_transport
from treadle.adapters.mcp.oauth import SignInNeeded
from treadle.adapters.mcp.results import answer_of
from treadle.adapters.mcp.server_requests import form_request, sampled, sampling_request
from treadle.adapters.mcp.stdio import ServerProcess, stdio_transport
from treadle.adapters.mcp.values import (
    OVERSIZED,
    ListedPrompt,
    ListedResource,
    ListedTool,
    McpAnswer,
    McpCallFailure,
    PromptArgument,
)
from treadle.adapters.mcp.wire import ToolListRepair, first_problem
from treadle.adapters.process.tree import running_trees
from treadle.domain.rules.network import NetworkPolicy
from treadle.domain.values.text import one_line
from treadle.ports.tools import ToolContext

log = logging.getLogger(__name__)


class _IntoTreadlesLog(logging.Handler):
    """The SDK logs under ``mcp``: its records go where treadle's own go (the session's
    ``treadle.log``), and never to the screen, where Python's last-resort handler
    would print them."""

    def emit(self, record: logging.LogRecord) -> None:
        log.handle(record)


_sdk_log = logging.getLogger("mcp")
_sdk_log.addHandler(_IntoTreadlesLog())
_sdk_log.propagate = False

PROBE_TIMEOUT = 2.0
"""After an abandoned call, how long the server has to answer a ping before it is stopped."""

LIST_PAGES = 100
"""A server whose tool list never ends cannot hold the start up for ever."""

_UNANSWERED = "it stopped answering after a call {}; it was stopped"
_DROPPED = "it dropped the connection during a call, and cannot be reached"
_SESSION_CLOSED = "Connection closed"
"""The SDK's message when the session's streams end; its HTTP transport's own, when
one request's stream breaks, say how (``SSE stream ended without a response``)."""

State = Literal["new", "starting", "ready", "failed", "closed"]
CallResult = Result[McpAnswer, McpCallFailure]


class McpConnection:
    """A server's connection; ``on_failure`` hears, once, that a started server failed."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        workspace: str,
        passthrough: Collection[str],
        log_path: str,
        grace: float = 1.0,
        probe_timeout: float = PROBE_TIMEOUT,
        on_failure: Callable[[str], None] = lambda why: None,
        on_change: Callable[[str, str], None] = lambda server, what: None,
        auth_dir: str = "",
        network: NetworkPolicy | None = None,
        on_tokens: Callable[[Sequence[str]], None] | None = None,
    ) -> None:
        self.config = config
        self._network = network if network is not None else NetworkPolicy()
        """What a server started by a command may reach (the session's, or its own)."""
        self.state: State = "new"
        self.error = ""
        self.server_info = ""
        self.tools: tuple[ListedTool, ...] = ()
        self.notes: tuple[str, ...] = ()
        """What was mended in its tool list (a tool left out, or offered without arguments)."""
        self.startup_seconds = 0.0
        self._workspace = workspace
        self._passthrough = passthrough
        self._log_path = log_path
        self._probe_timeout = probe_timeout
        self._on_failure = on_failure
        self._on_change = on_change
        self._on_tokens = on_tokens
        """Hears the OAuth tokens it refreshes (the session's redactor adds them)."""
        self._auth_dir = auth_dir
        """Hears ``(server, "tools" | "resources" | "prompts")`` when a list changed."""
        self.prompts: tuple[ListedPrompt, ...] = ()
        self.has_resources = False
        self._process = ServerProcess(grace=grace)
        self._http_status: int | None = None
        self._repair = ToolListRepair()
        self._phase = "initialize"
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._ready: asyncio.Future[None] | None = None
        self._stop = anyio.Event()
        self._finished = anyio.Event()
        self._background: set[asyncio.Future[Any]] = set()
        self._dropped = False
        self._calling: list[ToolContext] = []
        """The contexts of the calls running now, the latest last: a server's question
        or request for a completion mid-call goes to the latest."""
        self.protocol_version = ""
        self._relisting: set[asyncio.Future[Any]] = set()

    @property
    def name(self) -> str:
        return self.config.name

    # Starting and stopping -------------------------------------------------------

    async def start(self) -> bool:
        """Start the server and list its tools, within ``startup_timeout``.

        Never raises for the server's own faults: False, and ``error`` says why.
        """
        self.state = "starting"
        started = time.monotonic()
        self._ready = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(self._own(), name=f"MCP server {self.name}")
        timeout = self.config.startup_timeout
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            await self._end(hard=True)
            self._fail(f"no answer to initialize within {timeout:g} s{self._stderr_tail()}")
            return False
        except asyncio.CancelledError:
            await asyncio.shield(self._end(hard=True))
            raise
        except Exception as error:
            await self._end(hard=True)
            self._fail(self._startup_failure(error))
            return False
        self.startup_seconds = time.monotonic() - started
        self.state = "ready"
        return True

    async def close(self) -> None:
        """Stop the server and all it started; calls still running fail."""
        if self._background:
            # A cancelled call's notification, or a probe, is on its way: let it finish.
            await asyncio.wait(self._background, timeout=self._probe_timeout + 1)
            for task in self._background:
                task.cancel()
        await self._end(hard=False)
        if self.state != "failed":
            self.state = "closed"

    def kill_now(self) -> None:
        """SIGKILL the server and all it started, without waiting (a last resort)."""
        tree = running_trees.get(self._process.pid or -1)
        if tree is not None:
            tree.kill_now()

    async def _own(self) -> None:
        """The owner task: the only one that enters and leaves the SDK's context managers."""
        assert self._ready is not None
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with contextlib.AsyncExitStack() as stack:
                    streams = await stack.enter_async_context(self._transport())
                    read, write = self._repair.around(streams)
                    session = await stack.enter_async_context(
                        ClientSession(
                            read,
                            write,
                            client_info=mcp.Implementation(name="treadle", version=__version__),
                            message_handler=self._on_message,
                            elicitation_callback=self._on_elicitation,
                            sampling_callback=self._on_sampling,
                        )
                    )
                    result = await session.initialize()
                    self.server_info = f"{result.server_info.name} {result.server_info.version}"
                    self.protocol_version = str(result.protocol_version)
                    self._repair.version = result.protocol_version
                    self._phase = "tools/list"
                    self.tools, again = _once_each(await _listed_tools(session))
                    self.notes = (*self._repair.notes, *again)
                    offers = result.capabilities
                    self.has_resources = offers.resources is not None
                    if offers.prompts is not None:
                        self._phase = "prompts/list"
                        self.prompts = await _listed_prompts(session)
                    self._session = session
                    self._ready.set_result(None)
                    await self._until_the_end()
                    self._session = None
            if self._process.ended.is_set() and not self._stop.is_set():
                self._fail(self._why_it_ended())
        except Exception as error:
            if not self._ready.done():
                self._ready.set_exception(error)
            else:
                log.warning("MCP server %s failed", self.name, exc_info=True)
                # After a dropped call, the transport fails on its next request.
                self._fail(_DROPPED if self._dropped else describe(error))
        finally:
            self._session = None
            self._finished.set()
            if not self._ready.done():  # stopped while starting: start() said why
                self._ready.cancel()

    def _transport(self) -> contextlib.AbstractAsyncContextManager[TransportStreams]:
        if self.config.transport == "stdio":
            return stdio_transport(
                self.config,
                workspace=self._workspace,
                passthrough=self._passthrough,
                log_path=self._log_path,
                process_state=self._process,
                network=self._network,
            )
        auth = None
        if self.config.oauth:
            from treadle.adapters.mcp.oauth import session_auth

            auth = session_auth(self.config, self._auth_dir, self._on_tokens)
        return http_transport(self.config, self._remember_status, auth)

    def _remember_status(self, status: int) -> None:
        self._http_status = status

    async def _until_the_end(self) -> None:
        """Wait for the session's end, or for the server's (its output ended)."""
        async with anyio.create_task_group() as waiting:

            async def end_when(event: anyio.Event) -> None:
                await event.wait()
                waiting.cancel_scope.cancel()

            waiting.start_soon(end_when, self._stop)
            if self.config.transport == "stdio":
                waiting.start_soon(end_when, self._process.ended)

    async def _end(self, *, hard: bool) -> None:
        """Make the owner leave (at once when ``hard``), and wait for it, bounded."""
        owner = self._owner
        if owner is None:
            return
        self._process.hard = self._process.hard or hard
        self._stop.set()
        if self._session is None and not owner.done():  # still starting: interrupt it
            if self._scope is not None:
                self._scope.cancel()
            else:
                owner.cancel()
        grace = self._process.grace
        done, _ = await asyncio.wait({owner}, timeout=3 * grace + 3)
        if not done:
            log.warning("MCP server %s did not stop in time; killing it", self.name)
            owner.cancel()
            await asyncio.wait({owner}, timeout=2)
        self.kill_now()

    def _fail(self, why: str) -> None:
        """Record the failure, once; a server that was ready is reported."""
        if self.error:
            return
        was_ready = self.state == "ready"
        self.error = why
        self.state = "failed"
        if was_ready:
            self._on_failure(why)

    # Calls ---------------------------------------------------------------------------

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout: float,
        context: ToolContext | None = None,
    ) -> CallResult:
        """Run ``tools/call`` for the server's tool ``tool`` within ``timeout`` seconds.

        Cancelling the awaiting task stops the call (the server is told) and re-raises.
        What the server asks meanwhile (a question, a completion) goes to ``context``.
        """
        session = self._session
        if session is None or self.state != "ready":
            why = self.error or "it was stopped"
            return Failure(
                McpCallFailure("not_running", f"the MCP server {self.name} is not running ({why})")
            )
        inner = asyncio.ensure_future(self._call(session, tool, arguments, timeout))
        if context is not None:
            self._calling.append(context)
        try:
            result = await asyncio.shield(inner)
            await self._relisted()
            return result
        except asyncio.CancelledError:
            if not inner.done():
                inner.cancel()  # exactly once: see the module's docstring
                self._keep(inner)
            raise
        finally:
            if context is not None:
                self._calling.remove(context)

    # What the server asks of treadle ------------------------------------------------

    async def _on_elicitation(
        self, context: ClientRequestContext, params: mcp.ElicitRequestParams
    ) -> mcp.ElicitResult | mcp.ErrorData:
        """A question for the person mid-call; outside a call, nobody is asked."""
        calling = self._calling[-1] if self._calling else None
        if calling is None:
            return mcp.ElicitResult(action="decline")
        answer = await calling.ask_form(form_request(self.name, params))
        if answer.action != "accept" or isinstance(params, mcp.ElicitRequestURLParams):
            return mcp.ElicitResult(action=answer.action)
        return mcp.ElicitResult(action="accept", content=dict(answer.content))

    async def _on_sampling(
        self, context: ClientRequestContext, params: mcp.CreateMessageRequestParams
    ) -> mcp.CreateMessageResult | mcp.CreateMessageResultWithTools | mcp.ErrorData:
        """A completion from the session's model, mid-call, as the policy allows."""
        calling = self._calling[-1] if self._calling else None
        if calling is None:
            return mcp.ErrorData(code=mcp.INVALID_REQUEST, message="no call is running")
        reply = await calling.sample(sampling_request(self.name, params))
        return sampled(reply)

    async def _call(
        self, session: ClientSession, tool: str, arguments: dict[str, Any], timeout: float
    ) -> CallResult:
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as error:
            if error.code == mcp.REQUEST_TIMEOUT:
                self._keep(asyncio.ensure_future(self._probe(_UNANSWERED.format("timed out"))))
                return Failure(
                    McpCallFailure(
                        "deadline",
                        f"no result within {timeout:g} s; the call was cancelled",
                    )
                )
            if OVER_THE_LIMIT in error.message:  # over HTTP: an event's, or a body's
                self._fail(f"treadle closed its connection for {OVERSIZED}")
                self._keep(asyncio.ensure_future(self._end(hard=True)))
                why = f"sent {OVERSIZED}; treadle closed its connection"
                return Failure(McpCallFailure("server_gone", f"the MCP server {self.name} {why}"))
            dropped = error.code == mcp.CONNECTION_CLOSED and error.message != _SESSION_CLOSED
            if dropped and self.config.transport == "http" and not self._stop.is_set():
                # This call's own stream broke (the server died, or a proxy cut it);
                # over HTTP the session goes on, and nothing else would say so.
                self._dropped = True
                self._keep(asyncio.ensure_future(self._probe(_DROPPED)))
                return Failure(
                    McpCallFailure(
                        "server_gone",
                        f"the MCP server {self.name} dropped the connection during the call",
                    )
                )
            if error.code == mcp.CONNECTION_CLOSED:
                with anyio.move_on_after(3 * self._process.grace + 3):
                    await self._finished.wait()  # for the reason it went away
                if self._process.oversized:
                    why = f"sent {OVERSIZED}; treadle stopped it"
                    return Failure(
                        McpCallFailure("server_gone", f"the MCP server {self.name} {why}")
                    )
                why = self.error or "the session is ending"
                return Failure(
                    McpCallFailure(
                        "server_gone",
                        f"the MCP server {self.name} went away during the call: {why}",
                    )
                )
            if error.code == mcp.PARSE_ERROR:  # an answer the transport could not read
                unreadable = f"the MCP server {self.name} sent an answer treadle cannot read"
                return Failure(McpCallFailure("protocol", f"{unreadable} ({_reason(error)})"))
            return Failure(McpCallFailure("protocol", f"MCP error {error.code}: {error.message}"))
        except asyncio.CancelledError:
            self._keep(asyncio.ensure_future(self._probe(_UNANSWERED.format("was cancelled"))))
            raise
        except (RuntimeError, ValidationError) as error:
            # A result that is not a tool's result, does not match the tool's
            # outputSchema, or is an input request.
            why = first_problem(error) if isinstance(error, ValidationError) else str(error)
            unusable = f"the MCP server {self.name} sent a result treadle cannot use ({why})"
            return Failure(McpCallFailure("protocol", unusable))
        except Exception as error:  # a server's fault the SDK did not foresee: not a bug of ours
            log.warning("a call to MCP server %s failed", self.name, exc_info=True)
            return Failure(McpCallFailure("protocol", f"the call failed: {describe(error)}"))
        return Success(answer_of(result))

    async def _probe(self, failure: str) -> None:
        """After an abandoned call or a dropped one: a server that answers anything is
        alive; one that answers nothing in time is stopped (with all it started), and
        ``failure`` says why."""
        session = self._session
        if session is None:
            return
        try:
            await session.send_request(
                mcp.PingRequest(), mcp.EmptyResult, request_read_timeout_seconds=self._probe_timeout
            )
            return
        except MCPError as error:
            if error.code not in (mcp.REQUEST_TIMEOUT, mcp.CONNECTION_CLOSED):
                return  # an answer, even an error: it is listening
        except Exception:
            log.debug("ping to MCP server %s failed", self.name, exc_info=True)
        if self._stop.is_set():
            return
        self._fail(failure)
        await self._end(hard=True)

    def _keep(self, task: asyncio.Future[Any]) -> None:
        """Hold a background task until it ends (asyncio keeps only weak references)."""
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _on_message(self, message: object) -> None:
        if isinstance(message, Exception):
            log.debug("MCP server %s sent something unreadable: %s", self.name, message)
            return
        log.debug("MCP server %s notified: %s", self.name, type(message).__name__)
        # Listed again on a task of its own: a request awaited here would hold up the
        # reading of its own answer.
        if isinstance(message, mcp.ToolListChangedNotification):
            self._relist(asyncio.ensure_future(self._list_again("tools")))
        elif isinstance(message, mcp.PromptListChangedNotification):
            self._relist(asyncio.ensure_future(self._list_again("prompts")))
        elif isinstance(message, mcp.ResourceListChangedNotification):
            self._on_change(self.name, "resources")  # listed when asked for: nothing kept

    def _relist(self, task: asyncio.Future[Any]) -> None:
        self._keep(task)
        self._relisting.add(task)
        task.add_done_callback(self._relisting.discard)

    async def _relisted(self) -> None:
        """A call that changed the server's tools (it said so before its result) ends
        once they are listed again: the next request offers the new ones."""
        await asyncio.sleep(0)  # the notification's handler, if it came first, runs now
        if self._relisting:
            await asyncio.wait(set(self._relisting), timeout=self._probe_timeout)

    async def _list_again(self, what: Literal["tools", "prompts"]) -> None:
        """A list the server says changed, listed again (after start-up: before it, the
        first listing is still to come)."""
        session = self._session
        if session is None or self.state != "ready":
            return
        try:
            if what == "tools":
                tools, notes = _once_each(await _listed_tools(session))
                self.tools, self.notes = tools, (*self._repair.notes, *notes)
            else:
                self.prompts = await _listed_prompts(session)
        except Exception:
            log.warning(
                "MCP server %s: its %s could not be listed again", self.name, what, exc_info=True
            )
            return
        self._on_change(self.name, what)

    # Resources and prompts ---------------------------------------------------------------

    async def resources(self, timeout: float) -> Result[tuple[ListedResource, ...], McpCallFailure]:
        """The resources the server lists, and its templates of resources."""

        async def listed(session: ClientSession) -> tuple[ListedResource, ...]:
            found: list[ListedResource] = []
            cursor: str | None = None
            for _ in range(LIST_PAGES):
                params = mcp.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_resources(params=params)
                found += [
                    ListedResource(str(r.uri), r.name, r.description or "", r.mime_type or "")
                    for r in page.resources
                ]
                cursor = page.next_cursor
                if not cursor:
                    break
            with contextlib.suppress(MCPError):  # a server without templates may refuse
                templates = await session.list_resource_templates()
                found += [
                    ListedResource(
                        t.uri_template, t.name, t.description or "", t.mime_type or "", True
                    )
                    for t in templates.resource_templates
                ]
            return tuple(found)

        return await self._request(listed, timeout)

    async def read_resource(self, uri: str, timeout: float) -> Result[McpAnswer, McpCallFailure]:
        """A resource's contents: text as it is, binary data described by size and type."""

        async def read(session: ClientSession) -> McpAnswer:
            result = await session.read_resource(uri)
            assert isinstance(result, mcp.ReadResourceResult)
            parts = []
            for content in result.contents:
                if isinstance(content, mcp.TextResourceContents):
                    parts.append(content.text)
                else:
                    size = len(content.blob) * 3 // 4
                    kind = content.mime_type or "binary data"
                    parts.append(f"[{kind}, about {size} bytes, at {content.uri}]")
            return McpAnswer("\n".join(parts))

        return await self._request(read, timeout)

    async def get_prompt(
        self, name: str, arguments: dict[str, str], timeout: float
    ) -> Result[str, McpCallFailure]:
        """A prompt's messages, as the text of one task (each message's role named
        when more than one speaks)."""

        async def expanded(session: ClientSession) -> str:
            result = await session.get_prompt(name, arguments)
            assert isinstance(result, mcp.GetPromptResult)
            parts = []
            for message in result.messages:
                content = message.content
                if isinstance(content, mcp.TextContent):
                    text = content.text
                elif isinstance(content, mcp.EmbeddedResource):
                    inner = content.resource
                    text = (
                        inner.text
                        if isinstance(inner, mcp.TextResourceContents)
                        else (f"[{inner.mime_type or 'binary data'} at {inner.uri}]")
                    )
                else:
                    text = f"[{getattr(content, 'type', 'content')} left out]"
                roles = {m.role for m in result.messages}
                parts.append(text if roles == {"user"} else f"{message.role}: {text}")
            return "\n\n".join(parts)

        return await self._request(expanded, timeout)

    async def _request(
        self, asked: Callable[[ClientSession], Any], timeout: float
    ) -> Result[Any, McpCallFailure]:
        """One request of ours (not a tool's call), within ``timeout``; its failure as
        a value that says why."""
        session = self._session
        if session is None or self.state != "ready":
            why = self.error or "it was stopped"
            return Failure(
                McpCallFailure("not_running", f"the MCP server {self.name} is not running ({why})")
            )
        try:
            with anyio.fail_after(timeout):
                return Success(await asked(session))
        except TimeoutError:
            return Failure(McpCallFailure("deadline", f"no answer within {timeout:g} s"))
        except MCPError as error:
            return Failure(McpCallFailure("protocol", f"MCP error {error.code}: {error.message}"))
        except (RuntimeError, ValidationError, AssertionError) as error:
            why = first_problem(error) if isinstance(error, ValidationError) else str(error)
            return Failure(McpCallFailure("protocol", f"an answer treadle cannot use ({why})"))

    # Saying what happened ----------------------------------------------------------------

    def _why_it_ended(self) -> str:
        if self._process.oversized:
            return f"treadle stopped it for {OVERSIZED}"
        where = f" (its stderr is in {self._log_path})" if self.config.transport == "stdio" else ""
        return f"it {self._ending()}{where}"

    def _ending(self) -> str:
        if self._process.oversized:
            return f"sent {OVERSIZED}, so treadle stopped it"
        code = self._process.exit_code
        if code is None:
            return "closed its output"
        if code < 0:
            return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def _startup_failure(self, error: Exception) -> str:
        """Why the start failed, from the error (perhaps in task groups) it ended with."""
        causes = list(_leaves(error))
        if token := next(
            (cause for cause in causes if isinstance(cause, MissingToken | SignInNeeded)), None
        ):
            return str(token)
        if isinstance(error, OSError) and self._process.pid is None:
            return f"cannot start {self.config.command}: {error.strerror or error}"
        went_away = any(
            isinstance(cause, MCPError) and cause.code == mcp.CONNECTION_CLOSED for cause in causes
        )
        if went_away and self._process.exit_code is not None:
            return f"{self._ending()} before answering {self._phase}{self._stderr_tail()}"
        if unreadable := next((c for c in causes if isinstance(c, ValidationError)), None):
            return f"its answer to {self._phase} is not valid MCP ({first_problem(unreadable)})"
        if self._http_status is not None:
            return f"HTTP {self._http_status} from {self.config.url}"
        return describe(error) + self._stderr_tail()

    def _stderr_tail(self) -> str:
        """The last line the server wrote to its stderr, as a hint to what went wrong."""
        if self.config.transport != "stdio":
            return ""
        try:
            with open(self._log_path, "rb") as errors:
                errors.seek(0, 2)
                errors.seek(max(0, errors.tell() - 4096))
                lines = errors.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        return f" (its last words: {last[:200]})" if last else ""


async def _listed_tools(session: ClientSession) -> tuple[ListedTool, ...]:
    tools: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        params = mcp.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        for tool in page.tools:
            hints = tool.annotations
            tools.append(
                ListedTool(
                    name=tool.name,
                    description=tool.description or tool.title or "",
                    input_schema=tool.input_schema,
                    read_only=hints is not None and hints.read_only_hint is True,
                )
            )
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools)


async def _listed_prompts(session: ClientSession) -> tuple[ListedPrompt, ...]:
    prompts: list[ListedPrompt] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        params = mcp.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_prompts(params=params)
        for prompt in page.prompts:
            arguments = tuple(
                PromptArgument(a.name, a.description or "", bool(a.required))
                for a in prompt.arguments or ()
            )
            prompts.append(
                ListedPrompt(prompt.name, prompt.description or prompt.title or "", arguments)
            )
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(prompts)


def _once_each(tools: tuple[ListedTool, ...]) -> tuple[tuple[ListedTool, ...], list[str]]:
    """The tools, each name once (as first listed: a call names only the tool), and
    a note for each name listed more than once."""
    kept: dict[str, ListedTool] = {}
    notes: list[str] = []
    for tool in tools:
        note = f"tool {json.dumps(tool.name, ensure_ascii=False)} is listed more than once"
        if tool.name not in kept:
            kept[tool.name] = tool
        elif note + "; it is offered once" not in notes:
            notes.append(note + "; it is offered once")
    return tuple(kept.values()), notes


def _reason(error: MCPError) -> str:
    """The gist of an error the SDK made of a parser's report: its line that says
    what is wrong (pydantic's report has it under a heading), on one line."""
    lines = [line.strip() for line in error.message.splitlines() if line.strip()]
    said = [line for line in lines[1:] if not line.startswith("For further information")]
    return one_line((said or lines or ["no reason given"])[0].split(" [type=")[0], 200)


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """The errors inside the task groups that wrapped ``error``."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def describe(error: BaseException) -> str:
    """One line for an error, whatever task group wrapped it."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    if isinstance(error, MCPError):
        return f"MCP error {error.code}: {error.message}"
    if isinstance(error, SignInNeeded):
        return str(error)
    if isinstance(error, httpx2.ConnectError):
        return f"cannot connect: {_refusal(error)}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _refusal(error: BaseException) -> str:
    """The system's word for a failed connection (``connection refused``), found under
    the layers httpx wraps it in, or the error's own."""
    cause: BaseException | None = error
    for _ in range(10):
        if cause is None:
            break
        if isinstance(cause, OSError) and cause.errno is not None:
            return os.strerror(cause.errno).lower()
        cause = cause.__cause__ or cause.__context__
    return str(error)
