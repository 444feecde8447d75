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


class ProcessOutputTool:
    """What a background process printed since the last read, and whether it still runs."""

    spec = ToolSpec(
        name="process_output",
        description="What a background process printed since the last read; if it still runs.",
        parameters=_ID,
    )
    access: Access = "read"

    def __init__(self, processes: BackgroundProcesses) -> None:
        self.processes = processes

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("id", ""))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        process = str(arguments["id"])
        text = self.processes.read(process, context.clock.now())
        if text is None:
            return ToolResult(unknown_text(process, self.processes.views()), True, "unknown id")
        return ToolResult(text, status=_state_of(self.processes, process))


class ProcessStopTool:
    """Stops a background process and everything it started; says what it printed last."""

    spec = ToolSpec(
        name="process_stop",
        description="Stop a background process and all it started.",
        parameters=_ID,
    )
    access: Access = "none"

    def __init__(self, processes: BackgroundProcesses) -> None:
        self.processes = processes

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("id", ""))

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        process = str(arguments["id"])
        text = await self.processes.stop(process, context.clock.now)
        if text is None:
            return ToolResult(unknown_text(process, self.processes.views()), True, "unknown id")
        return ToolResult(text, status=_state_of(self.processes, process))


def _state_of(processes: BackgroundProcesses, process: str) -> str:
    return next((view.state.value for view in processes.views() if view.id == process), "")
