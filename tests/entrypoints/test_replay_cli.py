"""``treadle replay`` on a session recorded by a real process, tools run for real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.processes import bare_env, run_treadle

pytestmark = pytest.mark.slow


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.txt").write_text("alpha\nbeta\n")
    plan = {"steps": [{"step": "Count the lines", "status": "in_progress"}]}
    script = {
        "responses": [
            {
                "text": ["Counting", " lines."],
                "tool_calls": [
                    {"id": "p1", "name": "update_plan", "arguments": plan},
                    {
                        "id": "c1",
                        "name": "bash",
                        "arguments": {"command": "sleep 0.2; wc -l < data.txt"},
                    },
                ],
            },
            {"failure": {"status": 503, "detail": "overloaded"}},
            {"text": "There are 2 lines.", "usage": {"input_tokens": 50, "output_tokens": 6}},
        ]
    }
    (work / "script.json").write_text(json.dumps(script))
    env = bare_env(tmp_path)
    result = run_treadle(
        "--model",
        "script:script.json",
        "--print",
        "count the lines",
        cwd=work,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (session,) = (tmp_path / "state" / "sessions").iterdir()
    return work, env, session


def test_a_recorded_session_replays_with_real_tools_and_no_divergence(
    recorded: tuple[Path, dict[str, str], Path],
) -> None:
    work, env, session = recorded
    result = run_treadle("replay", session.name, "--check", cwd=work, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("replay: 3 requests, no divergence")


def test_a_changed_workspace_is_the_divergence_reported(
    recorded: tuple[Path, dict[str, str], Path],
) -> None:
    work, env, session = recorded
    (work / "data.txt").write_text("alpha\nbeta\ngamma\n")
    result = run_treadle("replay", session.name, "--check", cwd=work, env=env, timeout=120)
    assert result.returncode == 1
    assert result.stdout.startswith("replay diverged at request 2 (the main agent): ")
    assert "message 4 (tool)" in result.stdout and '2", now' in result.stdout


def test_recorded_tools_replay_it_anywhere(
    recorded: tuple[Path, dict[str, str], Path], tmp_path: Path
) -> None:
    _, env, session = recorded
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    transcript = str(session / "transcript.jsonl")
    result = run_treadle(
        "replay", transcript, "--check", "--recorded-tools", cwd=elsewhere, env=env, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_compacted_session_of_cut_outputs_replays_with_real_tools_and_no_divergence(
    tmp_path: Path,
) -> None:
    # Saved outputs are named by paths in the replay's own folder; were its path of
    # another length, each result would take other room in the window, and the pruning,
    # the compaction and every output budget after them would differ from the recording.
    # The session's folder is deep: its path in a result is cut by the window's own
    # truncation, and a cut path is a saved output's path still (a pytest-xdist worker's
    # temporary folder is this deep).
    tmp_path = tmp_path / ("deep" * 12)
    work = tmp_path / "work"
    work.mkdir(parents=True)
    big = {"command": "python3 -c \"print('x ' * 40000)\""}
    calls = [
        {
            "tool_calls": [{"id": f"c{n}", "name": "bash", "arguments": big}],
            "usage": {"input_tokens": 1800 + 700 * n, "output_tokens": 10},
        }
        for n in range(6)
    ]
    done = {"text": "Done.", "usage": {"input_tokens": 3000, "output_tokens": 3}}
    (work / "script.json").write_text(json.dumps({"responses": [*calls, done]}))
    env = bare_env(tmp_path, TREADLE_CONTEXT_WINDOW="4300")  # the tools take ~2,000
    first = run_treadle("--model", "script:script.json", "--print", "go", cwd=work, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "compacted to" in first.stdout and "pruned" in first.stdout
    (session,) = (tmp_path / "state" / "sessions").iterdir()
    result = run_treadle("replay", session.name, "--check", cwd=work, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no divergence" in result.stdout


def test_a_cut_output_saved_to_a_file_replays_with_real_tools_and_no_divergence(
    tmp_path: Path,
) -> None:
    # The re-run command's full output is saved under a new name in the replay's own
    # folder: the path in the result is not the recorded one, and is no divergence.
    work = tmp_path / "work"
    work.mkdir()
    big = {"command": "python3 -c \"print('x ' * 40000)\""}
    script = {
        "responses": [
            {"tool_calls": [{"id": "c1", "name": "bash", "arguments": big}]},
            {"text": "It printed a lot.", "usage": {"input_tokens": 50, "output_tokens": 6}},
        ]
    }
    (work / "script.json").write_text(json.dumps(script))
    env = bare_env(tmp_path)
    first = run_treadle("--model", "script:script.json", "--print", "print", cwd=work, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    (session,) = (tmp_path / "state" / "sessions").iterdir()
    assert "The full output is in" in (session / "transcript.jsonl").read_text()
    result = run_treadle("replay", session.name, "--check", cwd=work, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("replay: 2 requests, no divergence")


def test_a_resumed_session_numbers_its_sub_agents_after_the_recorded_ones(tmp_path: Path) -> None:
    # Each process used to number its sub-agents from agent-1, so a resumed session held
    # two agent-1s; the replay (one process) names the second agent-2, and its calls
    # were not found in the recording.
    work = tmp_path / "work"
    work.mkdir()
    env = bare_env(tmp_path)
    for number, flags in ((1, ["--session-id", "s"]), (2, ["--resume", "s"])):
        script = {
            "responses": [
                {"tool_calls": [{"name": "agent", "arguments": {"task": f"sub {number}"}}]},
                {"text": "done"},
            ],
            "agents": {
                f"sub {number}": [
                    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo x"}}]},
                    {"text": f"report {number}"},
                ]
            },
        }
        (work / "script.json").write_text(json.dumps(script))
        result = run_treadle(
            "--model", "script:script.json", "--print", *flags, f"turn {number}", cwd=work, env=env
        )
        assert result.returncode == 0, result.stderr
    transcript = tmp_path / "state" / "sessions" / "s" / "transcript.jsonl"
    started = [
        record["name"]
        for record in map(json.loads, transcript.read_text().splitlines())
        if record["type"] == "sub_agent_started"
    ]
    assert started == ["agent-1", "agent-2"]
    result = run_treadle("replay", "s", "--check", "--recorded-tools", cwd=work, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
