"""Sessions on disk: one folder per session, its transcript and a small record about it.

``<root>/<id>/transcript.jsonl`` holds every event (the truth); ``<root>/<id>/meta.json``
says what the session is (id, created, folder, model, first line of the task) and how
its last turn ended, rewritten whole (write, then rename) at every turn's start and
end. A session killed mid-turn still says ``running``: its lock is free, so the
listing says ``killed`` and reads the transcript for its tokens. A missing or unreadable
``meta.json`` is rebuilt from the transcript; one whose fields have the wrong types
(edited, not torn: it is written whole) is refused with its line, as a transcript is.

A treadle holds ``<root>/<id>/lock`` (``flock``, exclusive) for as long as it has the
session open: a second treadle on the same session is refused, whatever the pids say.

Example::

    store = SessionStore(state / "sessions")
    meta = store.create("20250101-120000-abc123", workspace="/src", model="demo", task="ls")
    log = SessionLog(store.folder(meta.id), JsonlTranscript(store.transcript_path(meta.id)))
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import stat
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from treadle.adapters.transcript.jsonl_transcript import (
    JsonlTranscript,
    read_transcript,
    refuse_unless_a_file,
)
from treadle.domain.rules.context_window import ContextState, window_of
from treadle.domain.rules.history import History
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import (
    MessageAdded,
    TurnEnded,
    TurnEvent,
    TurnStarted,
    UsageUpdated,
)
from treadle.domain.values.model import ContextWindow

log = logging.getLogger(__name__)
TRANSCRIPT = "transcript.jsonl"
META = "meta.json"
LOCK = "lock"
RUNNING = "running"
KILLED = "killed"
DAMAGED = "damaged"


class SessionNotFound(Exception):
    """No session matches the id given (or more than one does)."""


class SessionBusy(Exception):
    """The session is running in another treadle process: two would both append."""


class SessionUnusable(Exception):
    """The state folder cannot hold the session (not a folder, read-only, full)."""


class MetaDamaged(ValueError):
    """``meta.json`` parses, but a field has the wrong type: it was edited, not torn."""


PID_LIMIT = 1 << 31
"""A pid is a (signed) 32-bit number: anything past it is not one."""


class SessionLock:
    """The exclusive hold on a session folder, for as long as a treadle has it open.

    A lock taken with ``flock`` goes with its process, however it ends (kill -9
    too), and the descriptor is not inherited by commands (close-on-exec).
    """

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / LOCK
        self._descriptor: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise SessionBusy (OSError if the folder cannot hold one)."""
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise SessionBusy(
                f"session {self.path.parent.name} is open in another treadle"
            ) from None
        self._descriptor = descriptor

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def is_locked(folder: str | Path) -> bool:
    """Whether a treadle holds the session in ``folder`` now."""
    try:
        descriptor = os.open(Path(folder) / LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(descriptor)
    return False


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """What ``meta.json`` says. ``outcome`` is the last turn's kind, or ``running``."""

    id: str
    created: str = ""
    workspace: str = ""
    model: str = ""
    base_url: str = ""
    task: str = ""
    outcome: str = RUNNING
    input_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    pid: int = 0
    updated: str = ""
    settings: dict[str, object] = dataclasses.field(default_factory=dict)
    """The configuration that shapes requests (budgets, clocks, limits), for replay."""
    forked_from: str = ""
    """The session this one was forked from (``treadle fork``), "" for none…"""
    forked_at: int = 0
    """…and how many of its turns it kept (issue 27)."""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One line of ``treadle sessions``: the record, and what became of the session."""

    meta: SessionMeta
    status: str
    tokens: int


def now_text() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def first_line(text: str, width: int = 100) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


class SessionStore:
    """The sessions under ``root``; ``redact`` cleans every text written to ``meta.json``."""

    def __init__(self, root: str | Path, redact: Callable[[str], str] = lambda text: text) -> None:
        self.root = Path(root)
        self._redact = redact

    def folder(self, session_id: str) -> Path:
        return self.root / session_id

    def transcript_path(self, session_id: str) -> Path:
        return self.folder(session_id) / TRANSCRIPT

    def create(
        self,
        session_id: str,
        *,
        workspace: str,
        model: str,
        base_url: str = "",
        task: str = "",
        settings: Mapping[str, object] | None = None,
    ) -> SessionMeta:
        meta = SessionMeta(
            session_id,
            created=now_text(),
            workspace=workspace,
            model=model,
            base_url=base_url,
            task=first_line(task),
            pid=os.getpid(),
            settings=dict(settings or {}),
        )
        self.folder(session_id).mkdir(parents=True, exist_ok=True)
        write_meta(self.folder(session_id), meta, self._redact)
        return meta

    def ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if (p / TRANSCRIPT).is_file() or (p / META).is_file()
        )

    def find(self, reference: str) -> str:
        """The id ``reference`` names: an id, a unique start of one, or ``last``."""
        ids = self.ids()
        if reference in ids:
            return reference
        if reference == "last" and ids:
            return self.rows()[0].meta.id
        matches = [i for i in ids if i.startswith(reference)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise SessionNotFound(
                f"{reference!r} names {len(matches)} sessions: {', '.join(matches[:5])}"
            )
        raise SessionNotFound(
            f"no session {reference!r} in {self.root} (treadle sessions lists them)"
        )

    def meta(self, session_id: str) -> SessionMeta:
        """The session's record; rebuilt from its transcript when ``meta.json`` is lost."""
        return read_meta(self.folder(session_id))

    def row(self, session_id: str) -> SessionRow:
        try:
            meta = self.meta(session_id)
        except MetaDamaged:
            return SessionRow(SessionMeta(session_id), DAMAGED, 0)
        if not _starts_whole(self.transcript_path(session_id)):
            return SessionRow(meta, DAMAGED, meta.tokens)
        if meta.outcome != RUNNING:
            return SessionRow(meta, meta.outcome, meta.tokens)
        if is_locked(self.folder(session_id)):
            return SessionRow(meta, RUNNING, meta.tokens)
        summary = summarize(_events(self.transcript_path(session_id)))
        return SessionRow(meta, summary.outcome or KILLED, summary.usage.total)

    def rows(self) -> list[SessionRow]:
        """Every session, newest first; one that cannot be read is listed as damaged."""
        rows = [self._row_or_damaged(session_id) for session_id in self.ids()]
        return sorted(rows, key=lambda row: (_when(row.meta), row.meta.id), reverse=True)

    def _row_or_damaged(self, session_id: str) -> SessionRow:
        """A session's row; one that breaks the listing in a way not foreseen is listed as
        damaged (its traceback in the log), so that the others are still listed."""
        try:
            return self.row(session_id)
        except Exception:
            log.exception("session %s cannot be listed", session_id)
            return SessionRow(SessionMeta(session_id), DAMAGED, 0)


def _when(meta: SessionMeta) -> float:
    try:
        return datetime.fromisoformat(meta.created).timestamp()
    except ValueError:
        return 0.0


def _events(path: Path) -> Iterable[TurnEvent]:
    """The readable events of a transcript: a listing never fails on a damaged one."""
    try:
        yield from read_transcript(path)
    except (OSError, ValueError, RecursionError):
        return


def _starts_whole(path: Path) -> bool:
    """Whether a transcript's head reads like records: not NUL bytes, not another file
    (a quick look, so that a listing need not read every transcript whole)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False  # a FIFO would block the listing
        with path.open("rb") as file:
            head = file.read(4096)
    except FileNotFoundError:
        return True  # a session made but never written to
    except OSError:
        return False
    return not head or (head.lstrip().startswith(b"{") and b"\0" not in head)


@dataclass(frozen=True, slots=True)
class TranscriptSummary:
    task: str
    outcome: str  # "" when the last turn never ended
    usage: Usage
    turns: int


def summarize(events: Iterable[TurnEvent]) -> TranscriptSummary:
    """The main agent's first task, last outcome and tokens, from a transcript."""
    task, outcome, usage, turns, current = "", "", Usage(), 0, Usage()
    for event in events:
        if event.agent:
            continue
        match event:
            case TurnStarted(task=text):
                task = task or text
                turns += 1
                outcome, current = "", Usage()
            case UsageUpdated(turn=turn):
                current = turn
            case TurnEnded(outcome=ended, usage=spent):
                outcome, current = ended.kind.value, Usage()
                usage += spent
    return TranscriptSummary(first_line(task), outcome, usage + current, turns)


def read_meta(folder: Path) -> SessionMeta:
    """The record in ``folder``; rebuilt from the transcript when it is missing or not JSON,
    :class:`MetaDamaged` when a field has the wrong type."""
    with contextlib.suppress(OSError):
        if not stat.S_ISREG(os.stat(folder / META).st_mode):
            raise MetaDamaged(f"{folder / META}: not a regular file (a FIFO, a folder)")
    try:
        text = (folder / META).read_text(encoding="utf-8")
        data = json.loads(text)
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict):
        return _checked_meta(folder / META, text, data)
    if data is not None:
        raise MetaDamaged(f"{folder / META}:1: must be an object")
    summary = summarize(_events(folder / TRANSCRIPT))
    created = ""
    with contextlib.suppress(OSError):
        created = (
            datetime.fromtimestamp((folder / TRANSCRIPT).stat().st_mtime)
            .astimezone()
            .isoformat(timespec="seconds")
        )
    return SessionMeta(
        folder.name,
        created=created,
        task=summary.task,
        outcome=summary.outcome or RUNNING,
        input_tokens=summary.usage.input_tokens,
        output_tokens=summary.usage.output_tokens,
        turns=summary.turns,
    )


def _checked_meta(path: Path, text: str, data: dict[str, object]) -> SessionMeta:
    hints = typing.get_type_hints(SessionMeta)
    values = {}
    for name, value in data.items():
        kind = hints.get(name)
        if kind is None:
            continue  # a field a later treadle added
        expected = {str: str, int: int}.get(kind, dict)
        wrong = isinstance(value, bool) or not isinstance(value, expected)
        if name == "pid" and not wrong and not 0 <= typing.cast(int, value) < PID_LIMIT:
            wrong = True
        if wrong:
            line = next((n for n, row in enumerate(text.splitlines(), 1) if f'"{name}"' in row), 1)
            what = {str: "a string", int: "a whole number"}.get(kind, "an object")
            shown = json.dumps(value)[:40]
            raise MetaDamaged(f"{path}:{line}: {name}: must be {what}, not {shown}")
        values[name] = value
    values.setdefault("id", path.parent.name)
    return SessionMeta(**values)  # type: ignore[arg-type]


def write_meta(folder: Path, meta: SessionMeta, redact: Callable[[str], str]) -> None:
    """Replace ``meta.json`` whole: a reader sees the old record or the new, never half."""
    record = {
        key: redact(value) if isinstance(value, str) else value
        for key, value in dataclasses.asdict(meta).items()
    }
    temporary = folder / f".{META}.{os.getpid()}.tmp"
    try:
        with temporary.open("w", encoding="utf-8") as file:
            # ASCII: a folder named in bytes that are not UTF-8 is kept escaped, whole.
            json.dump(record, file, ensure_ascii=True, indent=1)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, folder / META)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()  # the old record stays whole
        raise


class SessionLog:
    """The session's TranscriptStore: every event to the JSONL, each turn's start and
    end to ``meta.json``.

    A write that fails (a full disk, a folder made read-only) stops the recording, not
    the turn: ``on_problem`` is told once, what was recorded before stays as it was,
    and nothing more is appended after a line that may be torn.
    """

    def __init__(
        self,
        folder: str | Path,
        transcript: JsonlTranscript,
        redact: Callable[[str], str] = lambda text: text,
        on_problem: Callable[[str], None] = lambda text: None,
        lock: SessionLock | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.transcript = transcript
        self.lock = lock
        """The session's lock, held until :meth:`close`."""
        self._redact = redact
        self._on_problem = on_problem
        self.problem: str | None = None
        self.meta = read_meta(self.folder)
        self._recorded: list[TurnEvent] = []

    def record(self, event: TurnEvent) -> None:
        if self.problem is not None:
            return
        try:
            self._record(event)
        except OSError as error:
            self._stop_recording(error)

    def _record(self, event: TurnEvent) -> None:
        self.transcript.record(event)
        if event.agent:
            return
        match event:
            case TurnStarted(task=task):
                self._save(
                    task=self.meta.task or first_line(task),
                    outcome=RUNNING,
                    turns=self.meta.turns + 1,
                    pid=os.getpid(),
                )
            case TurnEnded(outcome=outcome, usage=usage):
                self._save(
                    outcome=outcome.kind.value,
                    input_tokens=self.meta.input_tokens + usage.input_tokens,
                    output_tokens=self.meta.output_tokens + usage.output_tokens,
                )

    def _stop_recording(self, error: OSError) -> None:
        self.problem = (
            f"the session can no longer be recorded in {self.folder}: "
            f"{error.strerror or error}; what was recorded before is kept"
        )
        self.transcript.abandon()
        self._on_problem(self.problem)

    def conversation_so_far(self) -> History | None:
        """The main conversation recorded so far, to continue it; None for a new session.

        What the rebuilt history adds to the recorded messages (an answer a kill cut
        short, results for calls that never finished) is recorded first, so the
        transcript stays the whole conversation.
        """
        path = self.transcript.path
        refuse_unless_a_file(path)
        if not path.is_file() or path.stat().st_size == 0:
            return None
        # Lazy (entrypoints.NOT_BEFORE_FIRST_REQUEST): only a continued session rebuilds.
        from treadle.domain.rules.resume import rebuild_history, repaired_messages

        events = self._recorded = list(read_transcript(path))
        for message in repaired_messages(events):
            self.transcript.record(MessageAdded(message))
        return rebuild_history(events)

    def recorded(self) -> list[TurnEvent]:
        """The events the session held when :meth:`conversation_so_far` read them (none
        for a new session)."""
        return list(self._recorded)

    def context_so_far(self, history: History) -> tuple[ContextState, ContextWindow | None]:
        """What the accounting of the conversation :meth:`conversation_so_far` rebuilt
        knew, and the window the session last kept to."""
        if not self._recorded:  # a new session: nothing to rebuild
            return ContextState(messages=len(history)), None
        from treadle.domain.rules.resume import rebuild_context

        return rebuild_context(self._recorded, history), window_of(self._recorded)

    def subagents_so_far(self) -> int:
        """The number of the last sub-agent the conversation :meth:`conversation_so_far`
        rebuilt started (0 for none)."""
        if not self._recorded:
            return 0
        from treadle.domain.rules.resume import subagents_started

        return subagents_started(self._recorded)

    def _save(self, **changes: object) -> None:
        self.meta = dataclasses.replace(self.meta, updated=now_text(), **changes)  # type: ignore[arg-type]
        write_meta(self.folder, self.meta, self._redact)

    def close(self) -> None:
        try:
            if self.problem is None:
                self.transcript.close()
        except OSError as error:
            self._stop_recording(error)
        finally:
            if self.lock is not None:
                self.lock.release()
