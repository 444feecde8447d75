"""Where a command's whole output goes once the bound starts cutting it."""

from __future__ import annotations

import contextlib
import os
import time

from treadle.adapters.redact import Redactor, StreamRedactor
from treadle.domain.rules.output_bound import OutputBound

SPILL_CAP = 64 * 1024 * 1024
"""A runaway command can print without end; the saved copy stops at this size."""


class OutputSpill:
    """A file in ``folder`` that receives the output from the first byte.

    Nothing is created while the output fits the bound; when it first outgrows it,
    the file is opened, given what the bound still holds whole, and then every chunk,
    up to ``cap`` bytes. A failure to write gives up saving, never the command.
    With a ``redactor``, secrets are taken out before the bytes are written: a kill
    at any moment leaves a file without them.
    """

    def __init__(self, folder: str, cap: int = SPILL_CAP, redactor: Redactor | None = None) -> None:
        self._folder = folder
        self._cap = cap
        self._stream = StreamRedactor(redactor) if redactor is not None else None
        self._file: int | None = None
        self._written = 0
        self.path: str | None = None
        self.capped = False
        self.problem: str | None = None

    def take(self, chunk: bytes, bound: OutputBound) -> None:
        """Save ``chunk``, which is about to be fed to ``bound``."""
        if self.problem is not None or self.capped:
            return
        if self._file is None:
            if bound.total + len(chunk) <= bound.limit:
                return
            self._open()
            self._write(bound.content())
        self._write(chunk)

    def note(self) -> str:
        """What the marker of the bounded output says about this file."""
        if self.problem is not None:
            return f"the full output could not be saved: {self.problem}"
        if self.path is None:
            return ""
        if self.capped:
            return f"only the first {_size(self._cap)} of the output were saved, in {self.path}"
        return f"full output in {self.path}"

    def close(self) -> None:
        if self._file is not None:
            if self._stream is not None:
                self._put(self._stream.finish())
            if self._file is not None:
                os.close(self._file)
                self._file = None

    def _open(self) -> None:
        name = f"output-{time.strftime('%Y%m%d-%H%M%S')}-{os.urandom(4).hex()}.log"
        try:
            os.makedirs(self._folder, exist_ok=True)
            path = os.path.join(self._folder, name)
            self._file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except OSError as error:
            self.problem = error.strerror or str(error)
            return
        self.path = path

    def _write(self, data: bytes) -> None:
        if self._file is None or self.capped:
            return
        room = self._cap - self._written
        if len(data) > room:
            data = data[:room]
            self.capped = True
        self._written += len(data)
        self._put(self._stream.feed(data) if self._stream is not None else data)

    def _put(self, data: bytes) -> None:
        if self._file is None:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._file, view) :]
        except OSError as error:
            # A partial copy named as "the full output" would mislead: remove it.
            self.problem = error.strerror or str(error)
            os.close(self._file)
            self._file = None
            if self.path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
                self.path = None


def _size(count: int) -> str:
    mebibyte = 1024 * 1024
    return f"{count // mebibyte} MiB" if count % mebibyte == 0 else f"{count:,} bytes"
