"""The transcript as a JSONL file: one event per line, written through as it happens."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from treadle.adapters.serialize import event_to_record, record_to_event
from treadle.ports.events import TurnEvent


class JsonlTranscript:
    """Appends each event as one JSON line and flushes it before returning.

    A kill -9 loses nothing already recorded: every line reaches the operating
    system as it is written. ``redact`` rewrites each line before it is stored
    (secrets out).
    """

    def __init__(self, path: str | Path, redact: Callable[[str], str] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._redact = redact
        self._file: IO[str] | None = None

    def record(self, event: TurnEvent) -> None:
        line = json.dumps(event_to_record(event), ensure_ascii=False)
        if self._redact is not None:
            line = self._redact(line)
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None


def read_transcript(path: str | Path) -> Iterator[TurnEvent]:
    """The events of a transcript, skipping a torn last line (a kill mid-write).

    A bad line anywhere else is an error naming its line number.
    """
    lines = Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield record_to_event(json.loads(line))
        except (json.JSONDecodeError, ValueError) as error:
            if number == last:  # no newline after it: the write was cut short
                return
            raise ValueError(f"{path}:{number + 1}: {error}") from None
