"""The demo scenario on fakes, recorded through the JSONL transcript.

``tests/golden/demo.jsonl`` is what this produces; the golden test runs it again and
compares, event by event. After a deliberate change to the loop, bless the new
recording with::

    .venv/bin/python -m tests.golden.demo_scenario
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from treadle.adapters.demo import demo_model
from treadle.adapters.fakes import FakeClock, FakeProcess, FakeRunner, RecordingTerminal
from treadle.adapters.secrets.redact import Redactor
from treadle.adapters.transcript.jsonl_transcript import JsonlTranscript
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import Agent, TurnPorts, core_tools
from treadle.domain.values.outcome import TurnOutcome

GOLDEN = Path(__file__).with_name("demo.jsonl")
DEMO_TASK = "Show what treadle does, on this folder"

DEMO_COMMANDS = {
    "ls -la | head -n 15": FakeProcess(
        "total 24\n"
        "drwxr-xr-x  6 dev dev 4096 Jan  1 12:00 .\n"
        "-rw-r--r--  1 dev dev  812 Jan  1 12:00 Makefile\n"
        "-rw-r--r--  1 dev dev 1940 Jan  1 12:00 README.md\n"
        "drwxr-xr-x  3 dev dev 4096 Jan  1 12:00 domain\n",
        duration=0.05,
    ),
    "find . -name '*.py' -not -path './.venv/*' -not -path './build/*' | wc -l": FakeProcess(
        "42\n", duration=0.12
    ),
    "du -a . 2>/dev/null | sort -rn | head -n 5": FakeProcess(
        "912\t.\n404\t./domain\n228\t./adapters\n96\t./tests\n40\t./README.md\n", duration=0.3
    ),
    "sleep 30": FakeProcess("", duration=30.0),
}


async def record_demo(path: Path) -> tuple[TurnOutcome, RecordingTerminal]:
    """Run the demo turn on fakes, recording it to ``path`` (a new file)."""
    clock = FakeClock()
    terminal = RecordingTerminal()
    transcript = JsonlTranscript(path, redact=Redactor.from_environ({}))
    ports = TurnPorts(
        demo_model(clock), clock, FakeRunner(clock, DEMO_COMMANDS), terminal, transcript
    )
    agent = Agent(ports, TurnSettings(approval="auto"), core_tools())
    outcome = await agent.run_turn(DEMO_TASK)
    transcript.close()
    return outcome, terminal


def records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


if __name__ == "__main__":  # pragma: no cover
    GOLDEN.unlink(missing_ok=True)
    outcome, _ = asyncio.run(record_demo(GOLDEN))
    print(f"{GOLDEN}: {len(records(GOLDEN))} events, {outcome.screen_line}")
