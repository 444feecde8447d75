"""Which of the tools from outside (MCP servers') a request carries: all of them while
their schemas fit their share of the window (``mcp_tool_budget``), else ``tool_search``
and the tools it loaded. Built-in tools are always offered; nothing here decides them.

What was loaded is read back from the conversation itself (each ``tool_search``
result names what it loaded), so a resumed or replayed conversation offers the same.

>>> small = [ToolSpec("mcp__a__x", "x", {})]
>>> offer_tools(small, (), window=100_000, share=0.1)
ToolOffer(names=('mcp__a__x',), search=False)
>>> offer_tools(small, (), window=100, share=0.1)
ToolOffer(names=(), search=True)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from treadle.domain.rules.tokens import fixed_tokens
from treadle.domain.values.conversation import Message
from treadle.domain.values.model import ToolSpec

TOOL_SEARCH = "tool_search"
DEFAULT_SHARE = 0.10
"""The share of the window the outside tools' schemas may take before they are loaded
on demand (Claude Code's users report 33–47 % when all are sent)."""
UNKNOWN_WINDOW = 128_000
"""The window counted on before the model's is known."""
LOADED = "Loaded into the next requests: "
"""How a ``tool_search`` result starts: the names that follow are offered from then on."""
SEARCH_LIMIT = 5


@dataclass(frozen=True, slots=True)
class ToolOffer:
    """The outside tools a request carries, and whether ``tool_search`` goes with them."""

    names: tuple[str, ...]
    search: bool


def spec_tokens(spec: ToolSpec) -> int:
    """What one tool's name, description and schema weigh in a request."""
    return fixed_tokens("", [spec]) - fixed_tokens("", [])


def offer_tools(
    specs: Sequence[ToolSpec], loaded: Sequence[str], *, window: int, share: float
) -> ToolOffer:
    """All of ``specs`` when they fit ``share`` of ``window``; else the ``loaded`` ones
    (the latest loaded first, as many as fit) and ``tool_search``."""
    budget = int(window * share)
    if sum(spec_tokens(spec) for spec in specs) <= budget:
        return ToolOffer(tuple(spec.name for spec in specs), False)
    by_name = {spec.name: spec for spec in specs}
    room = budget - spec_tokens(search_spec())
    kept: list[str] = []
    for name in reversed(loaded):
        spec = by_name.get(name)
        if spec is None or name in kept:
            continue
        cost = spec_tokens(spec)
        if cost > room:
            continue
        room -= cost
        kept.append(name)
    order = [spec.name for spec in specs if spec.name in kept]
    return ToolOffer(tuple(order), True)


def search_spec() -> ToolSpec:
    return ToolSpec(
        TOOL_SEARCH,
        "Find tools of the MCP servers by what they do, and load them: the tools found "
        "can be called from the next step on. Only tools loaded this way (and the built-in "
        "ones) are offered; search again for others.",
        {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words of the tool's name or description, or exact "
                    "names separated by commas.",
                },
                "limit": {
                    "type": "integer",
                    "description": f"At most this many (default {SEARCH_LIMIT}).",
                },
            },
            "required": ["query"],
        },
    )


_WORD = re.compile(r"[a-z0-9]+")


def search_tools(
    query: str, specs: Sequence[ToolSpec], limit: int = SEARCH_LIMIT
) -> tuple[str, ...]:
    """The tools a query finds, best first: exact names (commas between them) all, else
    those whose name and description share the most words with it (a word of the
    name counts twice).

    >>> specs = [ToolSpec("mcp__gh__create_issue", "Open an issue", {}),
    ...          ToolSpec("mcp__gh__list_pulls", "List pull requests", {})]
    >>> search_tools("issue", specs)
    ('mcp__gh__create_issue',)
    >>> search_tools("mcp__gh__list_pulls, mcp__gh__create_issue", specs)
    ('mcp__gh__list_pulls', 'mcp__gh__create_issue')
    """
    names = {spec.name for spec in specs}
    asked = [word.strip() for word in query.split(",") if word.strip()]
    if asked and all(word in names for word in asked):
        return tuple(dict.fromkeys(asked))
    wanted = set(_WORD.findall(query.lower()))
    scored = []
    for index, spec in enumerate(specs):
        own = set(_WORD.findall(spec.name.lower()))
        about = set(_WORD.findall(spec.description.lower()))
        score = 2 * len(wanted & own) + len(wanted & about)
        if score:
            scored.append((-score, index, spec.name))
    return tuple(name for _, _, name in sorted(scored)[: max(1, limit)])


def loaded_tools(messages: Sequence[Message]) -> tuple[str, ...]:
    """The tools ``tool_search`` loaded in a conversation, in the order they were loaded
    (one loaded again moves to the end)."""
    searches = {
        call.id
        for message in messages
        if message.role == "assistant"
        for call in message.tool_calls
        if call.name == TOOL_SEARCH
    }
    loaded: list[str] = []
    for message in messages:
        if message.role != "tool" or message.tool_call_id not in searches or message.is_error:
            continue
        first = message.text.split("\n", 1)[0]
        if first.startswith(LOADED):
            for name in first[len(LOADED) :].split(", "):
                if name in loaded:
                    loaded.remove(name)
                loaded.append(name)
    return tuple(loaded)
