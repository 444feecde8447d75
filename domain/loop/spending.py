"""What a turn has spent, shared by the main agent and its sub-agents (one meter a turn).

Every request of any agent of the turn adds to it as its usage arrives; the agents ask
:func:`~treadle.domain.rules.limits.check_spending` of it between requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from treadle.domain.rules.limits import (
    LimitNear,
    LimitReached,
    SpendingLimits,
    Spent,
    check_spending,
)
from treadle.domain.values.conversation import Usage
from treadle.domain.values.prices import Prices


@dataclass
class SpendingMeter:
    """The turn's spending so far; ``started`` is the turn's start on the clock."""

    limits: SpendingLimits = field(default_factory=SpendingLimits)
    started: float = 0.0
    cost: float = 0.0
    tokens: int = 0
    requests: int = 0
    warned: set[str] = field(default_factory=set)

    def restart(self, now: float) -> None:
        """A new turn: nothing spent yet, nothing warned of."""
        self.started, self.cost, self.tokens, self.requests = now, 0.0, 0, 0
        self.warned.clear()

    def request_sent(self) -> None:
        self.requests += 1

    def spend(self, usage: Usage, prices: Prices | None) -> None:
        self.tokens += usage.total
        if prices is not None:
            self.cost += prices.cost(usage)

    def spent(self, now: float) -> Spent:
        return Spent(self.cost, self.tokens, self.requests, max(0.0, now - self.started))

    def check(self, now: float) -> LimitReached | LimitNear | None:
        """A limit reached, or one near that was not warned of (it is now: once a turn)."""
        if not self.limits.any:
            return None
        found = check_spending(self.limits, self.spent(now), frozenset(self.warned))
        if isinstance(found, LimitNear):
            self.warned.add(found.limit)
        return found
