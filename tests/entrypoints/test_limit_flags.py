"""The spending limits from the command line: a turn blocked at the request that crosses
one (exit 3, its line), resumed with a higher limit; a cost limit needs known prices."""

from __future__ import annotations

import json
from pathlib import Path

from tests.processes import run_treadle, treadle_env, write_script

STEP = {
    "tool_calls": [{"name": "bash", "arguments": {"command": "echo step >> steps.txt"}}],
    "usage": {"input_tokens": 100, "output_tokens": 50},
}
DONE = {"text": "All done.", "usage": {"input_tokens": 100, "output_tokens": 10}}


def test_max_requests_blocks_the_turn_and_resume_with_a_higher_limit_goes_on(
    tmp_path: Path,
) -> None:
    script = write_script(tmp_path, STEP, STEP, STEP, DONE)
    env = treadle_env(tmp_path)
    first = run_treadle(
        "--model", f"script:{script}", "--session-id", "limited", "--max-requests", "2",
        "--print", "the task", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert first.returncode == 3, first.stderr
    assert "Turn blocked: spending limit reached: 2 of 2 requests" in first.stdout
    assert (tmp_path / "steps.txt").read_text() == "step\n"  # the second's call never ran
    write_script(tmp_path, STEP, DONE)
    resumed = run_treadle(
        "--resume", "limited", "--max-requests", "5", "--json", cwd=tmp_path, env=env
    )
    assert resumed.returncode == 0, resumed.stderr
    last = json.loads(resumed.stdout.splitlines()[-1])
    assert (last["type"], last["line"]) == ("turn_ended", "Turn finished")


def test_max_cost_counts_at_the_configured_prices_and_says_so_in_json(tmp_path: Path) -> None:
    script = write_script(tmp_path, STEP, STEP, STEP, DONE)
    config = tmp_path / "config"
    config.mkdir()
    # 150 tokens a request at $1,000 a million: 15 cents.
    (config / "config.toml").write_text(
        f'[prices."script:{script}"]\ninput = 1000.0\noutput = 1000.0\n', encoding="utf-8"
    )
    done = run_treadle(
        "--model", f"script:{script}", "--max-cost", "0.25", "--json", "the task",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    near = [r for r in records if r["type"] == "notice" and r["kind"] == "spending_limit_near"]
    assert len(near) == 0  # 15 cents is 60 %: the second request crosses it outright
    last = records[-1]
    assert last["line"] == "Turn blocked: spending limit reached: $0.30 of $0.25"
    assert last["exit_code"] == 3
    assert last["outcome"]["reason"] == "SpendingLimit"


def test_a_cost_limit_without_prices_is_refused_in_one_line(tmp_path: Path) -> None:
    script = write_script(tmp_path, DONE)
    done = run_treadle(
        "--model", f"script:{script}", "--max-cost", "1", "--print", "the task",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "max_cost: the prices of" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_duration_that_is_none_is_refused_in_one_line(tmp_path: Path) -> None:
    script = write_script(tmp_path, DONE)
    done = run_treadle(
        "--model", f"script:{script}", "--max-time", "soon", "--print", "the task",
        cwd=tmp_path, env=treadle_env(tmp_path),
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2,
        'treadle: flag --max-time: must be a duration such as 90s, 10m or 1h30m, not "soon"\n',
    )


def test_a_replay_of_a_limited_turn_ends_where_it_ended(tmp_path: Path) -> None:
    script = write_script(tmp_path, STEP, STEP, STEP, DONE)
    env = treadle_env(tmp_path)
    first = run_treadle(
        "--model", f"script:{script}", "--session-id", "limited", "--max-requests", "2",
        "--print", "the task", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert first.returncode == 3, first.stderr
    transcript = tmp_path / "state" / "sessions" / "limited" / "transcript.jsonl"
    replayed = run_treadle("replay", str(transcript), "--check", cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "no divergence" in replayed.stdout
