"""Fakes of the Hooks and Notifier ports: hooks that answer as a test scripts them,
and a notifier that remembers what it was told."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from treadle.domain.values.hooks import (
    NO_VERDICT,
    AttentionKind,
    HookEvent,
    HookInput,
    HookVerdict,
)


@dataclass
class ScriptedHooks:
    """Answers each event with its verdict (a function of what happened, or a value);
    an event with none is not wanted. ``fired`` keeps everything it was told."""

    verdicts: Mapping[HookEvent, HookVerdict | Callable[[HookInput], HookVerdict]] = field(
        default_factory=dict
    )
    fired: list[HookInput] = field(default_factory=list)

    def wants(self, event: HookEvent, subject: str = "") -> bool:
        return event in self.verdicts

    async def fire(self, happened: HookInput) -> HookVerdict:
        self.fired.append(happened)
        verdict = self.verdicts.get(happened.event, NO_VERDICT)
        return verdict(happened) if callable(verdict) else verdict


@dataclass
class RecordingNotifier:
    told: list[tuple[AttentionKind, str]] = field(default_factory=list)

    def notify(self, kind: AttentionKind, message: str, last_answer: str = "") -> None:
        self.told.append((kind, message))

    async def settle(self, timeout: float) -> None:
        return None
