"""Sessions on disk: one folder per session, its transcript and a small record about it.

``<root>/<id>/transcript.jsonl`` holds every event (the truth); ``<root>/<id>/meta.json``
says what the session is (id, created, folder, model, first line of the task) and how
its last turn ended, rewritten whole (write, then rename) at every turn's start and
end. A session killed mid-turn still says ``running``: its process is gone, so the
listing says ``killed`` and reads the transcript for its tokens. A missing or broken
``meta.json`` is rebuilt from the transcript; neither ever refuses a session.

Example::

    store = SessionStore(state / "sessions")
    meta = store.create("20250101-120000-abc123", workspace="/src", model="demo", task="ls")
    log = SessionLog(store.folder(meta.id), JsonlTranscript(store.transcript_path(meta.id)))
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from treadle.adapters.jsonl_transcript import JsonlTranscript, read_transcript
from treadle.domain.rules.history import History
from treadle.domain.rules.resume import rebuild_history, repaired_messages
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import (
    MessageAdded,
    TurnEnded,
    TurnEvent,
    TurnStarted,
    UsageUpdated,
)

TRANSCRIPT = "transcript.jsonl"
META = "meta.json"
RUNNING = "running"
KILLED = "killed"


class SessionNotFound(Exception):
    """No session matches the id given (or more than one does)."""


class SessionBusy(Exception):
    """The session is running in another treadle process: two would both append."""


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


def is_alive(pid: int) -> bool:
    """Whether a treadle process ``pid`` still runs (a reused pid is not treadle's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return b"treadle" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc here: trust the signal
        return True


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
        meta = self.meta(session_id)
        if meta.outcome != RUNNING:
            return SessionRow(meta, meta.outcome, meta.tokens)
        if is_alive(meta.pid):
            return SessionRow(meta, RUNNING, meta.tokens)
        summary = summarize(_events(self.transcript_path(session_id)))
        return SessionRow(meta, summary.outcome or KILLED, summary.usage.total)

    def rows(self) -> list[SessionRow]:
        """Every session, newest first."""
        rows = [self.row(session_id) for session_id in self.ids()]
        return sorted(rows, key=lambda row: (_when(row.meta), row.meta.id), reverse=True)


def _when(meta: SessionMeta) -> float:
    try:
        return datetime.fromisoformat(meta.created).timestamp()
    except ValueError:
        return 0.0


def _events(path: Path) -> Iterable[TurnEvent]:
    """The readable events of a transcript: a listing never fails on a damaged one."""
    try:
        yield from read_transcript(path)
    except (OSError, ValueError):
        return


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
    try:
        data = json.loads((folder / META).read_text(encoding="utf-8"))
        names = {f.name for f in dataclasses.fields(SessionMeta)}
        return SessionMeta(**{k: v for k, v in data.items() if k in names})
    except (OSError, ValueError, TypeError):
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


def write_meta(folder: Path, meta: SessionMeta, redact: Callable[[str], str]) -> None:
    """Replace ``meta.json`` whole: a reader sees the old record or the new, never half."""
    record = {
        key: redact(value) if isinstance(value, str) else value
        for key, value in dataclasses.asdict(meta).items()
    }
    temporary = folder / f".{META}.{os.getpid()}.tmp"
    with temporary.open("w", encoding="utf-8") as file:
        json.dump(record, file, ensure_ascii=False, indent=1)
        file.write("\n")
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, folder / META)


class SessionLog:
    """The session's TranscriptStore: every event to the JSONL, each turn's start and
    end to ``meta.json``."""

    def __init__(
        self,
        folder: str | Path,
        transcript: JsonlTranscript,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.folder = Path(folder)
        self.transcript = transcript
        self._redact = redact
        self.meta = read_meta(self.folder)

    def record(self, event: TurnEvent) -> None:
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

    def conversation_so_far(self) -> History | None:
        """The main conversation recorded so far, to continue it; None for a new session.

        What the rebuilt history adds to the recorded messages (an answer a kill cut
        short, results for calls that never finished) is recorded first, so the
        transcript stays the whole conversation.
        """
        path = self.transcript.path
        if not path.is_file() or path.stat().st_size == 0:
            return None
        events = list(read_transcript(path))
        for message in repaired_messages(events):
            self.transcript.record(MessageAdded(message))
        return rebuild_history(events)

    def _save(self, **changes: object) -> None:
        self.meta = dataclasses.replace(self.meta, updated=now_text(), **changes)  # type: ignore[arg-type]
        write_meta(self.folder, self.meta, self._redact)

    def close(self) -> None:
        self.transcript.close()
