"""Which model failures are retried, and after what pause (the seed's schedule).

Example::

    >>> schedule = RetrySchedule()
    >>> decide_retry(schedule, HttpStatusError(503), attempt=1, text_shown=False)
    Retry(pause=1.0, attempt=2)
"""

from __future__ import annotations

from dataclasses import dataclass

from treadle.domain.values.model import (
    ContextExceeded,
    CredentialsRejected,
    HttpStatusError,
    MalformedStream,
    ModelError,
    TransportError,
    TransportKind,
)

TRANSIENT_TRANSPORT: frozenset[TransportKind] = frozenset(
    {"connection_closed", "connection_reset", "broken_pipe", "timeout", "network_unreachable"}
)
RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """Pauses between attempts: three attempts in all, 1 s then 2 s apart."""

    pauses: tuple[float, ...] = (1.0, 2.0)

    @property
    def attempts(self) -> int:
        return len(self.pauses) + 1


@dataclass(frozen=True, slots=True)
class Retry:
    pause: float
    attempt: int


@dataclass(frozen=True, slots=True)
class GiveUp:
    why: str


def is_transient(error: ModelError) -> bool:
    """A failure that a new attempt on a fresh connection may not meet again."""
    match error:
        case TransportError(kind=kind):
            return kind in TRANSIENT_TRANSPORT
        case HttpStatusError(status=status):
            return status in RETRYABLE_STATUSES
        case CredentialsRejected() | MalformedStream():
            return False
        case ContextExceeded():
            # The same request would be refused again: it is made to fit instead.
            return False


def decide_retry(
    schedule: RetrySchedule, error: ModelError, *, attempt: int, text_shown: bool
) -> Retry | GiveUp:
    """Retry a transient failure while attempts remain and no answer text is on screen."""
    if not is_transient(error):
        return GiveUp("not a transient failure")
    if text_shown:
        return GiveUp("answer text was already shown")
    if attempt >= schedule.attempts:
        return GiveUp(f"{schedule.attempts} attempts failed")
    return Retry(pause=schedule.pauses[attempt - 1], attempt=attempt + 1)
