"""Keeping one agent's conversation within the model's context window.

The decisions are the pure functions of :mod:`context_window`, :mod:`pruning` and
:mod:`compaction`; the :class:`ContextKeeper` only estimates, applies what they decide
to the history, asks the model for summaries and reports every change as an event.
Its knowledge is folded from those events, so a resumed or replayed session knows
exactly what the live one knew.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from treadle.domain.loop.stop import StopSignal
from treadle.domain.rules import context_window as rules
from treadle.domain.rules.compaction import (
    AskForSummary,
    SummaryFailed,
    SummaryRefused,
    SummaryWritten,
    start_compaction,
    step,
    worth_compacting,
)
from treadle.domain.rules.context_window import (
    Compact,
    ContextSettings,
    ContextState,
    NoRoom,
    Prune,
    PruneAll,
    RoomStage,
    Send,
    room_step,
)
from treadle.domain.rules.history import History
from treadle.domain.rules.pruning import prune, recent_start
from treadle.domain.rules.tokens import (
    MESSAGE_OVERHEAD,
    Measure,
    as_is,
    estimate_tokens,
    fixed_tokens,
    measured_as,
    messages_tokens,
)
from treadle.domain.rules.truncation import TokenBudget
from treadle.domain.values.conversation import Message, Usage
from treadle.domain.values.events import (
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    ContextWindowKnown,
    Notice,
    TurnEvent,
    WindowFilled,
)
from treadle.domain.values.model import (
    ContextExceeded,
    ContextWindow,
    ServerFacts,
    StopReason,
    ToolSpec,
)
from treadle.domain.values.outcome import OutOfContext, Stopped, TurnEnding

log = logging.getLogger(__name__)

CONTINUATION_OVERHEAD = 3 * MESSAGE_OVERHEAD + 16
"""What a continuation adds besides the answer so far: its messages and the request."""
SERVER_SETTINGS = (
    "give the server a larger context (llama-server -c, OLLAMA_CONTEXT_LENGTH, "
    "vllm --max-model-len) and set context_window to match"
)


@dataclass
class SharedWindow:
    """The window of a session's model, shared by all its agents: what one learns (a
    refusal in a sub-agent), all know."""

    window: ContextWindow | None = None


Summarize = Callable[
    [Sequence[Message], Sequence[ToolSpec], StopSignal, int],
    Awaitable[str | ContextExceeded | TurnEnding],
]
"""Asks the model for a summary of these messages, with no tool and nothing shown: its
text, the refusal if the request is too long, or why the turn ends."""


class ContextKeeper:
    """One agent's accounting: estimates each request, fits its output budget, and
    makes room when the window calls for it."""

    def __init__(
        self,
        settings: ContextSettings,
        budget: TokenBudget,
        shared: SharedWindow,
        emit: Callable[[TurnEvent], None],
        agent: str = "",
        state: ContextState | None = None,
        recorded: Callable[[Message], Message] = as_is,
    ) -> None:
        self.settings = settings
        self.recorded = recorded
        self.measure = measured_as(recorded)
        """Messages are estimated, and stubs made, as the transcript keeps them."""
        self.budget = budget
        self.shared = shared
        self.emit = emit
        self.agent = agent
        self.state = state or ContextState()
        self.summarize: Summarize | None = None
        self._fixed: tuple[tuple[str, tuple[str, ...]], int] | None = None
        self._server_count: int | None = None  # a refusal's count of the prompt, once
        self._pruned_to = 0  # where the last pruning stopped (a hint for the next)
        self.before_compact: Callable[[], Awaitable[None]] | None = None
        """Awaited as a compaction starts (the PreCompact hooks, issue 23)."""

    @property
    def window(self) -> ContextWindow | None:
        return self.shared.window

    def restart(self, state: ContextState) -> None:
        """Go on from ``state``, with a conversation of its own (a resume, a replay)."""
        self.state = state
        self._server_count, self._pruned_to = None, 0

    def observe(self, event: TurnEvent) -> None:
        """Every event of this agent passes here: the state is their fold."""
        if event.agent == self.agent:
            self.state = rules.fold(self.state, event)

    # What the server says ------------------------------------------------------------

    def take_facts(self, facts: ServerFacts) -> None:
        """The window once the server (or the table) was asked; recorded when it changes."""
        merged = rules.merge_window(self.window, facts.window, self.settings.window)
        self._set_window(merged)

    def _set_window(self, window: ContextWindow | None) -> None:
        if window is not None and window != self.shared.window:
            self.shared.window = window
            self.emit(ContextWindowKnown(window.tokens, window.origin, self.agent))

    # Accounting ----------------------------------------------------------------------

    def fixed(self, system: str, tools: Sequence[ToolSpec]) -> int:
        """The estimate of what every request carries besides the conversation."""
        key = (system, tuple(spec.name for spec in tools))
        if self._fixed is None or self._fixed[0] != key:
            self._fixed = (key, fixed_tokens(system, tools))
        return self._fixed[1]

    def estimate(
        self, history: History, system: str, tools: Sequence[ToolSpec], shown: str = ""
    ) -> int:
        """The request's prompt in tokens: the server's count of an earlier prompt plus
        the estimate of what came since (or the estimate of it all, with no count)."""
        anchor = self.state.anchor
        if anchor is not None and anchor.messages <= len(history):
            prompt = anchor.tokens + history.tokens_since(anchor.messages)
        else:
            prompt = self.fixed(system, tools) + history.tokens
        if shown:
            shown = self.recorded(Message.assistant(shown)).text
            prompt += estimate_tokens(shown) + CONTINUATION_OVERHEAD
        if self._server_count is not None:
            prompt = max(prompt, self._server_count)
        return prompt

    def initial_budget(self) -> int:
        """The output budget a request starts from: a thinking budget keeps room for an
        answer after it, as the configuration asked."""
        window = self.window.tokens if self.window is not None else None
        budget = rules.initial_budget(
            self.budget.initial, window, follow_window=self.settings.follow_window
        )
        thinking = self.budget.thinking
        return (
            max(budget, min(self.budget.initial, thinking + rules.MIN_BUDGET))
            if thinking
            else budget
        )

    def result_bytes(self, output_limit: int) -> int:
        window = self.window.tokens if self.window is not None else None
        return rules.result_bytes(window, output_limit)

    # Making room ---------------------------------------------------------------------

    async def prepare(
        self,
        history: History,
        system: str,
        tools: Sequence[ToolSpec],
        stop: StopSignal,
        *,
        shown: str,
        wanted: int,
        filled: bool = False,
    ) -> int | TurnEnding:
        """The output budget of the next request, after making room if the window calls
        for it; or why the request cannot be sent. ``shown`` is the answer so far of a
        continuation, which goes with the request and cannot be compacted."""
        window = self.window
        if window is None:
            self._server_count = None
            return wanted
        stage: RoomStage = "start"
        while True:
            prompt = self.estimate(history, system, tools, shown)
            decision = room_step(
                stage,
                prompt=prompt,
                window=window.tokens,
                wanted=wanted,
                settings=self.settings,
                compacted_at=self.state.compacted_at,
                gained=len(history) - self.state.compacted_messages,
            )
            match decision:
                case Send(max_tokens=max_tokens):
                    self._server_count = None
                    return max_tokens
                case Prune():
                    self._prune(history, window, system, tools, all_but_newest=False)
                    stage = "pruned"
                case Compact():
                    ended = await self._compact(history, prompt, window, system, tools, stop)
                    if ended is not None:
                        return ended
                    stage = "compacted"
                case PruneAll():
                    others = prompt - _newest_result_tokens(history.messages, self.measure)
                    newest = rules.newest_result_bytes(window.tokens, others=others, wanted=wanted)
                    self._prune(
                        history, window, system, tools, all_but_newest=True, newest_bytes=newest
                    )
                    stage = "pruned all"
                case NoRoom():
                    self._server_count = None
                    return OutOfContext(
                        self._no_room(history, prompt, window, system, tools, shown, filled)
                    )

    def _prune(
        self,
        history: History,
        window: ContextWindow,
        system: str,
        tools: Sequence[ToolSpec],
        *,
        all_but_newest: bool,
        newest_bytes: int = 0,
    ) -> None:
        """Stub old results (the last resort: all but the newest, cut to
        ``newest_bytes``). The figures recorded are the conversation's, without any
        continuation: what the estimate of the next request starts from."""
        before = self.estimate(history, system, tools)
        keep = int(window.tokens * self.settings.recent_share)
        hint = self._pruned_to if 0 < self._pruned_to <= len(history) else 0
        positions, stubs = prune(
            history.messages,
            keep_tokens=keep,
            all_but_newest=all_but_newest,
            newest_bytes=newest_bytes,
            start=hint,
            measure=self.measure,
            recorded=self.recorded,
        )
        if not all_but_newest:
            # Up to here nothing is left to prune: the next pruning starts from here.
            self._pruned_to = recent_start(history.messages, keep, self.measure)
        if not positions:
            return
        fixed = self.fixed(system, tools)
        anchor = self.state.anchor
        counted = anchor is not None and anchor.messages <= len(history)
        split = anchor.messages if anchor is not None and counted else 0
        estimated_prefix = fixed + history.tokens - history.tokens_since(split)
        history.put(positions, stubs)
        self._server_count = None
        if anchor is not None and counted:
            # The server counted the anchored part; it shrinks as its estimate did.
            now = fixed + history.tokens - history.tokens_since(split)
            after = anchor.tokens * now // max(1, estimated_prefix) + history.tokens_since(split)
        else:
            after = fixed + history.tokens
        self.emit(ContextPruned(before, after, window.tokens, positions, stubs, self.agent))

    async def _compact(
        self,
        history: History,
        before: int,
        window: ContextWindow,
        system: str,
        tools: Sequence[ToolSpec],
        stop: StopSignal,
    ) -> TurnEnding | None:
        recent = int(window.tokens * self.settings.recent_share)
        users = int(window.tokens * self.settings.user_share)
        budget = rules.summary_budget(window.tokens, self.budget.initial)
        fixed = self.fixed(system, tools)
        if self.summarize is None or not worth_compacting(
            history.messages,
            recent_tokens=recent,
            user_tokens=users,
            summary_tokens=budget,
            measure=self.measure,
        ):
            return None
        compaction, action = start_compaction(
            history.messages,
            room=self._summary_room(fixed, budget),
            recent_tokens=recent,
            user_tokens=users,
            measure=self.measure,
        )
        if self.before_compact is not None:
            await self.before_compact()
        self.emit(CompactionStarted(before, window.tokens, compaction.end, self.agent))
        while isinstance(action, AskForSummary):
            answer = await self.summarize(action.messages, tools, stop, budget)
            match answer:
                case str(text):
                    event: SummaryWritten | SummaryRefused | SummaryFailed = SummaryWritten(text)
                case ContextExceeded() as refusal:
                    self.learn(
                        refusal,
                        prompt_estimate=fixed + messages_tokens(action.messages, self.measure),
                    )
                    budget = rules.summary_budget(self._tokens(), self.budget.initial)
                    event = SummaryRefused(self._summary_room(fixed, budget))
                case Stopped():
                    return Stopped()
                case _:
                    event = SummaryFailed()
            compaction, action = step(compaction, event)
        history.replace(action.messages)
        self._server_count = None
        self._pruned_to = 0
        after = fixed + history.tokens
        log.debug("%s compacted: %d -> %d tokens", self.agent or "main", before, after)
        self.emit(
            ContextCompacted(
                before,
                after,
                self._tokens(),
                action.messages,
                action.summarized,
                action.dropped,
                self.agent,
            )
        )
        return None

    def _tokens(self) -> int:
        assert self.window is not None
        return self.window.tokens

    def _summary_room(self, fixed: int, budget: int) -> int:
        window = self._tokens()
        return window - rules.margin(window) - fixed - budget

    def _no_room(
        self,
        history: History,
        prompt: int,
        window: ContextWindow,
        system: str,
        tools: Sequence[ToolSpec],
        shown: str,
        filled: bool,
    ) -> str:
        size = f"the context window of {window.tokens:,} tokens ({window.origin})"
        if shown:
            answer = f"the answer so far (about {estimate_tokens(shown):,} tokens)"
            where = f"filled {size}" if filled else f"leaves no room in {size} to go on"
            return (
                f"{answer} {where}, and even compacted a continuation cannot fit: "
                f"{SERVER_SETTINGS}, or lower max_tokens"
            )
        least = self.fixed(system, tools) + (
            history.tokens - history.tokens_since(1) if len(history) else 0
        )
        return (
            f"the request needs about {prompt:,} tokens even after compacting, and "
            f"{size} leaves no room for an answer (the system prompt, the tools and the "
            f"task alone take about {least:,}): {SERVER_SETTINGS}"
        )

    # Refusals and cuts ---------------------------------------------------------------

    def learn(self, refusal: ContextExceeded, *, prompt_estimate: int) -> None:
        """What a refusal for length teaches: the window it names (or a bound on it),
        and what the server counted of the refused prompt, which the next estimate
        takes over its own until room is made: the server knows better. A configured
        window is kept, and a figure that cannot be the server's window is not learned
        (:func:`~treadle.domain.rules.context_window.unbelievable`): either is said."""
        self._learn(rules.learned_window(refusal, self.window, prompt_estimate=prompt_estimate))
        self._server_count = rules.refused_prompt(refusal)

    def _learn(self, learned: ContextWindow | None) -> None:
        if learned is None:
            return
        configured = self.settings.window
        if configured is not None:
            if learned.tokens < configured.tokens:
                self.emit(
                    Notice(
                        "window_not_learned",
                        f"{learned.origin} says the context window is {learned.tokens:,} "
                        f"tokens; the configured context_window of {configured.tokens:,} "
                        "is kept",
                        self.agent,
                    )
                )
            return
        why = rules.unbelievable(learned, accepted=self.state.accepted)
        if why:
            self.emit(
                Notice(
                    "window_not_learned",
                    f"{learned.origin} says the context window is {learned.tokens:,} tokens, "
                    f"{why}: not learned",
                    self.agent,
                )
            )
            return
        self._set_window(learned)

    def after_cut(
        self, stop: StopReason, usage: Usage, max_tokens: int, previous: Usage | None = None
    ) -> bool:
        """Whether a cut answer filled the window (it is then said so), as
        :func:`~treadle.domain.rules.context_window.cut_kind` judges it (``previous``: the
        cut this continuation goes on from); a fill with no window known teaches it. The
        continuation's prompt is at least the cut request's and its answer, as the server
        counted them: the estimate of text a model wrote can be far off (llama.cpp
        counts ``<|im_end|>`` as six tokens)."""
        if usage.input_tokens > 0:
            counted = usage.input_tokens + usage.output_tokens + 2 * MESSAGE_OVERHEAD
            self._server_count = max(self._server_count or 0, counted)
        window = self.window
        tokens = window.tokens if window is not None else None
        kind = rules.cut_kind(stop, usage, budget=max_tokens, window=tokens, previous=previous)
        if kind == "cut":
            return False
        self._learn(rules.filled_window_learned(usage, self.window, previous))
        tokens = self.window.tokens if self.window is not None else None
        self.emit(
            WindowFilled(tokens or usage.total, usage.input_tokens, usage.output_tokens, self.agent)
        )
        return True


def _newest_result_tokens(messages: Sequence[Message], measure: Measure) -> int:
    """What the newest tool result of ``messages`` takes (0 when there is none)."""
    newest = next((m for m in reversed(messages) if m.role == "tool"), None)
    return measure(newest) if newest is not None else 0
