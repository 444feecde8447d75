"""``process_output`` and ``process_stop``: the model's hold on its background processes.

``bash`` with ``background: true`` starts one (see :mod:`.background`); these read what
it printed since the last read, and stop it with its whole tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from treadle.domain.loop.background import BackgroundProcesses
from treadle.domain.rules.background import unknown_text
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

_ID = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "bg1, bg2…"},
    },
    "required": ["id"],
    "additionalProperties": False,
}


class _ByProcessId:
    """A tool that takes a background process's ``id``: what the two have in common."""

    def __init__(self, processes: BackgroundProcesses) -> None:
        self.processes = processes

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("id", ""))

    def answer(self, process: str, text: str | None) -> ToolResult:
        """``text`` from the process, with its state; None: the id is not known."""
        if text is None:
            return ToolResult(unknown_text(process, self.processes.views()), True, "unknown id")
        state = next((v.state.value for v in self.processes.views() if v.id == process), "")
        return ToolResult(text, status=state)


class ProcessOutputTool(_ByProcessId):
    """What a background process printed since the last read, and whether it still runs."""

    spec = ToolSpec(
        name="process_output",
        description="What a background process printed since the last read; if it still runs.",
        parameters=_ID,
    )
    access: Access = "read"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        process = str(arguments["id"])
        return self.answer(process, self.processes.read(process, context.clock.now()))


class ProcessStopTool(_ByProcessId):
    """Stops a background process and everything it started; says what it printed last."""

    spec = ToolSpec(
        name="process_stop",
        description="Stop a background process and all it started.",
        parameters=_ID,
    )
    access: Access = "none"

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        process = str(arguments["id"])
        return self.answer(process, await self.processes.stop(process, context.clock.now))
