"""What the MCP tests share: the test server's command, a tool context, and waiting
for something a real process does."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from treadle.adapters.fakes import FakeRunner
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.system_clock import SystemClock
from treadle.domain.values.events import TurnEvent
from treadle.domain.values.tools import ToolLimits, ToolOutcome
from treadle.ports.tools import Tool, ToolContext

SERVER = Path(__file__).with_name("mcp_test_server.py")
REFERENCE_SERVER = Path(sys.executable).with_name("mcp-server-time")


def stdio_server(name: str, folder: Path, *options: str, **config: Any) -> McpServerConfig:
    """The test server over stdio, logging what it sees to ``folder/NAME.events``."""
    events = folder / f"{name}.events"
    return McpServerConfig(
        name,
        command=sys.executable,
        args=(str(SERVER), "stdio", "--log", str(events), *options),
        **config,
    )


def file_size(path: str) -> int:
    return Path(path).stat().st_size


def events_of(folder: Path, name: str) -> list[str]:
    path = folder / f"{name}.events"
    return path.read_text().splitlines() if path.exists() else []


async def eventually(holds: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``holds()`` becomes true within ``seconds`` (a real process is watched)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not holds():
        if loop.time() > deadline:
            return holds()
        await asyncio.sleep(0.02)
    return True


def tool_context(folder: Path, *, output_limit: int = 30_000) -> ToolContext:
    clock = SystemClock()

    async def nobody(question: str) -> str | None:
        return None

    async def never() -> None:
        await asyncio.Event().wait()

    return ToolContext(
        workspace=str(folder),
        session_dir=str(folder),
        runner=FakeRunner(clock),
        clock=clock,
        limits=ToolLimits(default_timeout=10, output_limit=output_limit),
        emit=lambda event: None,
        ask_question=nobody,
        until_stopped=never,
    )


class Session:
    """Servers as a session has them: started, their tools by name, what was notified."""

    def __init__(self, servers: McpServers) -> None:
        self.servers = servers
        self.notices: list[TurnEvent] = []
        self.tools: dict[str, Tool] = {}

    async def start(self) -> Session:
        await self.servers.start(self.notices.append)
        self.tools = {tool.spec.name: tool for tool in self.servers.tools()}
        return self

    async def call(self, name: str, context: ToolContext, **arguments: Any) -> ToolOutcome:
        return await self.tools[name].run(arguments, context)
