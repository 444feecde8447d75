"""``treadle fork``: a new session whose transcript is the first turns of another's.

The parent is only read: its folder, transcript and ``meta.json`` stay byte for byte
as they were. The fork's transcript is the parent's first lines, copied as bytes (a
torn last line left out), up to where :func:`~treadle.domain.rules.fork.fork_point`
cuts; its ``meta.json`` is the parent's (folder, model, server, recorded settings)
with the fork's own id, counts and ``forked_from``. It is resumed, replayed and listed
like any session. Saved outputs named in its results stay in the parent's folder.

Example::

    meta = fork_session(SessionStore(state / "sessions"), "20250101-120000-abc123",
                        "20250102-090000-def456", at=1)
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from treadle.adapters.transcript.jsonl_transcript import TranscriptDamaged, read_transcript
from treadle.adapters.transcript.sessions import (
    RUNNING,
    SessionMeta,
    SessionStore,
    now_text,
    summarize,
    write_meta,
)
from treadle.domain.rules.fork import ForkPoint, fork_point


class ForkRefused(ValueError):
    """The session cannot be forked as asked (no turns, an --at out of range)."""


def fork_session(store: SessionStore, parent: str, fork: str, at: int | None) -> SessionMeta:
    """Make session ``fork`` from the first ``at`` turns of ``parent`` (None: all).

    Raises :class:`ForkRefused` with the reason (a damaged transcript among them),
    ``OSError`` when the state folder cannot hold it (then nothing of the fork is left)."""
    lines = _whole_lines(store.transcript_path(parent))
    point = fork_point([_kind(line) for line in lines], at)
    if not isinstance(point, ForkPoint):
        raise ForkRefused(f"cannot fork session {parent}: {point}")
    meta = store.meta(parent)
    folder = store.folder(fork)
    folder.mkdir(parents=True, exist_ok=False)
    try:
        transcript = store.transcript_path(fork)
        _write_whole(transcript, b"".join(lines[: point.lines]))
        try:
            summary = summarize(read_transcript(transcript))
        except TranscriptDamaged as error:  # a line changed by hand: the fork is not made
            where = str(error).replace(f"{transcript}:", "line ", 1)
            raise ForkRefused(
                f"cannot fork session {parent}: its transcript is damaged at {where}"
            ) from None
        forked = dataclasses.replace(
            meta,
            id=fork,
            created=now_text(),
            updated=now_text(),
            outcome=summary.outcome or RUNNING,
            input_tokens=summary.usage.input_tokens,
            output_tokens=summary.usage.output_tokens,
            turns=point.turns,
            pid=os.getpid(),
            forked_from=parent,
            forked_at=point.turns,
        )
        write_meta(folder, forked, lambda text: text)  # the parent's text was redacted
    except BaseException:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
        raise
    return forked


def _whole_lines(path: Path) -> list[bytes]:
    """The transcript's lines with their ends; a last one without its end (torn by a
    kill mid-write) is left out, as reading leaves it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines.pop()
    return lines


def _kind(line: bytes) -> tuple[str, str]:
    """A record's type and agent ("" for a line that is not a record)."""
    try:
        record = json.loads(line)
    except ValueError:
        return ("", "")
    if not isinstance(record, dict):
        return ("", "")
    kind, agent = record.get("type", ""), record.get("agent", "")
    return (kind if isinstance(kind, str) else "", agent if isinstance(agent, str) else "")


def _write_whole(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all."""
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, path)
