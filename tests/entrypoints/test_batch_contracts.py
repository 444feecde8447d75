"""``treadle batch`` with the headless contract: each task's limits and output schema
(its line's own over the batch's flags), and RESULTS carrying its value and its cost."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from tests.batch_support import rows, write_tasks
from tests.processes import run_treadle, treadle_env


def script(folder: Path, name: str, *responses: Mapping[str, object]) -> str:
    path = folder / name
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return f"script:{path}"


def test_each_task_keeps_its_own_limits_and_results_carry_value_and_cost(tmp_path: Path) -> None:
    usage = {"input_tokens": 1000, "output_tokens": 100}
    answer = script(tmp_path, "answer.json", {"text": '{"count": 3}', "usage": usage})
    step = {"tool_calls": [{"name": "bash", "arguments": {"command": "true"}}], "usage": usage}
    steps = script(tmp_path, "steps.json", step, step, step, {"text": "done"})
    schema = tmp_path / "count.schema.json"
    schema.write_text('{"type": "object", "required": ["count"]}', encoding="utf-8")
    config = tmp_path / "config"
    config.mkdir()
    prices = "".join(
        f'[prices."{model}"]\ninput = 10.0\noutput = 10.0\n' for model in (answer, steps)
    )
    (config / "config.toml").write_text(prices, encoding="utf-8")
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "shaped", "task": "count", "model": answer, "output_schema": str(schema)},
            {"id": "long", "task": "work", "model": steps},
            {"id": "longer", "task": "work", "model": steps, "max_requests": 3},
        ],
    )
    done = run_treadle(
        "batch", str(tasks), "--max-requests", "1", "--workers", "1",
        cwd=tmp_path, env=treadle_env(tmp_path), timeout=120,
    )  # fmt: skip
    assert done.returncode != 2, done.stderr
    results = {row["id"]: row for row in rows(tmp_path / "tasks.results.jsonl")}
    shaped, long, longer = results["shaped"], results["long"], results["longer"]
    assert (shaped["outcome"], shaped["value"], shaped["cost"]) == ("finished", {"count": 3}, 0.011)
    assert long["outcome"] == "blocked"
    assert long["detail"] == "Turn blocked: spending limit reached: 1 of 1 requests"
    assert (long["requests"], long["cost"], long["value"]) == (1, 0.011, None)
    assert (longer["outcome"], longer["requests"]) == ("blocked", 3)
