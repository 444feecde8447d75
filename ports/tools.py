"""The Tool port: what the model can call, and what a call gets to work with."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from treadle.domain.values.events import TurnEvent
from treadle.domain.values.model import ToolSpec
from treadle.domain.values.process import HostGrant
from treadle.domain.values.server_requests import (
    FormAnswer,
    FormRequest,
    SamplingReply,
    SamplingRequest,
)
from treadle.domain.values.tools import Access, ToolLimits, ToolOutcome, ToolResult
from treadle.ports.clock import Clock
from treadle.ports.process import ProcessRunner

StoppedResult = Callable[[str], ToolResult]
"""What a call did before a stop, given the stop's reason (``interrupted``, ``deadline``)."""


def _nothing_kept(result: StoppedResult) -> None:
    """Where a context made without a loop sends what a stopped call did: nowhere."""


async def _nobody_to_ask(request: FormRequest) -> FormAnswer:
    """Where a context made without a loop sends a server's question: declined."""
    return FormAnswer("decline")


async def _no_model(request: SamplingRequest) -> SamplingReply:
    """Where a context made without a loop sends a request for a completion: declined."""
    return SamplingReply(declined=True, why="no model serves completions here")


async def _refused_as_before(host: str) -> HostGrant:
    return "no"


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a running tool may use: the workspace, the process runner, the clock.

    ``until_stopped()`` returns when the turn is stopped (Esc, a caller, a deadline). A
    tool needs it only to wind down on its own terms; the loop cancels any other tool
    at the stop. ``agent`` is the name of the agent making the call (``""``: the main one),
    ``call_id`` the call's id (its :class:`~treadle.domain.values.events.ToolOutput`
    events name it).

    ``if_stopped`` hands the loop a function that says what the call did so far: should
    the stop cancel the call, the model reads what it returns (a command's output up to
    the stop) instead of a bare "interrupted". The last one handed counts.

    ``on_person(True)`` says the calling agent now waits for the person (a question, an
    approval), ``on_person(False)`` that the wait ended: a sub-agent's clocks stop
    meanwhile.

    ``ask_form`` puts a tool's server's question (an MCP elicitation) to the person
    and gives the answer (declined when nobody can answer); ``sample`` serves a
    server's request for a completion with the session's model, as the approval
    policy allows, its tokens counted in the turn's.
    """

    workspace: str
    session_dir: str
    runner: ProcessRunner
    clock: Clock
    limits: ToolLimits
    emit: Callable[[TurnEvent], None]
    ask_question: Callable[[str], Awaitable[str | None]]
    until_stopped: Callable[[], Awaitable[None]]
    agent: str = ""
    on_person: Callable[[bool], None] = lambda waiting: None
    call_id: str = ""
    if_stopped: Callable[[StoppedResult], None] = _nothing_kept
    ask_form: Callable[[FormRequest], Awaitable[FormAnswer]] = _nobody_to_ask
    sample: Callable[[SamplingRequest], Awaitable[SamplingReply]] = _no_model
    ask_host: Callable[[str], Awaitable[HostGrant]] = _refused_as_before
    """A host the allowlist refused a command, put to the approval policy: ``ask``
    asks the person (once, always, no); any other policy says no."""


class Tool(Protocol):
    """One tool. ``run`` gets arguments already checked against ``spec.parameters``.

    ``describe`` is the one-line summary shown on the terminal and in approval
    prompts (for bash, the command itself).
    """

    @property
    def spec(self) -> ToolSpec: ...

    @property
    def access(self) -> Access: ...

    def describe(self, arguments: Mapping[str, Any]) -> str: ...

    async def run(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolOutcome: ...


@runtime_checkable
class PreviewsChanges(Protocol):
    """A tool that can say what a call would change before it runs (a file write).

    ``preview`` gets the same checked arguments as ``run`` and changes nothing: it
    returns the whole unified diff the call would make, nothing of it left out (a
    binary or very large file: one line saying its content is not shown), or "" when
    it cannot tell (the call would fail, or changes nothing). The loop shows it with
    the approval question, which folds it for the screen.
    """

    async def preview(self, arguments: Mapping[str, Any], context: ToolContext) -> str: ...


class ToolCatalog(Protocol):
    """Tools that come from outside and may change during a session (the MCP servers'):
    asked before every request. When their schemas would take more than their share
    of the window, the loop offers ``tool_search`` instead and only the tools it loaded
    (see :mod:`treadle.domain.rules.tool_offer`)."""

    def catalog_tools(self) -> Sequence[Tool]: ...
