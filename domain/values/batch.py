"""The nouns of a batch: a line of TASKS, the turn an engine runs for it, and a line of
RESULTS saying how that turn ended.

A batch runs many headless turns, each one ``treadle --json`` process of its own; what
comes back of each is a :class:`TaskResult`, whatever the engine that ran it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from treadle.domain.values.outcome import OutcomeKind


class TaskOutcome(enum.Enum):
    """How a task of a batch ended: the turn's own outcomes (its exit code said so),
    spelt as the turn spells them (:class:`OutcomeKind`), and two of the batch's own.
    ``LOST``: the turn's process went away without ending its turn (its worker died, or
    something killed it), so only its transcript says what it did; ``NOT_STARTED``: the
    batch was stopped before the turn began.

    >>> TaskOutcome.of_turn(OutcomeKind.WAITING)
    <TaskOutcome.WAITING: 'waiting for input'>
    >>> TaskOutcome.read("waiting")  # as older RESULTS files spelt it
    <TaskOutcome.WAITING: 'waiting for input'>
    """

    FINISHED = OutcomeKind.FINISHED.value
    FAILED = OutcomeKind.FAILED.value
    BLOCKED = OutcomeKind.BLOCKED.value
    WAITING = OutcomeKind.WAITING.value
    PAUSED = OutcomeKind.PAUSED.value
    LOST = "lost"
    NOT_STARTED = "not started"

    @classmethod
    def of_turn(cls, kind: OutcomeKind) -> TaskOutcome:
        """The task's outcome for a turn that ended by itself as ``kind``."""
        return cls(kind.value)

    @classmethod
    def read(cls, text: object) -> TaskOutcome | None:
        """The outcome a RESULTS line names, in today's spelling or an older one; None
        for a line that names none (edited by hand, or torn)."""
        if not isinstance(text, str):
            return None
        text = OLD_SPELLINGS.get(text, text)
        return _BY_VALUE.get(text)


OLD_SPELLINGS: Final[Mapping[str, str]] = {"waiting": OutcomeKind.WAITING.value}
"""Outcomes RESULTS files once spelt otherwise than the turn does, and today's name."""
_BY_VALUE: Final[Mapping[str, TaskOutcome]] = {outcome.value: outcome for outcome in TaskOutcome}

OUTCOMES: Final[tuple[TaskOutcome, ...]] = tuple(TaskOutcome)
"""Every outcome, in the order the batch's closing counts name them."""


TURN_FLAGS: Final[tuple[str, ...]] = (
    "max_cost",
    "max_tokens_total",
    "max_requests",
    "max_time",
    "output_schema",
    "sandbox_network",
)
"""The headless contract's settings a batch passes to each turn (issue 26), as the
batch's flags and a task line's own fields: ``--max-cost``… on the turn's command line;
and the network its commands reach (issue 28), ``--network`` there."""

TURN_FLAG_OPTIONS: Final[Mapping[str, str]] = {"sandbox_network": "--network"}
"""The turn's option of a :data:`TURN_FLAGS` key whose option is not the key spelt
``--with-dashes``."""

Flags = tuple[tuple[str, str], ...]
"""Settings of :data:`TURN_FLAGS` given, each with its text, in that order."""


@dataclass(frozen=True, slots=True)
class BatchTask:
    """One line of TASKS: ``id`` and ``task``, and optionally the folder to work in, the
    model, and a session to continue. ``line`` is its line number, for messages."""

    id: str
    task: str
    line: int = 0
    workspace: str = ""
    model: str = ""
    resume: str = ""
    flags: Flags = ()
    """Its own limits and output schema, over the batch's."""


@dataclass(frozen=True, slots=True)
class TurnOrder:
    """One turn for an engine to run: ``treadle --json`` in ``workspace``, in the session
    ``session`` (new, or continued when ``resuming``), with ``task`` as its message ("" to
    go on where a paused turn stopped). ``environment`` is added to whatever environment
    the turn's process starts from (the batch's ``TREADLE_*`` settings); the options are
    the batch's flags, "" for those not given."""

    id: str
    task: str
    session: str
    workspace: str
    resuming: bool = False
    model: str = ""
    base_url: str = ""
    approval: str = ""
    sandbox: str = ""
    environment: tuple[tuple[str, str], ...] = ()
    flags: Flags = ()
    """Its limits and output schema (the task's own, else the batch's)."""
    transcript: str = ""
    """Where the turn's transcript will be, as the batch sees it (a cluster node may keep
    it at the same path on its own disk)."""
    worktree: str = ""
    """The git worktree the turn works in (``treadle batch --worktree``), by name."""


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One line of RESULTS. ``exit_code`` is the turn's own (None when it was never
    started or did not exit by itself); ``tokens`` counts the turn's usage by kind
    (``input``, ``output``…); ``worker`` says where it ran."""

    id: str
    outcome: TaskOutcome
    exit_code: int | None = None
    detail: str = ""
    transcript: str = ""
    session: str = ""
    requests: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    worker: str = ""
    cost: float | None = None
    """Dollars the turn spent, where its model's prices are known."""
    value: object = None
    """The final answer's JSON value, checked against the turn's output schema."""

    @property
    def finished(self) -> bool:
        return self.outcome is TaskOutcome.FINISHED


@dataclass(frozen=True, slots=True)
class Progress:
    """The figures of the progress line. ``failed`` counts the turns that ended without
    finishing; ``left`` estimates the seconds still needed (None until a turn ended)."""

    total: int
    ended: int
    running: int
    queued: int
    failed: int
    skipped: int
    elapsed: float
    left: float | None
