"""Continuing an answer that hit its token budget.

Example::

    >>> budget = TokenBudget(initial=1000, growth=2.0, cap=3000, continuations=2)
    >>> continue_truncated(budget, current=1000, done=0)
    Continue(max_tokens=2000, continuation=1)
"""

from __future__ import annotations

from dataclasses import dataclass

from treadle.domain.values.outcome import Truncated

MIN_THINKING_BUDGET = 1024
"""The least thinking budget Anthropic takes."""


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

    def thinking_within(self, max_tokens: int) -> int:
        """The thinking budget a request of ``max_tokens`` may ask for: the configured
        one while it stays below ``max_tokens`` (a server refuses one that does not);
        when the window left less, half of it, if that is still Anthropic's least; else
        none. Thinking kept on, smaller, rather than off: a tool loop whose thinking is
        switched off for one request is refused when it is switched on again.

        >>> budget = TokenBudget(initial=8192, thinking=4096)
        >>> budget.thinking_within(8192), budget.thinking_within(4096), budget.thinking_within(2000)
        (4096, 2048, 0)
        """
        if self.thinking <= 0 or max_tokens > self.thinking:
            return self.thinking
        half = max_tokens // 2
        return half if half >= MIN_THINKING_BUDGET else 0


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


def cut_short(answer_tokens: int, budget: int) -> bool:
    """Whether an answer cut at ``answer_tokens`` stopped short of its ``budget`` by more
    than a count's slack (2 %, 16 at least: a server may count the last token or not).

    >>> cut_short(12, 8192), cut_short(8190, 8192), cut_short(0, 8192)
    (True, False, False)
    """
    return 0 < answer_tokens < budget - max(16, budget // 50)


CHARACTERS_PER_TOKEN = 32
"""Far more than any tokenizer makes of one token (about four for English, a dozen for
a run of spaces): an answer this much longer than its budget is not an answer."""


def past_its_budget(max_tokens: int, characters: int, output_tokens: int = 0) -> bool:
    """Whether an answer still streaming has gone on so far past its token budget that the
    server is not keeping it: by the tokens it reports, or by its size.

    Example: ``past_its_budget(100, characters=10_000)`` is ``True``.
    """
    return output_tokens > 2 * max_tokens or characters > CHARACTERS_PER_TOKEN * max_tokens + 4096
