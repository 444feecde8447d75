"""The session's ``treadle.log``: tracebacks of bugs and, at ``debug``, what the loop did.

The core logs through the standard :mod:`logging` module under the ``treadle`` logger
and never configures it; this adapter gives it a file in the session's folder while a
session runs. Every record is redacted before it reaches the disk, tracebacks
included, and the file is only created when the first record comes.

Example::

    with session_log("/state/sessions/S1/treadle.log", redact, "debug") as path:
        ...  # run the turn; path names the file in a failure's line
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

LOG_FILE = "treadle.log"
LOGGER = "treadle"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LEVELS["error"] = logging.ERROR


class _QuietFileHandler(logging.FileHandler):
    """A log that cannot be written (a full disk, a read-only folder) is lost quietly:
    the standard handler would print its own traceback on the screen instead."""

    def handleError(self, record: logging.LogRecord) -> None:
        return


class RedactingFormatter(logging.Formatter):
    """Formats a record, its traceback with it, then takes the secrets out."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self._redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self._redact(super().format(record))


@contextlib.contextmanager
def session_log(path: str, redact: Callable[[str], str], level: str) -> Iterator[str]:
    """Send the ``treadle`` logger's records at ``level`` and above to ``path`` (tracebacks
    always: they are errors) until the block ends; yields the path."""
    handler = _QuietFileHandler(path, encoding="utf-8", delay=True, errors="backslashreplace")
    handler.setFormatter(RedactingFormatter(redact))
    handler.setLevel(LEVELS.get(level, logging.WARNING))
    logger = logging.getLogger(LOGGER)
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(min(handler.level, previous or logging.WARNING))
    try:
        yield path
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
        handler.close()
