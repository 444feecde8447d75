"""The transcript as a JSONL file: one event per line, written through as it happens."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from treadle.adapters.secrets.redact import EventRedactor, Redactor
from treadle.adapters.transcript.serialize import event_to_record, record_to_event
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

    def open(self) -> None:
        """Open the file for appending now (a torn end mended); OSError if it cannot be."""
        if self._file is None:
            _mend_torn_end(self.path)
            # Text is made well-formed where it comes in; should a lone surrogate
            # still reach here, it is written escaped rather than lose the session.
            self._file = self.path.open("a", encoding="utf-8", errors="backslashreplace")

    def _write(self, events: list[TurnEvent]) -> None:
        self.open()
        assert self._file is not None
        self._file.write("".join(self._line(event) + "\n" for event in events))
        self._file.flush()

    def abandon(self) -> None:
        """Stop writing after a failed write: what is held back is dropped, not retried."""
        self._events = None
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()

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
    """Make the file end at a line break: drop a torn last line, keep a whole one.

    Only what begins like a record is a torn line; other bytes are not cut away."""
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
        elif _starts_a_record(last.decode("utf-8", "replace")):
            file.truncate(tail_start + newline + 1)
        # Anything else is damage, not a torn write: left as it is, for reading to refuse.


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

    A torn line is the start of a record cut short: it begins like one and holds no
    NUL byte. Anything else that cannot be read, a record of the wrong shape, or a
    file with no event at all, is a :class:`TranscriptDamaged` naming its line number.
    """
    refuse_unless_a_file(path)
    lines = Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
    last = len(lines) - 1
    found = False
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if number == last and _starts_a_record(line):  # the write was cut short
                break
            raise TranscriptDamaged(f"{path}:{number + 1}: not a record: {error}") from None
        except RecursionError:
            raise TranscriptDamaged(f"{path}:{number + 1}: nested too deeply") from None
        except ValueError as error:  # a number longer than Python reads
            raise TranscriptDamaged(f"{path}:{number + 1}: not a record: {error}") from None
        try:
            event = record_to_event(record)
        except (ValueError, RecursionError) as error:
            raise TranscriptDamaged(f"{path}:{number + 1}: {error}") from None
        found = True
        yield event
    if not found and any(line.strip() for line in lines):
        raise TranscriptDamaged(f"{path}:1: no event can be read from it")


def refuse_unless_a_file(path: str | Path) -> None:
    """A :class:`TranscriptDamaged` when ``path`` is there but not a regular file: a FIFO
    would block the reader for ever, a folder cannot be read. One that cannot be looked
    at is left for opening it to report."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise TranscriptDamaged(f"{path}: not a regular file (a FIFO, a folder, a device)")


def _starts_a_record(line: str) -> bool:
    start = '{"type": "'  # how every record begins
    return "\0" not in line and line[: len(start)] == start[: len(line)]
