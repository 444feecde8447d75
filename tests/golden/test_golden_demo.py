"""The golden replay test: the demo scenario on fakes produces exactly the recorded transcript."""

from __future__ import annotations

import io
from pathlib import Path

from tests.golden.demo_scenario import GOLDEN, record_demo, records
from treadle.entrypoints.commands import run_subcommand


async def test_the_demo_on_fakes_produces_exactly_the_recorded_transcript(tmp_path: Path) -> None:
    outcome, _ = await record_demo(tmp_path / "demo.jsonl")
    assert outcome.screen_line == "Turn finished"
    produced, golden = records(tmp_path / "demo.jsonl"), records(GOLDEN)
    for index, (now, then) in enumerate(zip(produced, golden, strict=False)):
        assert now == then, (
            f"event {index + 1} differs (bless with python -m tests.golden.demo_scenario)"
        )
    assert len(produced) == len(golden)


def test_the_golden_demo_replays_with_check_and_no_divergence() -> None:
    out = io.StringIO()
    code = run_subcommand(["replay", str(GOLDEN), "--check", "--recorded-tools"], out)
    assert code == 0, out.getvalue()
    assert out.getvalue().startswith("replay: 9 requests, no divergence")
