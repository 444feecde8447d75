"""Telling the person they are wanted (issue 23): a bell or an OSC 9 notification on
the terminal, or the person's own ``notify`` command with the event as JSON, as Codex
runs one::

    TerminalBell(lambda data: os.write(1, data), os.environ).notify("turn_ended", "Turn finished")
    NotifyCommand(["notify-send"], runner, cwd="/repo").notify("question", "Which branch?")
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
from collections.abc import Callable, Mapping, Sequence

from treadle.domain.rules.notify import notify_payload, ring_bytes
from treadle.domain.values.hooks import AttentionKind
from treadle.domain.values.process import ProcessSpec
from treadle.ports.process import ProcessRunner

log = logging.getLogger(__name__)

NOTIFY_DEADLINE = 10.0
"""Seconds a ``notify`` command may take; it is stopped then, with what it started."""


def _as_is(text: str) -> str:
    return text


class TerminalBell:
    """Rings the terminal through ``write`` (the screen's own output): OSC 9 where
    ``environ`` says the terminal shows it, else BEL. ``redact`` takes secrets out of
    the text, as out of everything the screen shows."""

    def __init__(
        self,
        write: Callable[[bytes], object],
        environ: Mapping[str, str],
        redact: Callable[[str], str] = _as_is,
    ) -> None:
        self._write = write
        self._environ = dict(environ)
        self._redact = redact

    def notify(self, kind: AttentionKind, message: str, last_answer: str = "") -> None:
        try:
            self._write(ring_bytes(self._redact(message), self._environ))
        except OSError:  # a terminal gone away cannot be rung
            log.debug("the terminal could not be rung", exc_info=True)

    async def settle(self, timeout: float) -> None:
        return None  # a bell is rung at once


class NotifyCommand:
    """Runs ``argv`` with the event's JSON as its last argument, through the session's
    runner (its rules for commands: deadline, sandbox, secrets, cleanup), without
    waiting for it; ``redact`` takes secrets out of what it is told."""

    def __init__(
        self,
        argv: Sequence[str],
        runner: ProcessRunner,
        *,
        cwd: str,
        session_id: str = "",
        redact: Callable[[str], str] = _as_is,
    ) -> None:
        self._redact = redact
        self._argv = tuple(argv)
        self._runner = runner
        self._cwd = cwd
        self._session_id = session_id
        self.running: set[asyncio.Future[object]] = set()

    def notify(self, kind: AttentionKind, message: str, last_answer: str = "") -> None:
        event = notify_payload(
            kind,
            self._redact(message),
            cwd=self._cwd,
            session_id=self._session_id,
            last_answer=self._redact(last_answer),
        )
        command = shlex.join([*self._argv, json.dumps(event, ensure_ascii=False)])
        spec = ProcessSpec(command, cwd=self._cwd, timeout=NOTIFY_DEADLINE, output_limit=4096)
        task: asyncio.Future[object] = asyncio.ensure_future(self._runner.run(spec))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def settle(self, timeout: float) -> None:
        if self.running:
            await asyncio.wait(list(self.running), timeout=timeout)
