"""What a named sub-agent runs with (issue 23): its definition's prompt after treadle's
own (which says how its tools and its progress reports work), only the tools it names
of its caller's, and the model it names.

The loop's :class:`~treadle.domain.loop.turn.Agent` builds the sub-agent from what
:func:`named_setup` returns; the clocks are the caller's, as for any sub-agent.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from returns.result import Failure, Result, Success

from treadle.domain.loop.settings import TurnSettings
from treadle.domain.rules.workflows import agent_tools
from treadle.domain.values.events import Notice
from treadle.domain.values.workflows import AgentDefinition
from treadle.ports.model import Model
from treadle.ports.tools import Tool, ToolCatalog

AGENT_TOOL = "agent"

ModelsByName = Callable[[str], Result[Model, str]]
"""Builds a model by its name (``openai:gpt-4.1``), or says why it cannot."""


@dataclass(frozen=True, slots=True)
class NamedSetup:
    """A named sub-agent's settings, tools, model (None: its caller's), whether it may
    start sub-agents of its own, and what to tell the person of it."""

    settings: TurnSettings
    tools: tuple[Tool, ...]
    model: Model | None
    subagents: bool
    notice: Notice
    catalog: ToolCatalog | None = None
    """The caller's outside (MCP) tools it may have: only those its list names; None
    when the list names none of them."""


class NarrowedCatalog:
    """A catalog that keeps only the tools of ``names`` (by their offered names,
    ``mcp__server__tool``), asked again before every request as the whole one is."""

    def __init__(self, catalog: ToolCatalog, names: Collection[str]) -> None:
        self._catalog = catalog
        self._names = frozenset(names)

    def catalog_tools(self) -> Sequence[Tool]:
        return [tool for tool in self._catalog.catalog_tools() if tool.spec.name in self._names]


def named_setup(
    definition: AgentDefinition,
    name: str,
    settings: TurnSettings,
    tools: Sequence[Tool],
    models: ModelsByName | None,
    caller: str,
    catalog: ToolCatalog | None = None,
) -> NamedSetup | str:
    """The sub-agent ``name`` as ``definition`` says, or why it cannot start (its model
    cannot be built).

    Of ``catalog`` (its caller's MCP tools) it gets all when its definition lists no
    tools, else only those the list names by their offered names; a list that names
    none of them gives it none (not even ``tool_search``)."""
    own = [tool.spec.name for tool in tools]
    if settings.subagent_depth > 0:
        own.append(AGENT_TOOL)
    listed = catalog is not None and definition.tools is not None
    outside = [t.spec.name for t in catalog.catalog_tools()] if listed and catalog else []
    available = own + [n for n in outside if n not in own]
    kept, unknown = agent_tools(definition.tools, available)
    narrowed = catalog
    if listed and catalog is not None:
        theirs = [n for n in kept if n not in own]
        narrowed = NarrowedCatalog(catalog, theirs) if theirs else None
    model: Model | None = None
    if definition.model:
        built = models(definition.model) if models is not None else Failure("no models here")
        match built:
            case Success(made):
                model = made
            case Failure(why):
                return f"agent {definition.name} asks for model {definition.model}: {why}"
    prompt = (
        f"{settings.system_prompt}\n\n# You are the {definition.name} agent\n\n{definition.prompt}"
    )
    said = f"{name} is the {definition.name} agent ({definition.path}); tools: "
    said += ", ".join(kept) or "none"
    if unknown:
        said += f"; not tools here, left out: {', '.join(unknown)}"
    if definition.model:
        said += f"; model: {definition.model}"
    return NamedSetup(
        replace(settings, system_prompt=prompt),
        tuple(tool for tool in tools if tool.spec.name in kept),
        model,
        AGENT_TOOL in kept,
        Notice("agent_named", said, caller),
        narrowed,
    )
