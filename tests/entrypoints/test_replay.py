"""``treadle replay``: recorded sessions re-run, checked request by request."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.golden.demo_scenario import GOLDEN
from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    RecordingTerminal,
    ScriptedModel,
    ScriptedResponse,
)
from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript, read_transcript
from treadle.adapters.transcript.recording import Recording, recorded_failure
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.rules.approval import ApprovalPolicy
from treadle.domain.rules.resume import rebuild_history, repaired_messages
from treadle.domain.values.events import MessageAdded, ToolStarted, TurnEvent
from treadle.domain.values.model import (
    CredentialsRejected,
    HttpStatusError,
    MalformedStream,
    ModelError,
    TransportError,
)
from treadle.domain.values.outcome import FailureKind, OutcomeKind, TurnOutcome
from treadle.domain.values.tools import ApprovalAnswer
from treadle.entrypoints.commands import build_parser, run_subcommand
from treadle.entrypoints.commands import replay as replay_command

R = ScriptedResponse


async def replay(path: Path, *flags: str) -> tuple[int, str]:
    """``treadle replay PATH --check --recorded-tools``, in this event loop."""
    out = io.StringIO()
    args = build_parser().parse_args(["replay", str(path), "--check", "--recorded-tools", *flags])
    code = await replay_command(args, out)
    return code, out.getvalue()


def recorded_so_far(path: Path) -> list[TurnEvent]:
    return list(read_transcript(path)) if path.exists() else []


async def record(
    path: Path,
    turns: Sequence[tuple[Sequence[ScriptedResponse], str]],
    *,
    processes: dict[str, FakeProcess] | None = None,
    esc_when: Callable[[TurnEvent], bool] | None = None,
    secrets: Sequence[str] = (),
    approval: ApprovalPolicy = "auto",
    approvals: Sequence[ApprovalAnswer] = (),
) -> list[TurnOutcome]:
    """Record turns on fakes; each turn is (script, task) on a fresh agent, as a resume is."""
    outcomes = []
    for script, task in turns:
        clock = FakeClock()
        transcript = JsonlTranscript(path, redact=Redactor(secrets))
        terminal = RecordingTerminal(press_esc_when=esc_when, approvals=approvals)
        runner = FakeRunner(clock, processes or {})
        ports = TurnPorts(ScriptedModel(script, clock), clock, runner, terminal, transcript)
        events = recorded_so_far(path)
        for message in repaired_messages(events):
            transcript.record(MessageAdded(message))
        settings = TurnSettings(approval=approval)
        agent = Agent(ports, settings, core_tools(), history=rebuild_history(events))
        outcomes.append(await agent.run_turn(task))
        transcript.close()
        esc_when = None
    return outcomes


# Tampered copies of the golden demo -----------------------------------------------


def tampered(tmp_path: Path, change: Callable[[list[dict[str, Any]]], None]) -> Path:
    records = [json.loads(line) for line in GOLDEN.read_text().splitlines()]
    change(records)
    path = tmp_path / "tampered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def nth(records: list[dict[str, Any]], kind: str, n: int, **where: Any) -> dict[str, Any]:
    found = [
        r for r in records if r["type"] == kind and all(r.get(k) == v for k, v in where.items())
    ]
    return found[n - 1]


def set_max_tokens(records: list[dict[str, Any]]) -> None:
    nth(records, "request_sent", 3, agent="")["max_tokens"] = 4096


def set_message_count(records: list[dict[str, Any]]) -> None:
    nth(records, "request_sent", 2, agent="")["message_count"] = 7


def change_a_call(records: list[dict[str, Any]]) -> None:
    call = nth(records, "response_received", 1, agent="")["tool_calls"][1]
    call["arguments"] = json.dumps({"command": "ls -l"})


def change_a_tool_result(records: list[dict[str, Any]]) -> None:
    message = nth(records, "message_added", 4, agent="")["message"]
    assert message["role"] == "tool"
    message["text"] = message["text"].replace("README.md", "READ-ME.md")


def drop_the_failure(records: list[dict[str, Any]]) -> None:
    records.remove(nth(records, "request_failed", 1))


TAMPERS = [
    (set_max_tokens, "request 3 (the main agent): max_tokens is 8192, recorded 4096"),
    (
        set_message_count,
        "request 2 (the main agent): it carries 4 messages, the recorded request 7",
    ),
    (
        change_a_call,
        "request 2 (the main agent): its messages differ from the recorded ones; message 2 "
        "(assistant) was",
    ),
    (
        change_a_tool_result,
        "request 2 (the main agent): the recorded messages do not match the recorded digest",
    ),
    (drop_the_failure, "the replay ended before the recorded request 3"),
]


@pytest.mark.parametrize(("change", "reported"), TAMPERS, ids=[t[0].__name__ for t in TAMPERS])
async def test_a_tampered_recording_reports_the_first_divergence(
    tmp_path: Path, change: Callable[[list[dict[str, Any]]], None], reported: str
) -> None:
    code, output = await replay(tampered(tmp_path, change))
    assert code == 1
    assert output.startswith("replay diverged at ")
    assert reported in output


def test_without_check_a_divergence_is_reported_and_the_replay_exits_as_its_turn_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    path = tampered(tmp_path, set_max_tokens)
    assert run_subcommand(["replay", str(path), "--recorded-tools"], out) == 1
    assert "Turn failed" in out.getvalue()
    assert "Task: Show what treadle does" in out.getvalue()  # the session is shown
    assert "max_tokens is 8192, recorded 4096" in capsys.readouterr().err


async def test_an_unreadable_transcript_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("not json\n{}\n")
    assert (await replay(path))[0] == 2


# Sessions that did not simply finish -----------------------------------------------


async def test_retries_and_failures_replay_with_their_kind(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    script = [
        R.failing(HttpStatusError(503, "busy")),
        R.failing(TransportError("timeout", "read timed out")),
        R.saying("Recovered."),
    ]
    (first,) = await record(path, [(script, "try")])
    assert first.screen_line == "Turn finished"
    assert await replay(path) == (0, f"replay: 3 requests, no divergence from {path}\n")


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (HttpStatusError(400, "bad request"), "Turn failed: HttpError: HTTP 400: bad request"),
        (CredentialsRejected("set OPENAI_API_KEY"), "Turn blocked: set OPENAI_API_KEY"),
        (MalformedStream("bad json"), "Turn failed: MalformedStream: bad json"),
    ],
)
async def test_a_failed_session_replays_to_the_same_end(
    tmp_path: Path, error: ModelError, line: str
) -> None:
    path = tmp_path / "t.jsonl"
    (outcome,) = await record(path, [([R.failing(error)], "try")])
    assert outcome.screen_line == line
    assert (await replay(path))[0] == 0
    # Without --check, the replay is a run of the session: it exits as the turn did.
    out = io.StringIO()
    args = build_parser().parse_args(["replay", str(path), "--recorded-tools"])
    assert await replay_command(args, out) == outcome.exit_code != 0
    assert line in out.getvalue()


async def test_a_paused_then_resumed_session_replays_both_turns(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    processes = {"make check": FakeProcess("ok\n", duration=10.0)}
    first = [R.calling("bash", "Checking.", command="make check")]
    second = [R.calling("bash", command="make check"), R.saying("All good.")]
    outcomes = await record(
        path,
        [(first, "check it"), (second, "Continue.")],
        processes=processes,
        esc_when=lambda e: isinstance(e, ToolStarted),
    )
    assert [o.screen_line for o in outcomes] == ["Turn paused", "Turn finished"]
    assert await replay(path) == (0, f"replay: 3 requests, no divergence from {path}\n")


async def test_a_session_killed_mid_answer_replays_up_to_the_cut(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    await record(path, [([R.saying("Here is a long answer", chunks=4)], "explain")])
    lines = path.read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"answer_delta"' in line) + 2
    path.write_text("\n".join(lines[:cut]) + "\n")  # the kill came after two deltas
    await record(path, [([R.saying("Going on.")], "Continue.")])
    assert (await replay(path))[0] == 0


async def test_a_secret_redacted_in_the_recording_does_not_count_as_a_divergence(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    secret = "hunter2-hunter2-hunter2"
    script = [R.calling("bash", command="cat .env"), R.saying("Read it.")]
    await record(
        path,
        [(script, "read the env")],
        processes={"cat .env": FakeProcess(f"PASSWORD={secret}\n")},
        secrets=[secret],
    )
    assert secret not in path.read_text()
    assert (await replay(path))[0] == 0


async def test_a_question_nobody_answered_replays_and_so_does_its_answer(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = [R.calling("ask", question="Which colour?")]
    second = [R.saying("Blue it is.")]
    outcomes = await record(path, [(first, "paint it"), (second, "blue")])
    assert [o.screen_line for o in outcomes] == [
        "Turn waiting for input: Which colour?",
        "Turn finished",
    ]
    assert await replay(path) == (0, f"replay: 2 requests, no divergence from {path}\n")


async def test_declined_and_blocked_calls_replay_as_they_ended(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    script = [R.calling("bash", command="rm -rf build"), R.calling("bash", command="make")]
    (outcome,) = await record(path, [(script, "clean up")], approval="ask", approvals=["no"])
    assert outcome.screen_line == "Turn blocked: approval needed to run bash: make"
    assert await replay(path) == (0, f"replay: 2 requests, no divergence from {path}\n")


async def test_calls_refused_by_a_read_only_policy_replay_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    script = [R.calling("bash", command="touch x"), R.saying("I may not write here.")]
    await record(path, [(script, "write")], approval="read-only")
    assert (await replay(path))[0] == 0


# Transcripts written before calls said their ending --------------------------------


def without_endings(path: Path) -> Path:
    """The transcript as treadle wrote it before ``tool_finished`` had an ``ending``."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if record["type"] == "tool_finished":
            del record["ending"]
    old = path.with_name("old-" + path.name)
    old.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return old


async def test_a_transcript_written_before_tool_endings_replays_as_it_did(tmp_path: Path) -> None:
    # Declined, blocked, unanswered, interrupted and stopped-at-a-deadline calls: every
    # ending replay tells apart, read back from the old lines alone.
    declined = tmp_path / "declined.jsonl"
    script = [R.calling("bash", command="rm -rf build"), R.calling("bash", command="make")]
    await record(declined, [(script, "clean up")], approval="ask", approvals=["no"])
    asked = tmp_path / "asked.jsonl"
    await record(
        asked, [([R.calling("ask", question="Which?")], "paint"), ([R.saying("ok")], "blue")]
    )
    paused = tmp_path / "paused.jsonl"
    check = [R.calling("bash", "Checking.", command="make check")]
    await record(
        paused,
        [(check, "check it"), ([R.saying("Done.")], "Continue.")],
        processes={"make check": FakeProcess("ok\n", duration=10.0)},
        esc_when=lambda e: isinstance(e, ToolStarted),
    )
    golden = tmp_path / "golden.jsonl"
    golden.write_text(GOLDEN.read_text())  # a sub-agent stopped at its deadline
    for path in (declined, asked, paused, golden):
        old = without_endings(path)
        then, now = Recording(read_transcript(old)), Recording(read_transcript(path))
        assert [c.ending for c in then.calls] == [c.ending for c in now.calls], path.name
        code, said = await replay(old)
        assert (code, said) == (
            0,
            f"replay: {said.split()[1]} requests, no divergence from {old}\n",
        )


# How a recorded failure is read back ----------------------------------------------

FAILURES = [
    ("HTTP 503: busy", False, None, HttpStatusError(503, "busy")),
    ("HTTP 429", True, None, HttpStatusError(429, "")),
    (
        "connection reset by peer",
        True,
        None,
        TransportError("connection_reset", "connection reset by peer"),
    ),
    ("set KEY", False, TurnOutcome(OutcomeKind.BLOCKED, "set KEY"), CredentialsRejected("set KEY")),
    (
        "bad",
        False,
        TurnOutcome(OutcomeKind.FAILED, "bad", FailureKind("MalformedStream")),
        MalformedStream("bad"),
    ),
    (
        "refused",
        False,
        TurnOutcome(OutcomeKind.FAILED, "refused", FailureKind("TransportError")),
        TransportError("other", "refused"),
    ),
]


@pytest.mark.parametrize(("text", "retried", "outcome", "error"), FAILURES)
def test_a_recorded_failure_is_read_back_as_an_error_of_the_same_kind(
    text: str, retried: bool, outcome: TurnOutcome | None, error: ModelError
) -> None:
    read = recorded_failure(text, retried=retried, outcome=outcome)
    assert read == error
    assert read.describe() == text  # the replayed failure says what the recorded one said


def test_a_recording_groups_requests_by_agent_and_turn() -> None:
    recording = Recording(read_transcript(GOLDEN))
    assert [c.name for c in recording.conversations] == ["", "agent-1"]
    assert len(recording.main.exchanges) == 6
    assert len(recording.conversations[1].exchanges) == 3
    assert recording.conversations[1].ending == "deadline"
    assert [t.task for t in recording.turns] == ["Show what treadle does, on this folder"]
