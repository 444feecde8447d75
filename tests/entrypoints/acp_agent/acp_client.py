"""A recording ACP client on the official SDK's client side, driving ``treadle acp``."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.interfaces import Client
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    DeclineElicitationResponse,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from tests.processes import treadle_env


@dataclass
class RecordingClient:
    """Keeps every update and permission request; answers permissions with ``answer``
    (an option id, or "cancel"), or waits on ``release`` before it does."""

    answer: str = "once"
    updates: list[Any] = field(default_factory=list)
    asked: list[ToolCallUpdate] = field(default_factory=list)
    release: asyncio.Event | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    form: dict[str, Any] | None = None
    """What it fills a server's form in with (None: it declines)."""
    elicited: list[tuple[str, Any]] = field(default_factory=list)

    async def create_elicitation(
        self, message: str, mode: Any, **_: Any
    ) -> AcceptElicitationResponse | DeclineElicitationResponse:
        self.elicited.append((message, mode))
        if self.form is None:
            return DeclineElicitationResponse(action="decline")
        return AcceptElicitationResponse(action="accept", content=self.form)

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **_: Any
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.changed.set()
        if self.release is not None:
            await self.release.wait()
        if self.answer == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        self.changed.set()

    def on_connect(self, conn: Any) -> None:
        return None

    async def until(self, predicate: Any, timeout: float = 20.0) -> None:
        """Until ``predicate(self)`` holds, woken by every update."""
        async with asyncio.timeout(timeout):
            while not predicate(self):
                self.changed.clear()
                await self.changed.wait()

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self) -> str:
        return "".join(
            u.content.text for u in self.updates if u.session_update == "agent_message_chunk"
        )


@asynccontextmanager
async def treadle_acp(
    client: RecordingClient,
    home: Path,
    *flags: str,
    cwd: Path | None = None,
    capabilities: ClientCapabilities | None = None,
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    async with spawn_agent_process(
        cast(Client, client),
        sys.executable,
        "-m",
        "treadle",
        "acp",
        *flags,
        env=treadle_env(home),
        cwd=cwd or home,
        # Elicitation is unstable in ACP: a client that declares it opts in to it.
        use_unstable_protocol=capabilities is not None,
    ) as (conn, process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities)
        yield conn, process
