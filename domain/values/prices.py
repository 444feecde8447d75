"""What tokens cost: a model's prices per kind, and the cost of a turn's usage.

Example::

    >>> Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75).cost(
    ...     Usage(1_000_000, 0, cache_read_tokens=1_000_000))
    0.3
"""

from __future__ import annotations

from dataclasses import dataclass

from treadle.domain.values.conversation import Usage

PER = 1_000_000
"""Prices are per million tokens, as providers publish them."""


@dataclass(frozen=True, slots=True)
class Prices:
    """Dollars per million tokens of each kind. A cache price not given is the input's:
    no discount is assumed that the configuration does not state. Reasoning is output,
    and costs what output costs."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """The dollars ``usage`` costs at these prices."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        return (
            usage.uncached_input_tokens * self.input
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.output_tokens * self.output
        ) / PER
