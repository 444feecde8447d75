"""Continuing an answer that hit its token budget.

Example::

    >>> budget = TokenBudget(initial=1000, growth=2.0, cap=3000, continuations=2)
    >>> continue_truncated(budget, current=1000, done=0)
    Continue(max_tokens=2000, continuation=1)
"""

from __future__ import annotations

from dataclasses import dataclass

from treadle.domain.values.outcome import Truncated


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """The output budget of a request, how it grows when cut, its cap, and how often.

    ``thinking`` is the part of every request's budget the model may spend thinking
    before it answers (0: none asked for). It counts inside the budget, as Anthropic
    counts it inside ``max_tokens``, so it must leave room for an answer: it is less
    than ``initial``, and the budget only grows from there.
    """

    initial: int = 8192
    growth: float = 2.0
    cap: int = 32768
    continuations: int = 3
    thinking: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.initial <= self.cap:
            raise ValueError("token budget: need 1 <= initial <= cap")
        if not 0 <= self.thinking < self.initial:
            raise ValueError("token budget: the thinking budget must be less than the budget")
        if self.growth < 1.0:
            raise ValueError("token budget: growth must be at least 1")
        if self.continuations < 0:
            raise ValueError("token budget: continuations cannot be negative")


@dataclass(frozen=True, slots=True)
class Continue:
    max_tokens: int
    continuation: int


def continue_truncated(budget: TokenBudget, *, current: int, done: int) -> Continue | Truncated:
    """What follows a response cut at ``current`` tokens after ``done`` continuations."""
    if done >= budget.continuations:
        return Truncated(done)
    return Continue(
        max_tokens=min(budget.cap, round(current * budget.growth)), continuation=done + 1
    )


CHARACTERS_PER_TOKEN = 32
"""Far more than any tokenizer makes of one token (about four for English, a dozen for
a run of spaces): an answer this much longer than its budget is not an answer."""


def past_its_budget(max_tokens: int, characters: int, output_tokens: int = 0) -> bool:
    """Whether an answer still streaming has gone on so far past its token budget that the
    server is not keeping it: by the tokens it reports, or by its size.

    Example: ``past_its_budget(100, characters=10_000)`` is ``True``.
    """
    return output_tokens > 2 * max_tokens or characters > CHARACTERS_PER_TOKEN * max_tokens + 4096
