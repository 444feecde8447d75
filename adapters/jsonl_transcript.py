"""The transcript as a JSONL file: one event per line, written through as it happens."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from treadle.adapters.redact import EventRedactor, Redactor
from treadle.adapters.serialize import event_to_record, record_to_event
from treadle.domain.values.events import TurnEvent


class JsonlTranscript:
    """Appends each event as one JSON line and flushes it before returning.

    A kill -9 loses nothing already recorded: every line reaches the operating
    system as it is written. ``redact`` rewrites every string of an event before it is
    stored (secrets out); given a :class:`Redactor`, answer text is held back while
    its end could be the start of a secret, so one split across deltas is caught too.

    Appending to a transcript whose last line was torn by a kill first drops the torn
    piece, so the file stays one whole event per line.
    """

    def __init__(
        self, path: str | Path, redact: Redactor | Callable[[str], str] | None = None
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._redact = redact
        self._events = EventRedactor(redact) if redact is not None else None
        self._file: IO[str] | None = None

    def record(self, event: TurnEvent) -> None:
        events = [event] if self._events is None else self._events.in_order(event)
        if events:
            self._write(events)

    def _write(self, events: list[TurnEvent]) -> None:
        if self._file is None:
            _mend_torn_end(self.path)
            # Text is made well-formed where it comes in; should a lone surrogate
            # still reach here, it is written escaped rather than lose the session.
            self._file = self.path.open("a", encoding="utf-8", errors="backslashreplace")
        self._file.write("".join(self._line(event) + "\n" for event in events))
        self._file.flush()

    def _line(self, event: TurnEvent) -> str:
        record = event_to_record(event)
        line = json.dumps(record, ensure_ascii=False)
        redact = self._redact
        if redact is None or (isinstance(redact, Redactor) and not redact.found_in_json(line)):
            return line  # the usual case: one search of the line, nothing to replace
        return json.dumps(_redacted(record, redact), ensure_ascii=False)

    def close(self) -> None:
        if self._events is not None:
            held = self._events.flush()
            if held:
                self._write(held)
        file, self._file = self._file, None
        if file is not None and not file.closed:
            file.flush()
            os.fsync(file.fileno())
            file.close()


def _redacted(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item, redact) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    return value


def _mend_torn_end(path: Path) -> None:
    """Make the file end at a line break: drop a torn last line, keep a whole one."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with path.open("rb+") as file:
        tail_start = max(0, size - (1 << 16))
        while True:
            file.seek(tail_start)
            tail = file.read()
            if tail.endswith(b"\n"):
                return
            newline = tail.rfind(b"\n")
            if newline >= 0 or tail_start == 0:
                break
            tail_start = max(0, tail_start - (1 << 16))
        last = tail[newline + 1 :]
        if _is_record(last):
            file.seek(size)
            file.write(b"\n")
        else:
            file.truncate(tail_start + newline + 1)


def _is_record(line: bytes) -> bool:
    try:
        record_to_event(json.loads(line))
    except (ValueError, RecursionError):  # a UnicodeDecodeError is a ValueError
        return False
    return True


class TranscriptDamaged(ValueError):
    """A line before the last cannot be read: the file was changed, not torn by a kill."""


def read_transcript(path: str | Path) -> Iterator[TurnEvent]:
    """The events of a transcript, skipping a torn last line (a kill mid-write).

    A bad line anywhere else is a :class:`TranscriptDamaged` naming its line number.
    """
    lines = Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield record_to_event(json.loads(line))
        except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
            if number == last:  # no newline after it: the write was cut short
                return
            raise TranscriptDamaged(f"{path}:{number + 1}: {error}") from None
