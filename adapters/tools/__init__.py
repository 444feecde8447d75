"""The file and search tools: each implements the Tool port.

Example::

    tools = {tool.spec.name: tool for tool in file_tools()}
    outcome = await tools["read_file"].run({"path": "README.md"}, context)
"""

from __future__ import annotations

from treadle.adapters.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from treadle.adapters.tools.find_files import FindFilesTool
from treadle.adapters.tools.search import SearchTool
from treadle.adapters.tools.workspace import Workspace
from treadle.ports.tools import Tool


def file_tools(ripgrep: str | None = None) -> list[Tool]:
    """search, find_files, read_file, write_file, edit_file.

    ``ripgrep`` names the rg binary; by default the one beside Python, or on PATH.
    """
    return [
        SearchTool(ripgrep),
        FindFilesTool(ripgrep),
        ReadFileTool(),
        WriteFileTool(),
        EditFileTool(),
    ]


__all__ = [
    "EditFileTool",
    "FindFilesTool",
    "ReadFileTool",
    "SearchTool",
    "Workspace",
    "WriteFileTool",
    "file_tools",
]
