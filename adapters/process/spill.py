"""Where a command's whole output goes once the bound starts cutting it.

The saved copy is redacted before any byte of it reaches its file. The first
:data:`REDACT_AT_ONCE` bytes are redacted as they are read; past them (a big output,
of which the model only gets the bound's head and tail), the bytes wait in a file that
has no name, so that a kill at any moment leaves nothing of them, and are redacted
into the saved copy once the command has ended, on a thread of their own, while the
next request goes out. A command started after that waits for the copy to be whole
(:func:`settle`), and so does treadle before it exits.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from treadle.adapters.secrets.redact import Redactor, StreamRedactor
from treadle.domain.rules.output_bound import OutputBound

SPILL_CAP = 64 * 1024 * 1024
"""A runaway command can print without end; the saved copy stops at this size."""
REDACT_AT_ONCE = 1024 * 1024
"""How much of a saved copy is redacted as the command prints it (about 8 ms of work);
the rest is redacted after the command, off the path to the next request."""
PIECE = 64 * 1024
"""How much the thread that redacts the rest takes at a time: the interpreter's lock
is held for a piece at most, and let go between pieces."""

START_AFTER = 0.03
"""How long the thread lets the next request be built and sent before it starts: the
interpreter's lock is then the event loop's alone."""

_redacting: set[threading.Thread] = set()
_redacting_lock = threading.Lock()


def settle() -> None:
    """Wait until every saved copy still being redacted is whole."""
    with _redacting_lock:
        pending = list(_redacting)
    for thread in pending:
        thread.join()


class OutputSpill:
    """A file in ``folder`` that receives the output from the first byte.

    Nothing is created while the output fits the bound; when it first outgrows it,
    the file is opened, given what the bound still holds whole, and then every chunk,
    up to ``cap`` bytes. A failure to write gives up saving, never the command.
    With a ``redactor``, secrets are taken out before the bytes are written: a kill
    at any moment leaves a file without them (past :data:`REDACT_AT_ONCE`, the bytes
    wait unnamed, and :meth:`close` leaves them to a thread).
    """

    def __init__(self, folder: str, cap: int = SPILL_CAP, redactor: Redactor | None = None) -> None:
        settle()  # the command may read the copy an earlier one saved
        self._folder = folder
        self._cap = cap
        self._stream = StreamRedactor(redactor) if redactor is not None else None
        self._file: int | None = None
        self._waiting: int | None = None  # the unnamed file of bytes not yet redacted
        self._waited = 0
        self._closed = False
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
        if self._closed:
            return
        self._closed = True
        if self._waiting is not None and self._file is not None:
            thread = threading.Thread(target=self._redact_rest, name="treadle-spill")
            with _redacting_lock:
                _redacting.add(thread)
            thread.start()
            return
        self._finish()

    def _finish(self) -> None:
        if self._waiting is not None:
            os.close(self._waiting)
            self._waiting = None
        if self._file is not None:
            if self._stream is not None:
                self._put(self._stream.finish())
            if self._file is not None:
                os.close(self._file)
                self._file = None

    def _redact_rest(self) -> None:
        """The bytes that waited, redacted into the saved copy (on a thread)."""
        try:
            assert self._waiting is not None and self._stream is not None
            time.sleep(START_AFTER)
            offset = 0
            while offset < self._waited and self._file is not None:
                data = os.pread(self._waiting, min(PIECE, self._waited - offset), offset)
                if not data:
                    break
                offset += len(data)
                self._put(self._stream.feed(data))
                time.sleep(0)  # let the event loop have the interpreter between pieces
        except Exception as error:  # a thread's traceback would land on the screen
            self._give_up(error)
        finally:
            self._finish()
            with _redacting_lock:
                _redacting.discard(threading.current_thread())

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
        if self._stream is None:
            self._put(data)
        elif self._waiting is not None or self._written > REDACT_AT_ONCE:
            self._wait(data)
        else:
            self._put(self._stream.feed(data))

    def _wait(self, data: bytes) -> None:
        """Keep ``data`` to be redacted later, in a file no name leads to."""
        try:
            if self._waiting is None:
                self._waiting = _unnamed_file(self._folder)
            _write_all(self._waiting, data)
            self._waited += len(data)
        except OSError as error:
            self._give_up(error)

    def _put(self, data: bytes) -> None:
        if self._file is None:
            return
        try:
            _write_all(self._file, data)
        except OSError as error:
            self._give_up(error)

    def _give_up(self, error: Exception) -> None:
        # A partial copy named as "the full output" would mislead: remove it.
        strerror = error.strerror if isinstance(error, OSError) else None
        self.problem = strerror or str(error) or type(error).__name__
        for fd in (self._file, self._waiting):
            if fd is not None:
                os.close(fd)
        self._file = self._waiting = None
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            self.path = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _unnamed_file(folder: str) -> int:
    """A file in ``folder`` that no name leads to: gone with the last descriptor, a
    kill included. Where the file system has no O_TMPFILE, a name is made and removed
    before anything is written."""
    flags = os.O_RDWR | os.O_CLOEXEC
    with contextlib.suppress(OSError, AttributeError):
        return os.open(folder, flags | os.O_TMPFILE, 0o600)
    path = os.path.join(folder, f".unredacted-{os.urandom(8).hex()}")
    fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    os.unlink(path)
    return fd


def _size(count: int) -> str:
    mebibyte = 1024 * 1024
    return f"{count // mebibyte} MiB" if count % mebibyte == 0 else f"{count:,} bytes"
