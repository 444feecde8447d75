"""Forking a session (issue 27): where in its transcript the first N turns end.

``treadle fork ID --at N`` makes a new session whose transcript is the first lines of
ID's, byte for byte, up to the start of its main agent's turn N + 1 (everything, when N
is not given): the history, the accounting and the window a resume rebuilds from it are
those the session had after turn N, and a replay of the fork plays those N turns.

Example::

    >>> records = ["turn_started", "message_added", "turn_ended"] * 3
    >>> fork_point([(kind, "") for kind in records], 1)
    ForkPoint(lines=3, turns=1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TURN_STARTED = "turn_started"


@dataclass(frozen=True, slots=True)
class ForkPoint:
    """Keep the transcript's first ``lines`` lines: its first ``turns`` turns."""

    lines: int
    turns: int


def fork_point(records: Sequence[tuple[str, str]], at: int | None) -> ForkPoint | str:
    """Where to cut a transcript given as its records' ``(type, agent)``, whole lines only,
    to keep its first ``at`` main turns (None: all); or why it cannot be.

    >>> fork_point([("turn_started", ""), ("turn_ended", "")], 2)
    'it has 1 turn: --at takes 1'
    >>> fork_point([], None)
    'it has no turn to fork'
    """
    starts = [i for i, (kind, agent) in enumerate(records) if kind == TURN_STARTED and not agent]
    if not starts:
        return "it has no turn to fork"
    if at is None:
        return ForkPoint(len(records), len(starts))
    if not 1 <= at <= len(starts):
        plural = "turn" if len(starts) == 1 else "turns"
        takes = "1" if len(starts) == 1 else f"1 to {len(starts)}"
        return f"it has {len(starts)} {plural}: --at takes {takes}"
    cut = starts[at] if at < len(starts) else len(records)
    return ForkPoint(cut, at)


def fork_line(fork_id: str, parent: str, turns: int) -> str:
    """What a fork says: which session it made, from what, and how to go on in it.

    >>> fork_line("b", "a", 1)
    'forked b from a (1 turn) — resume with: treadle --resume b'
    """
    kept = "1 turn" if turns == 1 else f"{turns} turns"
    return f"forked {fork_id} from {parent} ({kept}) — resume with: treadle --resume {fork_id}"
