"""Resuming through the container: the session folder's transcript is the conversation."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from dependency_injector import providers

from treadle.adapters.fakes import (
    FakeClock,
    FakeProcess,
    FakeRunner,
    RecordingTerminal,
    ScriptedModel,
    ScriptedResponse,
)
from treadle.adapters.transcript.jsonl_transcript import read_transcript
from treadle.adapters.transcript.sessions import SessionBusy, SessionLock, SessionStore, read_meta
from treadle.domain.loop.turn import core_tools
from treadle.domain.rules.history import is_sendable
from treadle.domain.rules.resume import RESUME_MESSAGE
from treadle.domain.values.conversation import Message, ToolCall, Usage
from treadle.domain.values.events import MessageAdded, ToolStarted, TurnEvent, TurnStarted
from treadle.entrypoints.config import AppConfig
from treadle.entrypoints.container import Container
from treadle.entrypoints.session import open_session, run_session

SLOW = "make slow-check"


def container_for(
    session_dir: Path, model: ScriptedModel, terminal: RecordingTerminal, clock: FakeClock
) -> Container:
    container = Container()
    container.app.override(providers.Object(AppConfig(model="demo", workspace=str(session_dir))))
    container.session_dir.override(providers.Object(str(session_dir)))
    container.clock.override(providers.Object(clock))
    container.model.override(providers.Object(model))
    container.runner.override(
        providers.Object(FakeRunner(clock, {SLOW: FakeProcess("ok", duration=50.0)}))
    )
    container.terminal.override(providers.Object(terminal))
    container.tools.override(providers.Object(core_tools()))
    return container


def close(container: Container) -> None:
    assert container.transcript() is not None
    container.shutdown_resources()


async def test_a_paused_session_resumes_on_the_same_transcript(tmp_path: Path) -> None:
    session = tmp_path / "sessions" / "s1"
    clock = FakeClock()
    first = ScriptedModel([ScriptedResponse.calling("bash", "Checking.", command=SLOW)], clock)
    esc = RecordingTerminal(press_esc_when=lambda e: isinstance(e, ToolStarted))
    container = container_for(session, first, esc, clock)
    outcome = await container.agent().run_turn("Run the slow check")
    close(container)
    assert outcome.screen_line == "Turn paused"

    second = ScriptedModel([ScriptedResponse.saying("It passed.")], clock)
    again = container_for(session, second, RecordingTerminal(), clock)
    agent = again.agent()
    outcome = await agent.run_turn(RESUME_MESSAGE)
    close(again)

    assert outcome.screen_line == "Turn finished"
    (request,) = second.requests
    assert is_sendable(request.messages)
    assert [m.role for m in request.messages] == ["user", "assistant", "tool", "user"]
    # The stopped command's result says so, as it was recorded.
    assert request.messages[2].text.startswith("The command was stopped before it ended")
    assert request.messages[2].interrupted
    assert request.messages[-1].text == RESUME_MESSAGE
    events = list(read_transcript(session / "transcript.jsonl"))
    recorded = [e.message for e in events if isinstance(e, MessageAdded) and not e.agent]
    assert recorded == list(agent.history.messages)  # the transcript holds it all, in order
    meta = read_meta(session)
    assert (meta.turns, meta.outcome, meta.task) == (2, "finished", "Run the slow check")


async def test_a_kill_mid_tool_is_repaired_in_the_transcript_before_going_on(
    tmp_path: Path,
) -> None:
    session = tmp_path / "sessions" / "s1"
    clock = FakeClock()
    killed = container_for(session, ScriptedModel([], clock), RecordingTerminal(), clock)
    call = ToolCall("k1", "bash", json.dumps({"command": SLOW}))
    log = killed.transcript()
    assert log is not None
    events: list[TurnEvent] = [
        TurnStarted("Run it"),
        MessageAdded(Message.user("Run it")),
        MessageAdded(Message.assistant("", (call,))),
        ToolStarted(call, SLOW),
    ]
    for event in events:  # ...and then the process was killed: no result, no end
        log.record(event)
    assert log.lock is not None
    log.lock.release()  # as a kill would

    second = ScriptedModel([ScriptedResponse.saying("Resumed.", usage=Usage(1, 1))], clock)
    again = container_for(session, second, RecordingTerminal(), clock)
    await again.agent().run_turn("go on")
    close(again)

    events = list(read_transcript(session / "transcript.jsonl"))
    results = [
        e.message for e in events if isinstance(e, MessageAdded) and e.message.role == "tool"
    ]
    assert [(m.tool_call_id, m.interrupted) for m in results] == [("k1", True)]
    assert events.index(MessageAdded(results[0])) < events.index(TurnStarted("go on"))
    assert is_sendable(second.requests[0].messages)


def test_resuming_a_running_session_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("TREADLE_CONFIG_DIR", str(tmp_path / "config"))
    store = SessionStore(tmp_path / "sessions")
    store.create("s1", workspace=str(tmp_path), model="demo")
    held = SessionLock(store.folder("s1"))
    held.acquire()  # another treadle has it open
    args = argparse.Namespace(model=None, base_url=None, approval=None, workspace=None, resume="s1")
    try:
        with pytest.raises(SessionBusy, match="open in another treadle"):
            open_session(args)
    finally:
        held.release()


def test_a_resumed_session_keeps_its_model_and_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("TREADLE_CONFIG_DIR", str(tmp_path / "config"))
    store = SessionStore(tmp_path / "sessions")
    store.create("s1", workspace=str(tmp_path), model="script:/x.json")
    args = argparse.Namespace(model=None, base_url=None, approval=None, workspace=None, resume="s")
    app, session_id, resuming = open_session(args)
    assert (session_id, resuming) == ("s1", True)
    assert (app.model, app.workspace) == ("script:/x.json", str(tmp_path))
    assert app.origin("model") == "session s1"


def test_a_damaged_transcript_is_refused_with_a_message_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TREADLE_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("TREADLE_CONFIG_DIR", str(tmp_path / "config"))
    store = SessionStore(tmp_path / "sessions")
    store.create("s1", workspace=str(tmp_path), model="demo")
    store.transcript_path("s1").write_text(
        '{"type": "turn_started", "task": "x", "agent": ""}\n'
        "garbage\n"
        '{"type": "turn_started", "task": "y"}\n'
    )
    args = argparse.Namespace(
        model=None,
        base_url=None,
        approval=None,
        workspace=None,
        resume="s1",
        task="go on",
        print=True,
        json=False,
    )
    assert run_session(args) == 2
    error = capsys.readouterr().err
    assert error.startswith("treadle: cannot continue session s1: ")
    assert "transcript.jsonl:2" in error
