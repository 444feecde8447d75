"""Spending limits the person sets: when a turn has spent what it may, and when it is near.

Nothing caps a turn on its own (the seed's rule); these are limits the person chose
(``--max-cost``, ``--max-tokens-total``, ``--max-requests``, ``--max-time``). What the
turn has spent, its sub-agents' spending included, is a :class:`Spent`; the decision
is :func:`check_spending`, a pure function of the two.

Example::

    >>> limits = SpendingLimits(cost=0.5)
    >>> check_spending(limits, Spent(cost=0.5)).line()
    'spending limit reached: $0.50 of $0.50'
    >>> check_spending(limits, Spent(cost=0.41)).line()
    'spending near its limit: $0.41 of $0.50 (82 %)'
    >>> check_spending(limits, Spent(cost=0.41), warned=frozenset({"cost"})) is None
    True
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

LimitName = Literal["cost", "tokens", "requests", "time"]

WARN_AT = 0.8
"""The share of a limit past which the person is told the turn is near it."""


@dataclass(frozen=True, slots=True)
class SpendingLimits:
    """What a turn may spend; None is no limit. ``time`` is in seconds."""

    cost: float | None = None
    tokens: int | None = None
    requests: int | None = None
    time: float | None = None

    @property
    def any(self) -> bool:
        """Whether any limit is set (asked between every two requests: kept cheap)."""
        return not (self.cost is None and self.tokens is None and self.requests is None) or (
            self.time is not None
        )


@dataclass(frozen=True, slots=True)
class Spent:
    """What a turn has spent so far: dollars, tokens, requests and seconds."""

    cost: float = 0.0
    tokens: int = 0
    requests: int = 0
    time: float = 0.0


@dataclass(frozen=True, slots=True)
class LimitReached:
    """``limit`` is spent: the turn ends blocked, saying so."""

    limit: LimitName
    spent: float
    allowed: float

    def line(self) -> str:
        return f"spending limit reached: {_shown(self.limit, self.spent, self.allowed)}"


@dataclass(frozen=True, slots=True)
class LimitNear:
    """``limit`` is past :data:`WARN_AT` of what it allows: the person is told, once."""

    limit: LimitName
    spent: float
    allowed: float

    def line(self) -> str:
        share = math.floor(100 * self.spent / self.allowed)
        return (
            f"spending near its limit: {_shown(self.limit, self.spent, self.allowed)} ({share} %)"
        )


_ORDER: tuple[LimitName, ...] = ("cost", "tokens", "requests", "time")


def check_spending(
    limits: SpendingLimits, spent: Spent, warned: frozenset[str] = frozenset()
) -> LimitReached | LimitNear | None:
    """The first limit reached (spent ≥ allowed), else the first one near that has not
    been ``warned`` of, else None."""
    near: LimitNear | None = None
    for name in _ORDER:
        allowed = getattr(limits, name)
        if allowed is None:
            continue
        used = float(getattr(spent, name))
        if used >= allowed:
            return LimitReached(name, used, float(allowed))
        if near is None and name not in warned and used >= WARN_AT * allowed:
            near = LimitNear(name, used, float(allowed))
    return near


def _shown(limit: LimitName, spent: float, allowed: float) -> str:
    match limit:
        case "cost":
            return f"{_dollars(spent)} of {_dollars(allowed)}"
        case "tokens":
            return f"{int(spent):,} of {int(allowed):,} tokens"
        case "requests":
            return f"{int(spent)} of {int(allowed)} requests"
        case "time":
            return f"{duration_text(spent)} of {duration_text(allowed)}"


def _dollars(amount: float) -> str:
    """Cents, or what a sum under a cent is (``--max-cost 0.001`` is not "$0.00").

    >>> _dollars(0.5), _dollars(0.0013), _dollars(0), _dollars(1e-300)
    ('$0.50', '$0.0013', '$0.00', '$1e-300')
    """
    return f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.2g}"


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?\Z")


def parse_duration(text: str) -> float | None:
    """Seconds in ``text``: ``90``, ``90s``, ``10m``, ``1h30m``, ``1.5h``; None when it
    is none, or not more than zero.

    >>> parse_duration("1h30m"), parse_duration("45"), parse_duration("soon")
    (5400.0, 45.0, None)
    """
    text = text.strip().lower()
    match = _DURATION.match(text)
    if not text or match is None:
        return None
    hours, minutes, seconds = (float(part) if part else 0.0 for part in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return total if total > 0 else None


def duration_text(seconds: float) -> str:
    """``90.0`` → ``1m30s``; under a minute, in seconds."""
    whole = round(seconds)
    if whole < 60:
        return f"{seconds:.0f}s" if seconds >= 1 else f"{seconds:.1f}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours}h" if hours else ""
    text += f"{minutes}m" if minutes or (hours and secs) else ""
    return text + (f"{secs}s" if secs else "")
