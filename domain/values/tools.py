"""What a tool call may do, its limits, what it gives back, and the approval it asks for."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from treadle.domain.values.outcome import TurnEnding

MIN_CHECK_INTERVAL = 0.1
"""The shortest a sub-agent's progress interval may be: below it, progress reports
would flood the terminal and the transcript."""

Access = Literal["read", "write", "execute", "none"]
"""What a tool does to the machine; the approval policy decides on this."""


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """Deadlines (seconds) and the output bound (bytes) for tools that start programs;
    how many background processes may run at once."""

    default_timeout: float = 120.0
    max_timeout: float = 600.0
    output_limit: int = 30_000
    passthrough_env: tuple[str, ...] = ()
    background_limit: int = 4


class ToolEnding(enum.StrEnum):
    """How a tool call ended, closed: what replay and the screen's mark go by. The display
    line (``status``: ``exit 0 · 0.2 s``, ``lines 1-40``…) says it for people."""

    FINISHED = "finished"
    """It did its work (a command ran to its end, whatever its exit code said)."""
    FAILED = "failed"
    """It ran and reports an error (``is_error``): bad arguments, a failing command…"""
    REFUSED = "refused"
    """Not run: the person declined it, or the call was not allowed."""
    BLOCKED = "blocked"
    """Not run, and the turn ends blocked: an approval nobody can give, no sandbox."""
    WAITING = "waiting for input"
    """The turn ends waiting for an answer nobody here can give."""
    INTERRUPTED = "interrupted"
    """A stop cut it short."""
    DEADLINE = "deadline"
    """A sub-agent stopped at its deadline, and reported."""
    STOPPED = "stopped"
    """A sub-agent stopped by its caller."""
    CRASHED = "crashed"
    """The tool raised: a bug, and the turn fails."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What goes back to the model. ``status`` is the short line shown on the terminal;
    ``diff`` is the unified diff of what the call changed in a file, ``preview`` the
    head and tail of what a command printed (both shown and kept, not sent to the
    model: ``text`` holds what it reads). ``interrupted``: a stop cut the call short,
    and ``text`` says what it had done until then. ``ending``: how the call ended,
    when it is neither finished nor failed (see :attr:`ended`)."""

    text: str
    is_error: bool = False
    status: str = ""
    diff: str = ""
    preview: str = ""
    interrupted: bool = False
    ending: ToolEnding | None = None

    @property
    def ended(self) -> ToolEnding:
        """``ending`` when said, else finished, or failed for an error."""
        if self.ending is not None:
            return self.ending
        return ToolEnding.FAILED if self.is_error else ToolEnding.FINISHED


@dataclass(frozen=True, slots=True)
class EndTurn:
    """A call that cannot go on without someone ends the turn (``ask`` when headless).

    ``text`` is what the model reads as the call's result when the session goes on.
    """

    cause: TurnEnding
    text: str = ""


ToolOutcome = ToolResult | EndTurn


@dataclass(frozen=True, slots=True)
class Declined:
    """A no with the person's words: why, or what to do instead. They go to the model
    with the refusal (a plain ``"no"`` is a no without words)."""

    reason: str


ApprovalAnswer = Literal["yes", "no", "always"] | Declined


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """A tool call that needs a yes. ``prefix`` is what "always" would allow from now on;
    empty when no prefix is safe to allow, and "always" is then not offered. ``diff``
    is the whole change a write would make, shown with the question (folded on the
    screen, all of it on a key). ``why`` says why no allowed prefix covers a command
    (``find -exec`` when ``find`` is allowed). ``call_id`` names the call asked about
    (an editor shows the question on the call)."""

    tool: str
    summary: str
    prefix: str
    agent: str = ""
    diff: str = ""
    why: str = ""
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class Isolated:
    """A sub-agent's workspace of its own (``isolation: "worktree"``, issue 27): the
    folder it works in, the worktree that holds it, its branch, and the commit it
    started from (what its changes are a diff against)."""

    workspace: str
    folder: str
    branch: str
    base: str = ""
