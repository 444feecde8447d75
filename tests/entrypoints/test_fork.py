"""``treadle fork`` (issue 27): a session from another's first turns, the other untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.processes import run_treadle, treadle_env
from treadle.adapters.transcript.jsonl_transcript import read_transcript
from treadle.domain.rules.fork import ForkPoint, fork_point
from treadle.domain.rules.resume import rebuild_history

# The rule, with plain values ------------------------------------------------------------

THREE_TURNS = [
    ("turn_started", ""),
    ("message_added", ""),
    ("turn_started", "agent-1"),  # a sub-agent's turn is its caller's
    ("turn_ended", "agent-1"),
    ("turn_ended", ""),
    ("turn_started", ""),
    ("turn_ended", ""),
    ("notice", ""),  # said as the third turn's session started
    ("turn_started", ""),
    ("turn_ended", ""),
]


def test_a_fork_keeps_the_lines_up_to_the_next_main_turn() -> None:
    assert fork_point(THREE_TURNS, 1) == ForkPoint(5, 1)
    assert fork_point(THREE_TURNS, 2) == ForkPoint(8, 2)
    assert fork_point(THREE_TURNS, 3) == ForkPoint(10, 3)
    assert fork_point(THREE_TURNS, None) == ForkPoint(10, 3)


def test_a_turn_the_session_does_not_have_cannot_be_kept() -> None:
    assert fork_point(THREE_TURNS, 4) == "it has 3 turns: --at takes 1 to 3"
    assert fork_point(THREE_TURNS, 0) == "it has 3 turns: --at takes 1 to 3"
    assert fork_point([("notice", "")], None) == "it has no turn to fork"


# The command, end to end --------------------------------------------------------------


def _script(folder: Path, name: str, *responses: dict[str, object]) -> str:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return f"script:{path}"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


@pytest.mark.slow
def test_a_fork_at_turn_one_resumes_with_one_turn_and_leaves_the_original_as_it_was(
    tmp_path: Path,
) -> None:
    env = treadle_env(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    first = _script(
        tmp_path,
        "one",
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
        {"text": "One."},
    )
    turns = [
        ("--session-id", "orig", "--model", first, "first"),
        ("--resume", "orig", "--model", _script(tmp_path, "two", {"text": "Two."}), "second"),
        ("--resume", "orig", "--model", _script(tmp_path, "three", {"text": "Three."}), "third"),
    ]
    for flags in turns:
        done = run_treadle(*flags, "--print", cwd=work, env=env)
        assert done.returncode == 0, done.stderr
    original = tmp_path / "state" / "sessions" / "orig"
    before = _snapshot(original)

    forked = run_treadle("fork", "orig", "--at", "1", cwd=work, env=env)
    assert forked.returncode == 0, forked.stderr
    line = forked.stdout.strip()
    assert (
        line.startswith("forked ")
        and " from orig (1 turn) — resume with: treadle --resume " in line
    )
    fork_id = line.split()[1]
    assert _snapshot(original) == before  # byte for byte

    listed = run_treadle("sessions", cwd=work, env=env).stdout
    (row,) = [row for row in listed.splitlines() if row.startswith(fork_id)]
    assert "orig @1" in row and "FORKED FROM" in listed.splitlines()[0]

    check = run_treadle("replay", fork_id, "--check", cwd=work, env=env)
    assert check.returncode == 0, check.stdout + check.stderr

    fourth = _script(tmp_path, "four", {"text": "Four."})
    resumed = run_treadle(
        "--resume", fork_id, "--model", fourth, "--print", "fourth", cwd=work, env=env
    )
    assert resumed.returncode == 0, resumed.stderr
    events = list(read_transcript(tmp_path / "state" / "sessions" / fork_id / "transcript.jsonl"))
    said = [m.text for m in rebuild_history(events).messages if m.role == "user"]
    assert said == ["first", "fourth"]  # one turn of history, then the new one
    assert _snapshot(original) == before


@pytest.mark.slow
def test_a_fork_beyond_the_last_turn_or_of_no_session_is_one_line(tmp_path: Path) -> None:
    env = treadle_env(tmp_path)
    done = run_treadle(
        "--session-id", "solo", "--model", _script(tmp_path, "s", {"text": "Hi."}), "--print", "hi",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    beyond = run_treadle("fork", "solo", "--at", "2", cwd=tmp_path, env=env)
    assert (beyond.returncode, beyond.stderr) == (
        2,
        "treadle: cannot fork session solo: it has 1 turn: --at takes 1\n",
    )
    missing = run_treadle("fork", "nothing", cwd=tmp_path, env=env)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "no session 'nothing'" in missing.stderr
    assert sorted(p.name for p in (tmp_path / "state" / "sessions").iterdir()) == ["solo"]


# /fork in a session ---------------------------------------------------------------------


async def test_slash_fork_copies_the_session_so_far_into_a_new_one(tmp_path: Path) -> None:
    from dependency_injector import providers

    from tests.entrypoints.test_interactive_loop import TypedTasks
    from treadle.adapters.fakes import ScriptedModel, ScriptedResponse
    from treadle.adapters.transcript.sessions import read_meta
    from treadle.entrypoints.config import AppConfig
    from treadle.entrypoints.container import Container
    from treadle.entrypoints.interactive import fork_commands, run_interactive

    session = tmp_path / "sessions" / "s1"
    prompt = TypedTasks("/fork", "first task", "/fork")
    container = Container()
    container.app.override(providers.Object(AppConfig(model="demo", workspace=str(tmp_path))))
    container.session_dir.override(providers.Object(str(session)))
    container.model.override(providers.Object(ScriptedModel([ScriptedResponse.saying("Hi.")])))
    container.terminal.override(providers.Object(prompt))
    agent = container.agent()
    assert await run_interactive(agent, prompt, commands=fork_commands(str(session), prompt)) == 0
    container.shutdown_resources()
    (too_soon, too_soon_problem), (said, problem) = prompt.said
    assert too_soon_problem and too_soon == ["cannot fork session s1: it has no turn to fork"]
    assert not problem and said[0].startswith("forked ") and " from s1 (1 turn)" in said[0]
    fork = tmp_path / "sessions" / said[0].split()[1]
    original = (session / "transcript.jsonl").read_bytes()
    assert (fork / "transcript.jsonl").read_bytes() == original
    meta = read_meta(fork)
    assert (meta.forked_from, meta.forked_at, meta.turns) == ("s1", 1, 1)


@pytest.mark.slow
def test_a_fork_of_a_damaged_transcript_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    # hostile2: a line changed by hand in the middle was an "internal error" naming a
    # folder of the fork's that was then deleted
    env = treadle_env(tmp_path)
    done = run_treadle(
        "--session-id", "hurt", "--model", _script(tmp_path, "s", {"text": "Hi."}), "--print", "hi",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    transcript = tmp_path / "state" / "sessions" / "hurt" / "transcript.jsonl"
    lines = transcript.read_bytes().splitlines(keepends=True)
    hurt = b'{"type": "turn_started", garbage\n'
    transcript.write_bytes(b"".join([*lines[:2], hurt, *lines[2:]]))
    forked = run_treadle("fork", "hurt", cwd=tmp_path, env=env)
    assert forked.returncode == 2, forked.stderr
    assert forked.stderr.startswith("treadle: cannot fork session hurt: its transcript ")
    assert forked.stderr.count("\n") == 1 and "internal error" not in forked.stderr
    assert sorted(p.name for p in (tmp_path / "state" / "sessions").iterdir()) == ["hurt"]
