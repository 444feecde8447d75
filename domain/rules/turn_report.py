"""What one headless turn of a batch said of itself, and how it ended.

A turn is a ``treadle --json`` process. Its lines (and its transcript, which keeps the
same records) are folded into a :class:`TurnTally`: requests and tokens so far, and its
``turn_ended`` line when it got that far. How the turn ended is decided by its exit
code, the contract, never by its text: :func:`judge_turn`. Example::

    >>> tally = tally_lines(['{"type": "turn_ended", "agent": "", "requests": 2,'
    ...                      ' "usage": {"input_tokens": 9, "output_tokens": 3},'
    ...                      ' "exit_code": 0, "line": "Turn finished"}'])
    >>> tally.requests, dict(tally.tokens), judge_turn(ProcessEnd(0), tally)
    (2, {'input': 9, 'output': 3}, (<TaskOutcome.FINISHED: 'finished'>, 'Turn finished'))
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from treadle.domain.values.batch import TaskOutcome
from treadle.domain.values.outcome import EXIT_CODES

OUTCOME_BY_EXIT: dict[int, TaskOutcome] = {
    code: TaskOutcome.of_turn(kind) for kind, code in EXIT_CODES.items()
}
"""The exit codes of a turn (the one table, :data:`EXIT_CODES`) and the outcome each says."""


class Counted(enum.Enum):
    """The records of a turn its tally reads, by their ``type`` (the event's name, as
    the transcript and ``--json`` write it); every other record is passed over."""

    TURN_STARTED = "turn_started"
    REQUEST_SENT = "request_sent"
    USAGE_UPDATED = "usage_updated"
    TURN_ENDED = "turn_ended"


_COUNTED: dict[str, Counted] = {kind.value: kind for kind in Counted}


@dataclass(frozen=True, slots=True)
class TurnTally:
    """What a turn's events said so far: its requests and tokens by kind, and whether
    it ended (with its outcome's kind and the line a person would have read)."""

    requests: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)
    ended: bool = False
    kind: str = ""
    line: str = ""
    detail: str = ""
    cost: float | None = None
    value: object = None

    @property
    def said(self) -> str:
        """What the turn said of its end: its line, else its outcome's detail."""
        return self.line or self.detail


def tokens_by_kind(usage: object) -> dict[str, int]:
    """``{"input_tokens": 9, "cache_read_tokens": 4}`` as ``{"input": 9, "cache_read": 4}``.

    Every ``*_tokens`` count is kept, so kinds a newer treadle adds are counted too."""
    if not isinstance(usage, Mapping):
        return {}
    return {
        str(key).removesuffix("_tokens"): value
        for key, value in usage.items()
        if str(key).endswith("_tokens") and isinstance(value, int) and not isinstance(value, bool)
    }


def tally(so_far: TurnTally, record: Mapping[str, object]) -> TurnTally:
    """``so_far`` after one event record of the main turn (a sub-agent's are in its
    caller's counts already). A ``turn_started`` begins a new count: a transcript holds
    every turn of its session, and only the last one is this batch's."""
    if record.get("agent", ""):
        return so_far
    kind = record.get("type")
    match _COUNTED.get(kind) if isinstance(kind, str) else None:
        case Counted.TURN_STARTED:
            return TurnTally()
        case Counted.REQUEST_SENT:  # counted until the turn's own count comes
            return replace(so_far, requests=so_far.requests + 1)
        case Counted.USAGE_UPDATED:
            requests = record.get("requests")
            return replace(
                so_far,
                tokens=tokens_by_kind(record.get("turn")) or so_far.tokens,
                requests=requests if isinstance(requests, int) else so_far.requests,
            )
        case Counted.TURN_ENDED:
            outcome = record.get("outcome")
            outcome = outcome if isinstance(outcome, Mapping) else {}
            requests = record.get("requests")
            return TurnTally(
                requests=requests if isinstance(requests, int) else so_far.requests,
                tokens=tokens_by_kind(record.get("usage")) or so_far.tokens,
                ended=True,
                kind=str(outcome.get("kind", "")),
                line=str(record.get("line", "")),
                detail=str(outcome.get("detail", "")),
                cost=_cost(record.get("cost")),
                value=record.get("value"),
            )
    return so_far


def _cost(cost: object) -> float | None:
    number = isinstance(cost, int | float) and not isinstance(cost, bool)
    return float(cost) if number else None  # type: ignore[arg-type]


def tally_lines(lines: Iterable[str], start: TurnTally | None = None) -> TurnTally:
    """Fold JSON lines into a tally; a line that is not a JSON object (a torn last line,
    a stray print) is passed over."""
    current = start if start is not None else TurnTally()
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            current = tally(current, record)
    return current


@dataclass(frozen=True, slots=True)
class ProcessEnd:
    """How a turn's process ended: its exit code, or the signal that killed it
    (``signal`` is its name, e.g. ``SIGKILL``; the code is then None)."""

    exit_code: int | None
    signal: str = ""


def judge_turn(
    end: ProcessEnd,
    said: TurnTally,
    *,
    pause_asked: bool = False,
    error_line: str = "",
) -> tuple[TaskOutcome, str]:
    """The outcome of a turn and its detail.

    The exit code decides (0 finished, 1 failed, 3 blocked, 4 waiting for input, 130
    paused); the detail is what the turn said (its last line), else ``error_line``, the last line it
    wrote on stderr (treadle refusing to start: a busy session, a bad flag). A turn
    killed after the batch asked it to pause (it took too long, or a second Ctrl-C) is
    paused all the same (its session continues with ``treadle --resume``); killed
    otherwise, it is lost.

    >>> judge_turn(ProcessEnd(None, "SIGKILL"), TurnTally(requests=3))
    (<TaskOutcome.LOST: 'lost'>, 'killed by SIGKILL; its transcript kept 3 requests')
    """
    if end.exit_code is not None:
        outcome = OUTCOME_BY_EXIT.get(end.exit_code)
        if outcome is not None:
            return outcome, said.said or error_line
        detail = f"treadle exited with {end.exit_code}"
        return TaskOutcome.FAILED, f"{detail}: {error_line}" if error_line else detail
    kept = f"its transcript kept {_requests(said.requests)}"
    if pause_asked:
        return TaskOutcome.PAUSED, f"killed by {end.signal} before it paused; {kept}"
    return TaskOutcome.LOST, f"killed by {end.signal}; {kept}"


def _requests(count: int) -> str:
    return f"{count} request{'' if count == 1 else 's'}"
