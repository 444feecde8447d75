"""``tool_search``: the tool offered instead of the outside tools when their schemas
would take more than their share of the window. It finds tools by name and
description and loads them into the next requests (its result names them: see
:func:`~treadle.domain.rules.tool_offer.loaded_tools`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from treadle.domain.rules.tool_offer import LOADED, SEARCH_LIMIT, search_spec, search_tools
from treadle.domain.values.events import Notice
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.tools import Access, ToolOutcome, ToolResult
from treadle.ports.tools import ToolContext

DESCRIPTION_LENGTH = 300


class ToolSearchTool:
    """Searches the specs ``catalog()`` gives, and says which it loaded."""

    spec = search_spec()
    access: Access = "read"

    def __init__(self, catalog: Callable[[], Sequence[ToolSpec]]) -> None:
        self._catalog = catalog

    def describe(self, arguments: Mapping[str, Any]) -> str:
        return str(arguments.get("query", ""))[:120]

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome:
        specs = list(self._catalog())
        limit = arguments.get("limit")
        count = limit if isinstance(limit, int) and limit > 0 else SEARCH_LIMIT
        found = search_tools(str(arguments.get("query", "")), specs, count)
        if not found:
            return ToolResult(
                f"No tool matches; there are {len(specs)} (search other words of what they do).",
                False,
                "none found",
            )
        by_name = {spec.name: spec for spec in specs}
        lines = [LOADED + ", ".join(found)]
        for name in found:
            about = " ".join(by_name[name].description.split())
            lines.append(f"- {name}: {about[:DESCRIPTION_LENGTH]}")
        context.emit(Notice("mcp_tools_loaded", LOADED + ", ".join(found), context.agent))
        return ToolResult("\n".join(lines), False, f"{len(found)} loaded")
