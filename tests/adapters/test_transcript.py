from __future__ import annotations

import json
from pathlib import Path

import pytest

from treadle.adapters.secrets.redact import REDACTED, Redactor
from treadle.adapters.transcript.jsonl_transcript import (
    JsonlTranscript,
    TranscriptDamaged,
    read_transcript,
)
from treadle.domain.values.conversation import Message, Usage
from treadle.domain.values.events import (
    AnswerDelta,
    MessageAdded,
    ResponseReceived,
    TurnEnded,
    TurnEvent,
    TurnStarted,
)
from treadle.domain.values.outcome import OutcomeKind, TurnOutcome

EVENTS: list[TurnEvent] = [
    TurnStarted("fix it"),
    MessageAdded(Message.user("fix it")),
    AnswerDelta("Looking"),
    ResponseReceived(1, "Looking", (), Usage(10, 2), "end_turn"),
    TurnEnded(TurnOutcome(OutcomeKind.FINISHED), Usage(10, 2), 1, 0.5),
]


def test_every_event_is_on_disk_as_soon_as_it_is_recorded(tmp_path: Path) -> None:
    transcript = JsonlTranscript(tmp_path / "t.jsonl")
    for count, event in enumerate(EVENTS, start=1):
        transcript.record(event)
        # Read by another handle, as a crash would leave it: no close, no flush by us.
        assert list(read_transcript(tmp_path / "t.jsonl")) == EVENTS[:count]


def test_a_transcript_is_one_json_object_per_line(tmp_path: Path) -> None:
    transcript = JsonlTranscript(tmp_path / "t.jsonl")
    for event in EVENTS:
        transcript.record(event)
    transcript.close()
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == [
        "turn_started",
        "message_added",
        "answer_delta",
        "response_received",
        "turn_ended",
    ]


@pytest.mark.parametrize("cut", [1, 10, 30, -1])
def test_a_torn_last_line_is_skipped(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "t.jsonl"
    transcript = JsonlTranscript(path)
    for event in EVENTS:
        transcript.record(event)
    transcript.close()
    data = path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: last_start + cut] if cut > 0 else data[:-2])
    assert list(read_transcript(path)) == EVENTS[:-1]


def test_a_bad_line_before_the_end_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "turn_started", "task": "x", "agent": ""}\nnot json\n{}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl:2"):
        list(read_transcript(path))


def test_appending_after_a_torn_line_drops_the_torn_piece(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "turn_started", "task": "x", "agent": ""}\n{"type": "answer_del')
    transcript = JsonlTranscript(path)
    transcript.record(TurnStarted("again"))
    transcript.close()
    assert list(read_transcript(path)) == [TurnStarted("x"), TurnStarted("again")]


def test_appending_after_a_whole_last_line_without_a_newline_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"type": "turn_started", "task": "x", "agent": ""}')
    transcript = JsonlTranscript(path)
    transcript.record(TurnStarted("again"))
    transcript.close()
    assert list(read_transcript(path)) == [TurnStarted("x"), TurnStarted("again")]


def test_secrets_are_redacted_before_they_are_stored(tmp_path: Path) -> None:
    secret = "sk-live-abcdef0123456789"
    transcript = JsonlTranscript(tmp_path / "t.jsonl", redact=Redactor([secret]))
    transcript.record(MessageAdded(Message.tool("c1", f"KEY={secret}\n")))
    for piece in ["the key ", "sk-live-", "abcdef01", "23456789", " is set"]:
        transcript.record(AnswerDelta(piece))
    transcript.close()
    stored = (tmp_path / "t.jsonl").read_text()
    assert secret not in stored
    assert "sk-live-abcdef01" not in stored  # not even most of it, across lines
    deltas = [e for e in read_transcript(tmp_path / "t.jsonl") if isinstance(e, AnswerDelta)]
    assert "".join(d.text for d in deltas) == f"the key {REDACTED} is set"


def test_a_plain_function_redacts_each_string(tmp_path: Path) -> None:
    transcript = JsonlTranscript(tmp_path / "t.jsonl", redact=lambda s: s.replace("x", "y"))
    transcript.record(TurnStarted("xx"))
    transcript.close()
    assert list(read_transcript(tmp_path / "t.jsonl")) == [TurnStarted("yy")]


def test_a_lone_surrogate_that_reaches_the_transcript_is_written_not_fatal(tmp_path):
    transcript = JsonlTranscript(tmp_path / "t.jsonl")
    transcript.record(AnswerDelta("half a pair: \ud800"))
    transcript.record(AnswerDelta("and on"))
    transcript.close()
    events = list(read_transcript(tmp_path / "t.jsonl"))
    assert [e.text for e in events if isinstance(e, AnswerDelta)][1] == "and on"


def test_a_transcript_line_nested_too_deep_is_refused_with_its_line_number(tmp_path):
    path = tmp_path / "t.jsonl"
    deep = '{"type": "answer_delta", "text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path.write_text(
        json.dumps({"type": "answer_delta", "text": "a", "agent": ""}) + "\n" + deep + "\n{}\n"
    )
    with pytest.raises(TranscriptDamaged, match=r"t.jsonl:2:"):
        list(read_transcript(path))
