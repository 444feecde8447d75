"""Where a command's whole output goes once the bound starts cutting it."""

from __future__ import annotations

import contextlib
import os
import time

from treadle.adapters.redact import Redactor
from treadle.domain.rules.output_bound import OutputBound

SPILL_CAP = 64 * 1024 * 1024
"""A runaway command can print without end; the saved copy stops at this size."""

REDACT_BLOCK = 1024 * 1024


class OutputSpill:
    """A file in ``folder`` that receives the output from the first byte.

    Nothing is created while the output fits the bound; when it first outgrows it,
    the file is opened, given what the bound still holds whole, and then every chunk,
    up to ``cap`` bytes. A failure to write gives up saving, never the command.
    With a ``redactor``, secrets are taken out of the file when it is closed.
    """

    def __init__(self, folder: str, cap: int = SPILL_CAP, redactor: Redactor | None = None) -> None:
        self._folder = folder
        self._cap = cap
        self._redactor = redactor
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
            os.close(self._file)
            self._file = None
            if self._redactor is not None and self.path is not None:
                self._redact_file(self.path, self._redactor)

    def _redact_file(self, path: str, redactor: Redactor) -> None:
        """Rewrite the file block by block with its secrets replaced; memory stays flat.

        ``surrogateescape`` keeps bytes that are not UTF-8 exactly as they were, and
        the end of each block that could begin a secret waits for the next block.
        """
        cleaned = path + ".redacting"
        try:
            with open(path, "rb") as source, open(cleaned, "wb") as target:
                pending = ""
                while block := source.read(REDACT_BLOCK):
                    pending += block.decode("utf-8", "surrogateescape")
                    cut = redactor.releasable(pending)
                    target.write(redactor.redact(pending[:cut]).encode("utf-8", "surrogateescape"))
                    pending = pending[cut:]
                target.write(redactor.redact(pending).encode("utf-8", "surrogateescape"))
            os.chmod(cleaned, 0o600)
            os.replace(cleaned, path)
        except OSError as error:
            # Unredacted output must not stay behind.
            self.problem = error.strerror or str(error)
            for leftover in (cleaned, path):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
            self.path = None

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
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._file, view) :]
        except OSError as error:
            # A partial copy named as "the full output" would mislead: remove it.
            self.problem = error.strerror or str(error)
            self.close()
            if self.path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
                self.path = None
            return
        self._written += len(data)


def _size(count: int) -> str:
    mebibyte = 1024 * 1024
    return f"{count // mebibyte} MiB" if count % mebibyte == 0 else f"{count:,} bytes"
