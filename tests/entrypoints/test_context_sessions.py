"""Compacted sessions end to end: resumed, replayed with ``--check``, killed with -9
in the middle of a compaction; the configuration of the window; ``--json``."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from tests.processes import bare_env
from treadle.adapters.fakes import (
    FakeClock,
    FakeRunner,
    FakeWindow,
    RecordingTerminal,
    ScriptedModel,
)
from treadle.adapters.fakes import ScriptedResponse as R
from treadle.adapters.terminal.plain_terminal import PlainTerminal, describe_event
from treadle.adapters.transcript.jsonl_transcript import read_transcript
from treadle.domain.loop.turn import core_tools
from treadle.domain.rules.history import History, is_sendable
from treadle.domain.rules.resume import rebuild_history
from treadle.domain.values.conversation import Message
from treadle.domain.values.events import (
    CompactionStarted,
    ContextCompacted,
    ContextPruned,
    RequestSent,
    TurnEvent,
    TurnStarted,
)
from treadle.entrypoints.commands import run_subcommand
from treadle.entrypoints.config import AppConfig, ConfigError, load_config
from treadle.entrypoints.container import Container, build_model

TASK = "read the big log again and again"
BIG = "2025-01-01 12:00:00 service=api status=ok latency=12ms\n" * 400


def reads(count: int) -> list[R]:
    return [R.calling("bash", command=f"cat part-{n}.log") for n in range(count)]


def container_for(
    session: Path, model: ScriptedModel, clock: FakeClock, terminal: RecordingTerminal
) -> Container:
    container = Container()
    app = AppConfig(model="demo", workspace=str(session.parent))
    container.app.override(providers.Object(app))
    container.session_dir.override(providers.Object(str(session)))
    container.clock.override(providers.Object(clock))
    container.model.override(providers.Object(model))
    container.runner.override(providers.Object(FakeRunner(clock, lambda c: _big())))
    container.terminal.override(providers.Object(terminal))
    container.tools.override(providers.Object(core_tools()))
    return container


def _big() -> Any:
    from treadle.adapters.fakes import FakeProcess

    return FakeProcess(BIG)


def first_request_after(events: list[TurnEvent], turn: int) -> tuple[int, RequestSent]:
    """The first request of main turn ``turn`` that asks for an answer (not a summary)."""
    starts = [i for i, e in enumerate(events) if isinstance(e, TurnStarted) and not e.agent]
    compacting = False
    for index in range(starts[turn], len(events)):
        event = events[index]
        if isinstance(event, CompactionStarted | ContextCompacted):
            compacting = isinstance(event, CompactionStarted)
        elif isinstance(event, RequestSent) and not event.agent and not compacting:
            return index, event
    raise AssertionError("no request in that turn")


async def test_a_compacted_session_resumes_on_its_compacted_conversation(tmp_path: Path) -> None:
    session = tmp_path / "sessions" / "s1"
    clock = FakeClock()
    first = ScriptedModel([*reads(120), R.saying("Read.")], clock, window=FakeWindow(8_192))
    container = container_for(session, first, clock, RecordingTerminal())
    assert (await container.agent().run_turn(TASK)).screen_line == "Turn finished"
    container.shutdown_resources()
    events = list(read_transcript(session / "transcript.jsonl"))
    assert any(isinstance(e, ContextCompacted) for e in events)
    rebuilt = rebuild_history(events)
    assert rebuilt.messages[0] == Message.user(TASK)

    second = ScriptedModel([R.saying("Still fine.")], clock, window=FakeWindow(8_192))
    again = container_for(session, second, clock, RecordingTerminal())
    assert (await again.agent().run_turn("and now?")).screen_line == "Turn finished"
    again.shutdown_resources()
    [request] = second.requests
    assert list(request.messages) == [*rebuilt.messages, Message.user("and now?")]
    assert is_sendable(request.messages)
    assert second.refusals == 0

    events = list(read_transcript(session / "transcript.jsonl"))
    index, sent = first_request_after(events, 1)
    assert sent.digest == History(rebuild_history(events[:index]).messages).digest


async def test_a_resumed_history_over_the_window_is_made_to_fit_before_it_is_sent(
    tmp_path: Path,
) -> None:
    session = tmp_path / "sessions" / "s1"
    clock = FakeClock()
    # Recorded on a large window, resumed on a small one.
    first = ScriptedModel([*reads(30), R.saying("Read.")], clock, window=FakeWindow(200_000))
    container = container_for(session, first, clock, RecordingTerminal())
    await container.agent().run_turn(TASK)
    container.shutdown_resources()
    second = ScriptedModel([R.saying("Fine.")], clock, window=FakeWindow(8_192))
    terminal = RecordingTerminal()
    again = container_for(session, second, clock, terminal)
    assert (await again.agent().run_turn("Continue.")).screen_line == "Turn finished"
    again.shutdown_resources()
    assert second.refusals == 0
    [pruned] = terminal.of_type(ContextPruned)  # room was made before the request
    assert pruned.tokens_before > 8_192 > pruned.tokens_after
    answer = [r for r in second.requests if r.tools_allowed][-1]
    from treadle.adapters.fakes.window import request_tokens

    assert request_tokens(answer) + answer.max_tokens <= 8_192


def read(number: int) -> dict[str, object]:
    """Every third part is read by a command that says how long it took: a replay with
    real tools then sends other words, which it must see are the same (``N s``)."""
    if number % 3:
        return {"name": "read_file", "arguments": {"path": f"part-{number}.log"}}
    command = f'echo "took $(date +%N) s"; head -c 3000 part-{number}.log'
    return {"name": "bash", "arguments": {"command": command}}


def record_session(tmp_path: Path) -> Path:
    """A real treadle process: a scripted model on an 8k window, a turn that compacts."""
    work = tmp_path / "work"
    work.mkdir()
    for n in range(120):
        (work / f"part-{n}.log").write_text(BIG)
    script = {
        "window": {"tokens": 8192, "like": "llama.cpp"},
        "responses": [
            *[{"tool_calls": [read(n)]} for n in range(120)],
            {"text": "All parts read."},
        ],
    }
    (work / "script.json").write_text(json.dumps(script))
    return work


def treadle(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treadle", *args],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_a_compacted_session_replays_with_check_and_no_divergence(tmp_path: Path) -> None:
    work = record_session(tmp_path)
    env = bare_env(tmp_path)
    result = treadle(work, env, "--model", "script:script.json", "--json", TASK)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    compacted = [r for r in records if r["type"] == "context_compacted"]
    assert compacted and all(isinstance(r["messages"], int) for r in compacted)
    assert next(r for r in records if r["type"] == "context_window_known")["origin"] == (
        "the scripted server (llama.cpp)"
    )
    (session,) = (tmp_path / "state" / "sessions").iterdir()
    replayed = treadle(work, env, "replay", session.name, "--check", "--recorded-tools")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence" in replayed.stdout
    tools = treadle(work, env, "replay", session.name, "--check")  # the files, read again
    assert tools.returncode == 0, tools.stdout + tools.stderr


@pytest.mark.slow
def test_a_kill_during_a_compaction_leaves_a_session_that_resumes(tmp_path: Path) -> None:
    work = record_session(tmp_path)
    script = json.loads((work / "script.json").read_text())
    script["summaries"] = [
        {"text": ["## Task\n"] + ["still summarising "] * 50, "chunk_delay": 0.2}
    ]
    (work / "script.json").write_text(json.dumps(script))
    env = bare_env(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", "script:script.json", "--print", TASK],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    transcript: Path | None = None
    while True:
        assert process.poll() is None, "the turn ended before it compacted"
        assert time.monotonic() < deadline, "the compaction never started"
        sessions = tmp_path / "state" / "sessions"
        found = list(sessions.glob("*/transcript.jsonl")) if sessions.is_dir() else []
        if found and '"type": "compaction_started"' in found[0].read_text():
            transcript = found[0]
            break
        time.sleep(0.02)
    time.sleep(0.3)  # into the summary's stream
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert transcript is not None
    before = list(read_transcript(transcript))
    assert any(isinstance(e, CompactionStarted) for e in before)
    assert not any(isinstance(e, ContextCompacted) for e in before)
    rebuilt = rebuild_history(before)
    assert is_sendable(rebuilt.messages) and rebuilt.messages[0] == Message.user(TASK)

    after = {"window": {"tokens": 8192}, "responses": [{"text": "Resumed and done."}]}
    (work / "after.json").write_text(json.dumps(after))
    session = transcript.parent.name
    result = treadle(work, env, "--resume", session, "--model", "script:after.json", "--print")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "Turn finished"
    events = list(read_transcript(transcript))
    assert any(isinstance(e, ContextCompacted) for e in events)  # it compacted first
    index, sent = first_request_after(events, 1)
    assert sent.digest == History(rebuild_history(events[:index]).messages).digest


# Configuration -----------------------------------------------------------------------


def test_the_window_keys_are_checked(tmp_path: Path) -> None:
    base = {"TREADLE_CONFIG_DIR": str(tmp_path)}
    app = load_config(
        flags={}, environ=base | {"TREADLE_CONTEXT_WINDOW": "16384"}, cwd=str(tmp_path)
    )
    assert (app.context_window, app.origin("context_window")) == (
        16384,
        "env TREADLE_CONTEXT_WINDOW",
    )
    for variable, value, says in [
        ("TREADLE_CONTEXT_WINDOW", "100", "at least 256"),
        ("TREADLE_COMPACT_AT", "1.5", "at most 1"),
        ("TREADLE_COMPACT_AT", "0", "more than 0"),
        ("TREADLE_READ_TIMEOUT", "0", "more than 0"),
        ("TREADLE_CONNECT_TIMEOUT", "soon", "a number"),
    ]:
        with pytest.raises(ConfigError, match=says):
            load_config(flags={}, environ=base | {variable: value}, cwd=str(tmp_path))


def test_the_timeouts_reach_the_model_adapter() -> None:
    app = AppConfig(
        model="openai:qwen", base_url="http://127.0.0.1:1/v1", connect_timeout=2.5, read_timeout=900
    )
    model = build_model(app, FakeClock())
    connection = model._connection  # type: ignore[attr-defined]
    assert (connection.connect_timeout, connection.read_timeout) == (2.5, 900)


def config_lines(tmp_path: Path, *flags: str, **environ: str) -> list[str]:
    out = io.StringIO()
    old = dict(os.environ)
    os.environ.update({"TREADLE_CONFIG_DIR": str(tmp_path / "config"), **environ})
    try:
        assert run_subcommand(["config", "--workspace", str(tmp_path), *flags], out) == 0
    finally:
        os.environ.clear()
        os.environ.update(old)
    return out.getvalue().splitlines()


def test_config_shows_the_window_with_its_origin_and_the_budgets_in_force(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"window": {"tokens": 8192}, "responses": []}))
    lines = config_lines(tmp_path, "--model", f"script:{script}")
    assert "  context window   8,192 tokens (the scripted server (llama.cpp))" in lines
    assert "  output budget    2,048 tokens (a quarter of the window)" in lines
    assert "  compacts past    6,553 tokens (0.8 of the window)" in lines
    assert "  one tool result  at most 4,915 bytes" in lines
    configured = config_lines(
        tmp_path, "--model", f"script:{script}", TREADLE_CONTEXT_WINDOW="4096"
    )
    assert "  context window   4,096 tokens (configuration (env TREADLE_CONTEXT_WINDOW))" in (
        configured
    )
    row = next(line for line in configured if line.startswith("context_window "))
    assert row.split()[1:] == ["4096", "env", "TREADLE_CONTEXT_WINDOW"]
    hosted = config_lines(tmp_path, "--model", "anthropic:claude-sonnet-4-5")
    assert "  context window   200,000 tokens (known model family claude)" in hosted
    assert "  output budget    8,192 tokens" in hosted


# The screen ------------------------------------------------------------------------------


def test_a_long_task_is_not_echoed_whole() -> None:
    out = io.StringIO()
    task = "fix it\n" + "x" * 2_000_000
    PlainTerminal(out).show(TurnStarted(task))
    [line] = out.getvalue().splitlines()[:1]
    assert len(out.getvalue()) < 3_000
    assert line.startswith("Task: fix it") and out.getvalue().rstrip().endswith(
        "(1,998,007 more characters)"
    )
    assert len(describe_event(TurnStarted(task))[0]) < 3_000
