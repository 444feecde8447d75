"""Keeping secrets out of everything treadle stores or shows.

The values of secret-looking environment variables (names with KEY, TOKEN, SECRET or
PASSWORD in them), the configured API key, and strings shaped like well-known API keys
become ``[redacted]`` wherever they appear.

Example::

    >>> Redactor.from_environ({"MY_API_KEY": "sk-0123456789"}).redact("key=sk-0123456789")
    'key=[redacted]'
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from treadle.domain.values.events import AnswerDelta, TurnEvent
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest
from treadle.ports.terminal import Terminal

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter values (``TOKENIZERS_PARALLELISM=false``) would redact ordinary words."""

SECRET_NAME = re.compile("KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)

KEY_SHAPES: dict[str, str] = {
    "OpenAI / Anthropic": r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
    "GitHub": r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
    "Slack": r"\bxox[abpr]-[A-Za-z0-9-]{10,}",
    "AWS access key": r"\bAKIA[0-9A-Z]{16}\b",
    "Google API key": r"\bAIza[0-9A-Za-z_-]{35}",
}
"""Keys recognised by their shape even when no variable holds them (one pasted in a
task, printed from a file)."""

SHAPE_STARTS = ("sk-", "gh", "github_pat_", "xox", "AKIA", "AIza")
"""Every key shape starts with one of these: text without any needs no regex search."""

T = TypeVar("T")


class Redactor:
    """Replaces each known secret value, and each key-shaped string, by ``[redacted]``."""

    def __init__(self, secrets: Iterable[str] = (), *, shapes: Collection[str] = ()) -> None:
        self.secrets = tuple(
            sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=lambda s: (-len(s), s))
        )
        # Longest first, so a secret that contains another is replaced whole.
        patterns = [re.escape(s) for s in self.secrets] + list(shapes)
        self._pattern = re.compile("|".join(patterns)) if patterns else None
        self._shape_starts = SHAPE_STARTS if shapes else ()
        # Substring tests are much quicker than the pattern: most text has no secret.
        # JSON writes a secret with its quotes, backslashes and controls escaped.
        escaped = {json.dumps(s, ensure_ascii=False)[1:-1] for s in self.secrets}
        self._needles = tuple(self.secrets)
        self._json_needles = tuple(escaped | set(self.secrets))
        self._first_chars = frozenset(s[0] for s in self.secrets)
        self._longest = max((len(s) for s in self.secrets), default=0)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], *, also: Iterable[str] = ()) -> Redactor:
        """Secrets from ``environ``: secret-looking names, plus the variables named in ``also``."""
        names = set(also)
        values = [
            value
            for name, value in environ.items()
            if value and (name in names or SECRET_NAME.search(name))
        ]
        return cls(values, shapes=tuple(KEY_SHAPES.values()))

    def redact(self, text: str) -> str:
        if self._pattern is None or not self._may_hold(text, self._needles):
            return text
        return self._pattern.sub(REDACTED, text)

    __call__ = redact

    def found_in_json(self, line: str) -> bool:
        """Whether a line of JSON may hold a secret: the quick test before redacting."""
        return self._may_hold(line, self._json_needles)

    def _may_hold(self, text: str, needles: tuple[str, ...]) -> bool:
        if any(needle in text for needle in needles):
            return True
        return any(start in text for start in self._shape_starts) and bool(
            self._pattern and self._pattern.search(text)
        )

    def releasable(self, text: str) -> int:
        """How much of ``text`` a stream can let out now; the rest waits for more.

        A stream shows text before it knows what follows: an end that could be the
        start of a secret, or a secret that could still grow into a longer one, waits
        for the next piece, so a secret split across pieces is still caught whole.
        """
        cut = len(text)
        for index in range(max(0, len(text) - self._longest + 1), len(text)):
            if text[index] in self._first_chars:
                tail = text[index:]
                if any(len(s) > len(tail) and s.startswith(tail) for s in self.secrets):
                    cut = index
                    break
        if self._pattern is not None and cut < len(text):
            for match in self._pattern.finditer(text):
                if match.start() < cut < match.end():
                    return match.start()
        return cut

    def redact_value(self, value: T) -> T:
        """``value`` with every string inside it redacted (frozen dataclasses, tuples)."""
        return _redact_value(value, self.redact)  # type: ignore[no-any-return]


def _redact_value(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, tuple):
        items = tuple(_redact_value(item, redact) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for field in dataclasses.fields(value):
            old = getattr(value, field.name)
            new = _redact_value(old, redact)
            if new is not old:
                changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


class EventRedactor:
    """Redacts a flow of events, answer deltas included.

    Deltas are held back while their end could be the start of a secret, and let out
    (redacted) with the next piece of the same agent's answer, or before that agent's
    next event. ``redact`` may be a plain function, which then works delta by delta.
    """

    def __init__(self, redact: Redactor | Callable[[str], str]) -> None:
        self._redact = redact
        self._releasable = redact.releasable if isinstance(redact, Redactor) else len
        self._pending: dict[str, str] = {}

    def process(self, event: TurnEvent) -> list[TurnEvent]:
        """The events to pass on for ``event``, in order (none while a delta is held)."""
        return [
            e if isinstance(e, AnswerDelta) else _redact_value(e, self._redact)
            for e in self.in_order(event)
        ]

    def in_order(self, event: TurnEvent) -> list[TurnEvent]:
        """Like :meth:`process`, but only deltas come out redacted (the caller does the rest)."""
        if isinstance(event, AnswerDelta):
            text = self._pending.pop(event.agent, "") + event.text
            cut = self._releasable(text)
            if cut < len(text):
                self._pending[event.agent] = text[cut:]
            shown = self._redact(text[:cut])
            return [AnswerDelta(shown, event.agent)] if shown else []
        return [*self.flush(event.agent), event]

    def flush(self, agent: str | None = None) -> list[TurnEvent]:
        """Let out what is held back, for one agent or (None) for all."""
        agents = list(self._pending) if agent is None else [agent]
        out: list[TurnEvent] = []
        for name in agents:
            text = self._pending.pop(name, "")
            if text:
                out.append(AnswerDelta(self._redact(text), name))
        return out


class RedactingTerminal:
    """A Terminal that shows and asks only redacted text; everything else is delegated."""

    def __init__(self, inner: Terminal, redactor: Redactor) -> None:
        self.inner = inner
        self._redactor = redactor
        self._events = EventRedactor(redactor)

    def show(self, event: TurnEvent) -> None:
        for shown in self._events.process(event):
            self.inner.show(shown)

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        return await self.inner.ask_approval(self._redactor.redact_value(request))

    async def ask_question(self, question: str) -> str | None:
        return await self.inner.ask_question(self._redactor.redact(question))

    def bind_interrupt(self, interrupt: Callable[[], None]) -> None:
        self.inner.bind_interrupt(interrupt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
