"""What crosses between a server's connection and the rest of treadle: its tools, and
how one call ended. Plain values; nothing here imports the SDK."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

MAX_MESSAGE = 32 * 1024 * 1024
"""The largest message a server may send (an image, a long file). Over stdio a larger
one ends the connection and treadle stops the server; over HTTP it fails the call
it answers. Either way no more than this (and a chunk) is ever held."""

OVERSIZED = f"a message over the {MAX_MESSAGE // 2**20} MiB limit"
"""How a message over :data:`MAX_MESSAGE` is told."""


@dataclass(frozen=True, slots=True)
class ListedTool:
    """A tool as the server lists it: its own name, description and input schema."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool
    """The server's ``readOnlyHint`` is true (a hint: only a configured server's counts)."""


@dataclass(frozen=True, slots=True)
class McpAnswer:
    """A ``tools/call`` that got a result: its content as text, and ``isError``."""

    text: str
    is_error: bool = False


CallFailureKind = Literal["deadline", "server_gone", "not_running", "protocol"]
"""Why an MCP call got no result (a name of its own: the turn's is ``FailureKind``)."""


@dataclass(frozen=True, slots=True)
class McpCallFailure:
    """A call that got no result: the deadline passed (the call was cancelled), the
    server went away during it, was not running, or broke the protocol."""

    kind: CallFailureKind
    detail: str


@dataclass(frozen=True, slots=True)
class ListedResource:
    """A resource a server lists (or a template of them: ``uri`` holds ``{…}``)."""

    uri: str
    name: str
    description: str = ""
    mime_type: str = ""
    template: bool = False


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class ListedPrompt:
    """A prompt a server lists, offered as the slash command ``/mcp__server__name``."""

    name: str
    description: str
    arguments: tuple[PromptArgument, ...] = ()
