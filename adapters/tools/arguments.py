"""Reading a tool call's arguments, already checked against the tool's schema.

The checks here only supply defaults and keep a wrong value (a bug in the checker, a
test calling ``run`` directly) from turning into an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from treadle.domain.values.tools import ToolResult


def text(arguments: Mapping[str, Any], name: str, default: str = "") -> str:
    value = arguments.get(name, default)
    return value if isinstance(value, str) else default


def whole(arguments: Mapping[str, Any], name: str, default: int) -> int:
    value = arguments.get(name, default)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def flag(arguments: Mapping[str, Any], name: str, default: bool = False) -> bool:
    value = arguments.get(name, default)
    return value if isinstance(value, bool) else default


def refuse(message: str, status: str = "") -> ToolResult:
    """An expected failure, told to the model as a tool error."""
    return ToolResult(text=message, is_error=True, status=status or message.split(":")[0][:60])


def plural(count: int, word: str) -> str:
    ending = "" if count == 1 else "es" if word.endswith(("s", "ch")) else "s"
    return f"{count:,} {word}{ending}"
