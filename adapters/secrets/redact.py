"""Keeping secrets out of everything treadle stores or shows.

The values of secret variables (:mod:`treadle.adapters.secrets.secret_names`: the names with
KEY, TOKEN, SECRET, PASSWORD… in them, and URLs with a password), the configured API
key, strings shaped like well-known API keys, and the password of any URL become
``[redacted]`` wherever they appear.

A value of 8 characters or more is redacted wherever it occurs. A shorter one (4 to 7
characters) is redacted where it stands alone, not inside a longer word, unless it is a
plain word or number (``false``, ``TRUE``, ``Yes``, ``1234``): those are settings
(``TOKENIZERS_PARALLELISM=false``), and redacting them would redact ordinary text.
Values shorter than 4 characters are not redacted.

Example::

    >>> Redactor.from_environ({"MY_API_KEY": "sk-0123456789"}).redact("key=sk-0123456789")
    'key=[redacted]'
    >>> Redactor.from_environ({"DB_PASS": "hunter2"}).redact("hunter2 hunter22")
    '[redacted] hunter22'
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from treadle.adapters.secrets.secret_names import URL_PASSWORD, is_secret, url_password
from treadle.domain.values.events import AnswerDelta, ReasoningDelta, TurnEvent
from treadle.domain.values.server_requests import FormAnswer, FormRequest
from treadle.domain.values.tools import ApprovalAnswer, ApprovalRequest
from treadle.ports.terminal import AsksForms, Terminal

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Values this long are redacted wherever they occur."""
MIN_SHORT_SECRET = 4
"""Shorter values than MIN_SECRET_LENGTH, down to this, only where they stand alone."""

KEY_SHAPES: dict[str, str] = {
    "OpenAI / Anthropic": r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
    "GitHub": r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
    "Slack": r"xox[abpr]-[A-Za-z0-9-]{10,}",
    "AWS access key": r"AKIA[0-9A-Z]{16}(?![A-Za-z0-9_])",
    "Google API key": r"AIza[0-9A-Za-z_-]{35}",
}
"""Keys recognised by their shape even when no variable holds them (one pasted in a
task, printed from a file); each must start a word. Passwords in URLs are recognised
too (:data:`URL_PASSWORD`: only the password is replaced)."""

HOLD_LONGEST = 512
"""The most a stream holds back while its end could still grow into a key shape."""

_WORD = "A-Za-z0-9_"
_KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
SHAPE_STARTS = ("sk-", "gh", "github_pat_", "xox", "AKIA", "AIza")
"""How every key shape begins (at the start of a word)."""
_START_PREFIXES = frozenset(start[:size] for start in SHAPE_STARTS for size in range(1, len(start)))


def _held_tail(text: str) -> int:
    """Where the end of ``text`` that could still become a key shape or a URL's password
    begins (``len(text)`` when nothing need wait); at most HOLD_LONGEST back.

    A key shape grows as a run of key characters that starts a word; a URL's password
    waits from its ``:``/``://`` until the ``@``, a space or a ``/`` shows what it is.
    """
    end = len(text)
    window = max(0, end - HOLD_LONGEST)
    held = end
    run = window + len(text[window:].rstrip(_KEY_CHARS))
    if run < end:
        # A shape starts the run, or follows a "-" inside it (a "-" ends a word).
        starts = [run] + [i + 1 for i in range(run, end - 1) if text[i] == "-"]
        for start in starts:
            if start and _is_word_char(text[start - 1]):
                continue
            tail = text[start:end]
            if tail.startswith(SHAPE_STARTS) or tail in _START_PREFIXES:
                held = start
                break
    if text.endswith((":", ":/")):
        held = min(held, text.rindex(":"))
    scheme = text.rfind("://", window)
    if scheme >= 0 and not any(c.isspace() or c in "/@" for c in text[scheme + 3 :]):
        held = min(held, scheme)
    return held


T = TypeVar("T")


def _plain_word_or_number(value: str) -> bool:
    letters = value.isascii() and value.isalpha()
    return value.isdigit() or (letters and (value.islower() or value.isupper() or value.istitle()))


def _is_word_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


class Redactor:
    """Replaces each known secret value, and each key-shaped string, by ``[redacted]``.

    One regular expression finds them all; it begins with no lookbehind, so the
    engine skips quickly to the characters that can start one, and whether a match
    starts a word (key shapes, short values) is checked after it is found.
    """

    def __init__(self, secrets: Iterable[str] = (), *, shapes: Collection[str] = ()) -> None:
        self._shape_patterns = tuple(shapes)
        self._compile(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        """Redact ``secrets`` too from now on (a token refreshed mid-session): every
        holder of this redactor (screen, transcript, log, spills) sees them at once."""
        new = [s for s in secrets if s and s not in self.secrets]
        if new:
            self._compile([*self.secrets, *new])

    def _compile(self, secrets: Iterable[str]) -> None:
        shapes = self._shape_patterns
        kept = {
            s
            for s in secrets
            if len(s) >= MIN_SECRET_LENGTH
            or (len(s) >= MIN_SHORT_SECRET and not _plain_word_or_number(s))
        }
        # Longest first, so a secret that contains another is replaced whole.
        ordered = tuple(sorted(kept, key=lambda s: (-len(s), s)))
        anywhere = frozenset(s for s in ordered if len(s) >= MIN_SECRET_LENGTH)
        patterns = [
            re.escape(s) if s in anywhere else re.escape(s) + rf"(?![{_WORD}])" for s in ordered
        ]
        patterns += [*shapes, URL_PASSWORD] if shapes else []
        # JSON writes a secret with its quotes, backslashes and controls escaped.
        escaped = {json.dumps(s, ensure_ascii=False)[1:-1] for s in ordered}
        self._shapes = bool(shapes)
        # What a search reads besides the pattern first, the pattern last: another
        # thread redacting while secrets are added sees the old set or the new one.
        self.secrets = ordered
        self._anywhere = anywhere
        self._json_needles = tuple(escaped - set(ordered))
        # One flat alternation: a group around some of it would slow the search threefold.
        self._pattern = re.compile("|".join(patterns)) if patterns else None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], *, also: Iterable[str] = ()) -> Redactor:
        """Secrets from ``environ``: secret variables (and the passwords of URLs in them),
        plus the variables named in ``also``."""
        names = set(also)
        values: list[str] = []
        for name, value in environ.items():
            if value and (name in names or is_secret(name, value)):
                values.append(value)
                if (password := url_password(value)) is not None:
                    values.append(password)
        return cls(values, shapes=tuple(KEY_SHAPES.values()))

    def _found(
        self, text: str, start: int = 0, *, loose: bool = False
    ) -> Iterator[tuple[int, int]]:
        """The spans to replace, left to right (``loose``: also those not starting a word)."""
        if self._pattern is None:
            return
        search = self._pattern.search
        while (match := search(text, start)) is not None:
            begin, end = match.span()
            if match.lastgroup == "password":
                yield match.span("password")
            elif (
                not loose
                and begin
                and _is_word_char(text[begin - 1])
                and match.group() not in self._anywhere
            ):
                # A key shape or a short value must start a word: not this one, but
                # maybe one that starts inside it.
                start = begin + 1
                continue
            else:
                yield begin, end
            start = max(end, begin + 1)

    def redact(self, text: str) -> str:
        pieces: list[str] = []
        kept = 0
        for begin, end in self._found(text):
            pieces += [text[kept:begin], REDACTED]
            kept = end
        if not pieces:
            return text
        pieces.append(text[kept:])
        return "".join(pieces)

    __call__ = redact

    def found_in_json(self, line: str) -> bool:
        """Whether a line of JSON may hold a secret: the quick test before redacting.

        Loose, since JSON's escapes put letters before a word (``\\nsk-…``): the strings
        themselves are then redacted with the word rules."""
        if any(needle in line for needle in self._json_needles):
            return True
        return next(self._found(line, loose=True), None) is not None

    def releasable(self, text: str) -> int:
        """How much of ``text`` a stream can let out now; the rest waits for more.

        A stream shows text before it knows what follows: an end that could be the
        start of a secret or of a key shape, or a secret that could still grow into a
        longer one, waits for the next piece, so a secret split across pieces is still
        caught whole.
        """
        end = cut = len(text)
        for secret in self.secrets:
            # The earliest place where the end of text is a proper start of the secret.
            index = text.find(secret[0], max(0, end - len(secret) + 1), cut)
            while index != -1:
                if secret.startswith(text[index:]):
                    cut = index
                    break
                index = text.find(secret[0], index + 1, cut)
        if self._shapes:
            cut = min(cut, _held_tail(text))
        if cut < len(text):
            for begin, end in self._found(text, max(0, cut - HOLD_LONGEST)):
                if begin < cut < end:
                    return begin
                if begin >= cut:
                    break
        return cut

    def redact_value(self, value: T) -> T:
        """``value`` with every string inside it redacted (frozen dataclasses, tuples)."""
        return _redact_value(value, self.redact)  # type: ignore[no-any-return]


class StreamRedactor:
    """Redacts a stream of bytes piece by piece, before any of it reaches a file.

    What :meth:`feed` returns is clean; an end that could still be (or grow into) a
    secret waits for the next piece, or for :meth:`finish`. Bytes that are not UTF-8
    come out exactly as they went in.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._pending = ""

    def feed(self, data: bytes) -> bytes:
        text = self._pending + self._decoder.decode(data)
        cut = self._redactor.releasable(text)
        self._pending = text[cut:]
        return self._redactor.redact(text[:cut]).encode("utf-8", "surrogateescape")

    def finish(self) -> bytes:
        text = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        return self._redactor.redact(text).encode("utf-8", "surrogateescape")


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


Delta = AnswerDelta | ReasoningDelta


class EventRedactor:
    """Redacts a flow of events, answer and reasoning deltas included.

    Deltas are held back while their end could be the start of a secret, and let out
    (redacted) with the next piece of the same agent's answer (or reasoning), or before
    that agent's next event. ``redact`` may be a plain function, which then works delta
    by delta.
    """

    def __init__(self, redact: Redactor | Callable[[str], str]) -> None:
        self._redact = redact
        self._releasable = redact.releasable if isinstance(redact, Redactor) else len
        self._pending: dict[tuple[str, type[Delta]], str] = {}

    def process(self, event: TurnEvent) -> list[TurnEvent]:
        """The events to pass on for ``event``, in order (none while a delta is held)."""
        return [
            e if isinstance(e, Delta) else _redact_value(e, self._redact)
            for e in self.in_order(event)
        ]

    def in_order(self, event: TurnEvent) -> list[TurnEvent]:
        """Like :meth:`process`, but only deltas come out redacted (the caller does the rest)."""
        if isinstance(event, Delta):
            kind = type(event)
            # What the other kind holds came first: it goes out first.
            out = self.flush(event.agent, but=kind)
            text = self._pending.pop((event.agent, kind), "") + event.text
            cut = self._releasable(text)
            if cut < len(text):
                self._pending[event.agent, kind] = text[cut:]
            shown = self._redact(text[:cut])
            return [*out, kind(shown, event.agent)] if shown else out
        return [*self.flush(event.agent), event]

    def flush(self, agent: str | None = None, *, but: type[Delta] | None = None) -> list[TurnEvent]:
        """Let out what is held back, for one agent or (None) for all (``but`` a kind)."""
        out: list[TurnEvent] = []
        for name, kind in list(self._pending):
            if (agent is None or name == agent) and kind is not but:
                text = self._pending.pop((name, kind))
                out.append(kind(self._redact(text), name))
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

    async def ask_form(self, request: FormRequest) -> FormAnswer | None:
        if not isinstance(self.inner, AsksForms):
            return None
        return await self.inner.ask_form(self._redactor.redact_value(request))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
