"""The Terminal port over the Agent Client Protocol: an editor sees the turn and answers.

Events become session updates (:mod:`.updates`), sent in order by one task so that a
chunk of text never overtakes the call before it; adjacent chunks of text are sent
as one. An approval is ``session/request_permission``; a client that cannot answer,
or cancels, refuses the call. A question the model asks goes to the editor as text,
and the turn ends waiting for the person's next prompt, as it does headless. An MCP
server's question (elicitation) is the SDK's ``elicitation/create`` (unstable in ACP)
when the editor declared it can show that kind (a form, an address); otherwise it is
declined, as headless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

from acp.helpers import text_block, tool_content, update_agent_message_text
from acp.interfaces import Client
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    ElicitationCapabilities,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationUrlSessionMode,
    PermissionOption,
    TextContentBlock,
    ToolCallUpdate,
)

from treadle.adapters.acp.updates import EDITS, FileChange, Updates, call_path, tool_kind
from treadle.domain.rules.elicitation import form_schema, read_content
from treadle.domain.values.conversation import ToolCall
from treadle.domain.values.events import ToolFinished, ToolStarted, TurnEvent
from treadle.domain.values.server_requests import FormAnswer, FormRequest
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest

log = logging.getLogger("treadle.acp")

LARGEST_DIFFED = 1024 * 1024
"""The largest file whose whole text goes with an edit's diff; beyond, the unified diff."""

ANSWERS: dict[str, ApprovalAnswer] = {"once": "yes", "always": "always", "reject": "no"}


class AcpTerminal:
    """Shows one ACP session's turns to its client."""

    def __init__(
        self,
        client: Client,
        session_id: str,
        workspace: str,
        elicitation: ElicitationCapabilities | None = None,
    ) -> None:
        self.client = client
        self.elicitation = elicitation
        """What the editor said it can show of a server's questions (None: nothing)."""
        self._elicited = 0
        self.session_id = session_id
        self.workspace = workspace
        self.updates = Updates(workspace)
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._before: dict[str, str | None] = {}
        self._interrupt: Callable[[], None] = lambda: None

    # The Terminal port ----------------------------------------------------------

    def show(self, event: TurnEvent) -> None:
        change = None
        if isinstance(event, ToolStarted) and event.call.name in EDITS:
            self._before[event.call.id] = self._read(event.call)
        elif isinstance(event, ToolFinished) and event.call.name in EDITS:
            path = self._path(event.call)
            if path:
                change = FileChange(
                    path, self._before.pop(event.call.id, None), self._read(event.call)
                )
        self.send(*self.updates.of(event, change))

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        call = ToolCall(request.call_id or f"approval-{id(request)}", request.tool, "{}")
        options = [PermissionOption(option_id="once", name="Allow once", kind="allow_once")]
        if request.prefix:
            always = f"Always allow {request.prefix}"
            options.append(PermissionOption(option_id="always", name=always, kind="allow_always"))
        options.append(PermissionOption(option_id="reject", name="Reject", kind="reject_once"))
        if request.call_id and request.call_id not in self.updates.known_calls:
            self.send(self.updates.announced(call, request.summary, request.agent))
        await self.flush()
        content: list[Any] | None = (
            [tool_content(text_block(request.diff))] if request.diff else None
        )
        asked = ToolCallUpdate(
            tool_call_id=call.id,
            title=f"{request.tool}: {request.summary}",
            kind=tool_kind(request.tool),
            status="pending",
            content=content,
        )
        try:
            reply = await self.client.request_permission(
                session_id=self.session_id, tool_call=asked, options=options
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("the client did not answer a permission request", exc_info=True)
            return "no"
        outcome = reply.outcome
        if isinstance(outcome, AllowedOutcome):
            return ANSWERS.get(outcome.option_id, "no")
        return "no"  # cancelled: the call is refused, the turn goes on (or stops)

    async def ask_question(self, question: str) -> str | None:
        self.send(update_agent_message_text(f"\n\n{question}\n\n"))
        return None  # the answer is the person's next prompt

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None:
        self._interrupt = interrupt

    async def ask_form(self, request: FormRequest) -> FormAnswer | None:
        """A server's question, put to the editor whole; None when it did not declare
        it can show this kind (the loop then declines it, as headless)."""
        can = self.elicitation
        mode: ElicitationFormSessionMode | ElicitationUrlSessionMode
        if can is None:
            return None
        if request.url:
            if can.url is None:
                return None
            self._elicited += 1
            mode = ElicitationUrlSessionMode(
                session_id=self.session_id,
                elicitation_id=f"treadle-{self._elicited}",
                url=request.url,  # type: ignore[arg-type]
            )
        else:
            if can.form is None:
                return None
            schema = ElicitationSchema.model_validate(form_schema(request.fields))
            mode = ElicitationFormSessionMode(session_id=self.session_id, requested_schema=schema)
        await self.flush()
        try:
            reply = await self.client.create_elicitation(
                message=f"MCP server {request.server} asks: {request.message}", mode=mode
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("the client did not answer an elicitation", exc_info=True)
            return FormAnswer("decline")
        if reply.action == "accept":
            content = getattr(reply, "content", None) or {}
            return FormAnswer("accept", read_content(request.fields, content))
        return FormAnswer("cancel" if reply.action == "cancel" else "decline")

    # Sending ------------------------------------------------------------------

    def send(self, *updates: Any) -> None:
        for update in updates:
            self._queue.put_nowait(update)
        if updates and (self._sender is None or self._sender.done()):
            self._sender = asyncio.get_running_loop().create_task(self._send_all())

    async def flush(self) -> None:
        """Until every update shown so far has been written to the client."""
        while self._sender is not None and not self._sender.done():
            await asyncio.shield(self._sender)

    async def close(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sender

    async def _send_all(self) -> None:
        while not self._queue.empty():
            update = _joined(self._queue)
            try:
                await self.client.session_update(session_id=self.session_id, update=update)
            except Exception:  # the client went away: the turn is stopped by its end
                log.debug("a session update could not be sent", exc_info=True)

    # Files ----------------------------------------------------------------------

    def _path(self, call: ToolCall) -> str:
        path = call_path(call)
        return os.path.join(self.workspace, path) if path else ""

    def _read(self, call: ToolCall) -> str | None:
        path = self._path(call)
        try:
            if not path or os.path.getsize(path) > LARGEST_DIFFED:
                return None
            with open(path, encoding="utf-8") as file:
                return file.read()
        except (OSError, UnicodeDecodeError):
            return None


def _joined(queue: asyncio.Queue[Any]) -> Any:
    """The next update, with the text chunks of the same kind right behind it joined in."""
    update = queue.get_nowait()
    if not isinstance(update, AgentMessageChunk | AgentThoughtChunk):
        return update
    content = update.content
    if not isinstance(content, TextContentBlock):
        return update
    parts = [content.text]
    while not queue.empty():
        following = queue._queue[0]  # type: ignore[attr-defined]
        if type(following) is not type(update) or not isinstance(
            following.content, TextContentBlock
        ):
            break
        parts.append(queue.get_nowait().content.text)
    return update.model_copy(update={"content": text_block("".join(parts))})
