"""Keeping a conversation within the model's context window: the accounting and the
decisions, as pure functions of plain values.

Before each request its size is the prompt the server counted for an earlier request
(its ``input_tokens``, the *anchor*) plus an estimate of what was appended since
(:mod:`tokens`). A request never asks for more output than fits: prompt + output
budget + a small margin stays within the window, the budget shrinking down to a floor.
Above ``compact_at`` of the window, or when not even the floor fits, room is made in
stages (:func:`room_step`): prune old tool results, then compact, then prune even the
recent ones; when nothing is left to do, the request cannot be sent.

Example::

    >>> fit_output(window=8192, prompt=7000, wanted=2048)
    1029
    >>> room_step("start", prompt=7000, window=8192, wanted=2048, settings=ContextSettings())
    Prune()
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from treadle.domain.rules.tokens import BYTES_PER_TOKEN
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import (
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    MessageAdded,
    RequestSent,
    ResponseReceived,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.model import ContextExceeded, ContextWindow, StopReason

REFUSAL_ORIGIN = "the server's refusal"
ESTIMATED_REFUSAL_ORIGIN = "the server's refusal (an upper bound: it named no figure)"
FILLED_ORIGIN = "the server's stop (prompt and answer filled it)"
MIN_LEARNED_WINDOW = 1024
"""The least window a refusal or a stop may teach: a figure below it is the server's
mistake (a proxy's "maximum context length is 0 tokens"), not its window."""
DEFAULT_BUDGET = 8192
MIN_BUDGET = 256
RESULT_SHARE = 0.15
"""The share of the window one tool result may take."""
RESULT_BYTES_PER_TOKEN = 4
"""Bytes of command output a token of the window stands for, when a result is bounded."""
MIN_RESULT_BYTES = 2_000
RESULT_CAP = 1 << 30
"""No output limit of its own: the window's share alone bounds the result."""
LEAST_NEWEST_BYTES = 400
"""The least of the newest result kept when even it must be cut to fit (a tiny window)."""
NEWEST_CUT_NOTE_BYTES = 200
"""What the note of a cut result adds to the bytes it keeps."""


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """How a conversation is kept within its window.

    ``window`` is the configured window (None: the server's, a known model's, or one a
    refusal names). Above ``compact_at`` of it, room is made. ``follow_window``: the
    output budget is a quarter of the window (at most the configured budget) rather
    than the configured budget itself. The shares are of
    the window: the newest part of the conversation kept intact, and the older words of
    the user kept verbatim by a compaction.
    """

    window: ContextWindow | None = None
    compact_at: float = 0.8
    follow_window: bool = True
    recent_share: float = 0.25
    user_share: float = 0.15

    def __post_init__(self) -> None:
        if not 0 < self.compact_at <= 1:
            raise ValueError("compact_at must be above 0 and at most 1")
        if self.window is not None and self.window.tokens < 1:
            raise ValueError("a context window must hold at least one token")


# Budgets -----------------------------------------------------------------------------


def margin(window: int) -> int:
    """Tokens left free for the estimate's error: 2 % of the window."""
    return max(16, window // 50)


def output_floor(window: int, wanted: int) -> int:
    """The least output worth asking for: below it, room is made instead."""
    return min(wanted, max(MIN_BUDGET, window // 16))


def initial_budget(configured: int, window: int | None, *, follow_window: bool) -> int:
    """A request's output budget: a quarter of the window, at most the configured one
    (an 8k window keeps 6k for the prompt); the configured one when the window is not
    known or the budget was set on purpose."""
    if window is None or not follow_window:
        return configured
    return max(min(MIN_BUDGET, configured), min(configured, window // 4))


def most_messages(window: int) -> int:
    """How many messages a conversation may gain since its last compaction: building a
    request costs about the same per message whatever its size, so hundreds of small
    stubs cost what a window of text does (64 at least; 128 on a 32k window)."""
    return max(64, window // 256)


def fit_output(*, window: int, prompt: int, wanted: int) -> int | None:
    """The output budget that fits beside ``prompt``: ``wanted``, or less down to the
    floor; None when not even the floor fits."""
    room = window - margin(window) - prompt
    if room >= output_floor(window, wanted):
        return min(wanted, room)
    return None


def summary_budget(window: int, configured: int) -> int:
    """What a compaction's summary may take: a tenth of the window, 256 to 4,096."""
    return min(configured, max(MIN_BUDGET, min(4096, window // 10)))


def result_bytes(window: int | None, output_limit: int) -> int:
    """The most one tool result may hold, in bytes: ``output_limit``, and a share of
    the window (a 30 kB output is a fifth of a 16k window; here it gets 9.8 kB)."""
    if window is None:
        return output_limit
    share = int(window * RESULT_SHARE * RESULT_BYTES_PER_TOKEN)
    return min(output_limit, max(MIN_RESULT_BYTES, share))


def newest_result_bytes(window: int, *, others: int, wanted: int) -> int:
    """What the newest tool result may keep when nothing else is left to make room
    with: its share of the window, or less, what the window has left beside the rest
    of the request (``others`` tokens) and the least answer worth asking for; a few
    hundred bytes, its head and tail, at the least."""
    room = window - margin(window) - output_floor(window, wanted) - others
    fits = int(room * BYTES_PER_TOKEN) - NEWEST_CUT_NOTE_BYTES
    return max(LEAST_NEWEST_BYTES, min(result_bytes(window, RESULT_CAP), fits))


# Making room -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """The request fits with this output budget."""

    max_tokens: int


@dataclass(frozen=True, slots=True)
class Prune:
    """Replace old tool results by stubs."""


@dataclass(frozen=True, slots=True)
class Compact:
    """Summarise the conversation into a compacted one."""


@dataclass(frozen=True, slots=True)
class PruneAll:
    """Replace every tool result but the newest by a stub, recent ones too."""


@dataclass(frozen=True, slots=True)
class NoRoom:
    """Nothing more can be done: what must be sent leaves no room for an answer."""


RoomStage = Literal["start", "pruned", "compacted", "pruned all"]
RoomStep = Send | Prune | Compact | PruneAll | NoRoom


def room_step(
    stage: RoomStage,
    *,
    prompt: int,
    window: int,
    wanted: int,
    settings: ContextSettings,
    compacted_at: int | None = None,
    gained: int = 0,
) -> RoomStep:
    """What to do next, at ``stage`` of making room, for a prompt of ``prompt`` tokens.

    A conversation compacted recently (``compacted_at``: its size then) is not
    compacted again for being above the threshold only, until it has grown by a tenth
    of the window: otherwise a conversation whose kept part alone is above it would be
    compacted at every request. One that ``gained`` more messages since its last
    compaction than :func:`most_messages` is compacted even below the threshold.
    """
    budget = fit_output(window=window, prompt=prompt, wanted=wanted)
    above = prompt > settings.compact_at * window
    crowded = gained > most_messages(window)
    match stage:
        case "start":
            return Send(budget) if budget is not None and not above and not crowded else Prune()
        case "pruned":
            recently = compacted_at is not None and prompt - compacted_at < window // 10
            if budget is not None and (not above or recently) and not crowded:
                return Send(budget)
            return Compact()
        case "compacted":
            return Send(budget) if budget is not None else PruneAll()
        case "pruned all":
            return Send(budget) if budget is not None else NoRoom()


CutKind = Literal["cut", "window full"]
"""Why an answer was cut: by its own budget (or a cap between treadle and the model),
or because prompt and answer filled the context window."""

NO_ROOM_SLACK = 8
"""Tokens by which a continuation's prompt and answer may exceed the cut before it and
still show a ceiling: a server may count the last token or not."""


def cut_kind(
    stop: StopReason,
    usage: Usage,
    *,
    budget: int,
    window: int | None,
    previous: Usage | None = None,
) -> CutKind:
    """Whether an answer cut at ``usage`` (its budget ``budget``) filled the window.

    The server's own word (``context_full``) is taken. Otherwise a stop short of the
    budget is the window's only when the figures show it: with the window known, prompt
    and answer reach it; with none known, an inference cannot tell a full window from a
    gateway or a provider that caps answers below the budget asked, so the answer is a
    cut, continued, until a continuation (``previous`` is the cut it continues) is cut
    again at once with no room, its prompt and answer no more than the cut before.

    >>> cut_kind("max_tokens", Usage(79, 1), budget=8192, window=128_000)
    'cut'
    >>> cut_kind("max_tokens", Usage(1714, 334), budget=8192, window=2048)
    'window full'
    >>> cut_kind("max_tokens", Usage(1752, 12), budget=8192, window=None)
    'cut'
    """
    if stop == "context_full":
        return "window full"
    if stop != "max_tokens" or usage.input_tokens <= 0 or usage.output_tokens >= budget:
        return "cut"
    if window is not None:
        return "window full" if usage.total >= window - margin(window) else "cut"
    if previous is None or previous.input_tokens <= 0:
        return "cut"
    return "window full" if usage.total <= previous.total + NO_ROOM_SLACK else "cut"


# Learning the window ------------------------------------------------------------------


def learned_window(
    refusal: ContextExceeded, current: ContextWindow | None, *, prompt_estimate: int
) -> ContextWindow | None:
    """The window a refusal teaches, or None when it teaches nothing new.

    The figure the server named; else an upper bound: nine tenths of the refused
    prompt (as the server counted it, or as estimated), if that is below what was
    believed. A refusal of the output budget alone (the prompt fits) names the window
    or teaches nothing.
    """
    if refusal.window is not None:
        figure, origin = refusal.window, REFUSAL_ORIGIN
    elif refusal.output_too:
        return None
    else:
        refused = refusal.prompt_tokens if refusal.prompt_tokens is not None else prompt_estimate
        figure, origin = refused * 9 // 10, ESTIMATED_REFUSAL_ORIGIN
        if figure < 1 or (current is not None and current.tokens <= figure):
            return None
    if current is not None and current.tokens == figure:
        return None
    return ContextWindow(figure, origin)


def refused_prompt(refusal: ContextExceeded) -> int | None:
    """What the server counted of a prompt it refused: the figure it named, else (a
    refusal of the prompt itself) at least its window; None when it says nothing."""
    if refusal.prompt_tokens is not None:
        return refusal.prompt_tokens
    if refusal.window is not None and not refusal.output_too:
        return refusal.window
    return None


def filled_window_learned(
    usage: Usage, current: ContextWindow | None, previous: Usage | None = None
) -> ContextWindow | None:
    """The window a cut that filled it shows when none was known: prompt + answer (of
    the cut before it too, when a continuation was cut again with no room)."""
    total = max(usage.total, previous.total if previous is not None else 0)
    if current is not None or total <= 0:
        return None
    return ContextWindow(total, FILLED_ORIGIN)


def unbelievable(window: ContextWindow, *, accepted: int) -> str:
    """Why a window a refusal or a stop teaches cannot be the server's, or "" when it
    can be: it is below :data:`MIN_LEARNED_WINDOW`, or below a prompt the same server
    accepted (``accepted`` tokens). One lying or buggy refusal must not end every
    request of the session.

    >>> unbelievable(ContextWindow(0, REFUSAL_ORIGIN), accepted=0)
    'below the least of 1,024 tokens any model has'
    >>> unbelievable(ContextWindow(2048, REFUSAL_ORIGIN), accepted=3000)
    'below the prompt of 3,000 tokens the server accepted'
    """
    if window.tokens < MIN_LEARNED_WINDOW:
        return f"below the least of {MIN_LEARNED_WINDOW:,} tokens any model has"
    if window.tokens < accepted:
        return f"below the prompt of {accepted:,} tokens the server accepted"
    return ""


def usable_window(window: ContextWindow) -> bool:
    """Whether a recorded window can be kept to: one of no tokens cannot, nor one learned
    below the floor (sessions of older versions recorded what a lying refusal said)."""
    return window.tokens >= 1 and not (is_learned(window) and window.tokens < MIN_LEARNED_WINDOW)


def is_learned(window: ContextWindow | None) -> bool:
    return window is not None and window.origin in (
        REFUSAL_ORIGIN,
        ESTIMATED_REFUSAL_ORIGIN,
        FILLED_ORIGIN,
    )


def merge_window(
    current: ContextWindow | None,
    found: ContextWindow | None,
    configured: ContextWindow | None = None,
) -> ContextWindow | None:
    """The window to keep to once the server was asked: the configured one, always;
    else what the server (or the table) says, else what was known. A window learned
    from the server's own refusal or stop wins over a larger figure the server or the
    table gives: it is what the server does, not what it says."""
    if configured is not None:
        return configured
    chosen = found or current
    if current is not None and chosen is not None and is_learned(current):
        return current if current.tokens < chosen.tokens else chosen
    return chosen


# The state, folded from the events -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Anchor:
    """The first ``messages`` messages, with the system prompt and the tools, came to
    ``tokens`` as the server counted them (or as a pruning left them)."""

    messages: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextState:
    """What an agent's accounting knows, folded from its own events (:func:`fold`), so
    that a resumed or replayed session knows exactly what the live one knew."""

    anchor: Anchor | None = None
    compacted_at: int | None = None
    messages: int = 0
    compacted_messages: int = 0  # how many the last compaction left
    pending: int | None = None  # message count of the request whose usage may anchor
    compacting: bool = False
    accepted: int = 0  # the largest prompt the server answered, as it counted it


def fold(state: ContextState, event: TurnEvent) -> ContextState:
    """``state`` after one of the agent's own events."""
    match event:
        case MessageAdded():
            return replace(state, messages=state.messages + 1)
        case RequestSent(message_count=count, continuation=continuation):
            # A continuation's prompt holds the answer so far, a summary request a
            # different list: neither counts the conversation as it stands.
            pending = None if continuation or state.compacting else count
            return replace(state, pending=pending)
        case ResponseReceived(usage=usage):
            accepted = max(state.accepted, usage.input_tokens)
            if state.pending is None or usage.input_tokens <= 0:
                return replace(state, pending=None, accepted=accepted)
            anchor = Anchor(state.pending, usage.input_tokens)
            return replace(state, anchor=anchor, pending=None, accepted=accepted)
        case ContextPruned(tokens_after=tokens):
            return replace(state, anchor=Anchor(state.messages, tokens))
        case CompactionStarted():
            return replace(state, compacting=True)
        case ContextCompacted(messages=messages, tokens_after=tokens):
            return replace(
                state,
                anchor=None,
                compacted_at=tokens,
                messages=len(messages),
                compacted_messages=len(messages),
                compacting=False,
            )
        case TurnStarted() | TurnEnded():
            return replace(state, compacting=False, pending=None)
    return state


def window_of(events: list[TurnEvent] | tuple[TurnEvent, ...]) -> ContextWindow | None:
    """The last window recorded by any agent of a session (sub-agents share it) that can
    be kept to (:func:`usable_window`)."""
    for event in reversed(events):
        if isinstance(event, ContextWindowKnown):
            window = ContextWindow(event.window, event.origin)
            if usable_window(window):
                return window
    return None
