from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from freezegun import freeze_time

from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript
from treadle.adapters.transcript.sessions import (
    KILLED,
    SessionLog,
    SessionNotFound,
    SessionStore,
    read_meta,
)
from treadle.domain.values.conversation import Usage
from treadle.domain.values.events import TurnEnded, TurnStarted, UsageUpdated
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome
from treadle.entrypoints.commands import run_subcommand

DEAD_PID = 2**22 + 12345  # above any pid_max: never a live process


def a_session(
    store: SessionStore, session_id: str, task: str, *, ends: TurnOutcome | None, tokens: int = 30
) -> None:
    store.create(session_id, workspace="/src/project", model="demo")
    log = SessionLog(store.folder(session_id), JsonlTranscript(store.transcript_path(session_id)))
    log.record(TurnStarted(task))
    log.record(UsageUpdated(Usage(tokens, 0), Usage(tokens, 0), 1))
    if ends is not None:
        log.record(TurnEnded(ends, Usage(tokens, 0), 1, 1.0))
    else:  # killed mid-turn: the record still says running, from a process now gone
        meta = json.loads((store.folder(session_id) / "meta.json").read_text())
        meta["pid"] = DEAD_PID
        (store.folder(session_id) / "meta.json").write_text(json.dumps(meta))
    log.close()


def test_a_session_records_what_it_is_and_how_its_turns_ended(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    with freeze_time("2025-03-01 09:30:00"):
        a_session(store, "s1", "Fix the parser\nwith details", ends=TurnOutcome(OutcomeKind.PAUSED))
    meta = read_meta(store.folder("s1"))
    assert (meta.id, meta.workspace, meta.model) == ("s1", "/src/project", "demo")
    assert meta.created.startswith("2025-03-01T")
    assert meta.task == "Fix the parser"
    assert (meta.outcome, meta.tokens, meta.turns) == ("paused", 30, 1)


def test_the_listing_is_newest_first_with_outcome_and_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path / "sessions")
    with freeze_time("2025-03-01 09:00:00"):
        a_session(
            store, "20250301-090000-aaaaaa", "Old task", ends=TurnOutcome(OutcomeKind.FINISHED)
        )
    with freeze_time("2025-03-02 09:00:00"):
        a_session(store, "20250302-090000-bbbbbb", "Killed task", ends=None, tokens=1234)
    with freeze_time("2025-03-03 09:00:00"):
        a_session(
            store,
            "20250303-090000-cccccc",
            "Blocked task",
            ends=TurnOutcome(OutcomeKind.BLOCKED, "a yes"),
        )
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path))
    out = io.StringIO()
    assert run_subcommand(["sessions"], out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["ID", "STARTED", "OUTCOME", "TOKENS", "FOLDER", "TASK"]
    assert [line.split()[0] for line in lines[1:]] == [
        "20250303-090000-cccccc",
        "20250302-090000-bbbbbb",
        "20250301-090000-aaaaaa",
    ]
    assert lines[1].split()[3:] == ["blocked", "30", "/src/project", "Blocked", "task"]
    assert lines[2].split()[3:] == [KILLED, "1,234", "/src/project", "Killed", "task"]
    assert "finished" in lines[3]


def test_no_sessions_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path))
    out = io.StringIO()
    assert run_subcommand(["sessions"], out) == 0
    assert out.getvalue().startswith("No sessions yet")


def test_a_lost_record_is_rebuilt_from_the_transcript(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    a_session(
        store,
        "s1",
        "Task one",
        ends=TurnOutcome(OutcomeKind.FAILED, "HTTP 400", FailureKind("HttpError")),
    )
    (store.folder("s1") / "meta.json").write_text("{ torn")
    row = store.row("s1")
    assert (row.meta.task, row.status, row.tokens) == ("Task one", "failed", 30)


@pytest.mark.parametrize(
    ("reference", "found"),
    [("20250301-0900-aa", "20250301-0900-aa"), ("20250302", "20250302-0900-bb"), ("last", None)],
)
def test_a_session_is_found_by_id_unique_prefix_or_last(
    tmp_path: Path, reference: str, found: str | None
) -> None:
    store = SessionStore(tmp_path)
    with freeze_time("2025-03-01"):
        a_session(store, "20250301-0900-aa", "a", ends=TurnOutcome(OutcomeKind.FINISHED))
    with freeze_time("2025-03-02"):
        a_session(store, "20250302-0900-bb", "b", ends=TurnOutcome(OutcomeKind.FINISHED))
    assert store.find(reference) == (found or "20250302-0900-bb")


@pytest.mark.parametrize(("reference", "why"), [("2025", "names 2 sessions"), ("x", "no session")])
def test_an_unknown_or_ambiguous_session_is_refused(
    tmp_path: Path, reference: str, why: str
) -> None:
    store = SessionStore(tmp_path)
    a_session(store, "20250301-0900-aa", "a", ends=TurnOutcome(OutcomeKind.FINISHED))
    a_session(store, "20250302-0900-bb", "b", ends=TurnOutcome(OutcomeKind.FINISHED))
    with pytest.raises(SessionNotFound, match=why):
        store.find(reference)


def test_the_record_is_redacted_too(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, redact=lambda text: text.replace("sk-secret", "[redacted]"))
    store.create("s1", workspace="/w", model="demo", task="use sk-secret please")
    assert "sk-secret" not in (tmp_path / "s1" / "meta.json").read_text()
