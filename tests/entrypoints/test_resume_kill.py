"""A real ``treadle`` process killed with SIGKILL at points of a turn, then resumed.

Every transcript still reads, the rebuilt conversation is sendable, and the resumed
turn's first request carries exactly the conversation the transcript holds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from treadle.adapters.transcript.jsonl_transcript import read_transcript
from treadle.domain.rules.history import History, is_sendable
from treadle.domain.rules.resume import rebuild_history
from treadle.domain.values.events import MessageAdded, RequestSent, TurnEvent, TurnStarted

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SLOW_WORDS = [f"word{i} " for i in range(40)]


class Place:
    """A workspace, a state folder, and a way to run treadle there."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.state = root / "state"
        self.work.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "PYTHONPATH": str(REPO),
            "TREADLE_STATE_DIR": str(self.state),
            "TREADLE_CONFIG_DIR": str(root / "config"),
        }

    def script(self, name: str, responses: list[dict[str, Any]]) -> str:
        path = self.work / name
        path.write_text(json.dumps({"responses": responses}))
        return f"script:{path}"

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "treadle", *args],
            cwd=self.work,
            env=self.env | (env or {}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        process = self.start(*args, env=env)
        out, err = process.communicate(timeout=120)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def session(self) -> Path:
        (folder,) = (self.state / "sessions").iterdir()
        return folder

    def lines(self) -> list[str]:
        sessions = self.state / "sessions"
        if not sessions.is_dir():
            return []
        for folder in sessions.iterdir():
            path = folder / "transcript.jsonl"
            if path.is_file():
                return path.read_text(errors="replace").splitlines()
        return []


def kill_when(
    process: subprocess.Popen[str], place: Place, ready: Callable[[list[str]], bool]
) -> None:
    deadline = time.monotonic() + 60
    while not ready(place.lines()):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the moment to kill never came"
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL


def count(kind: str, at_least: int) -> Callable[[list[str]], bool]:
    return lambda lines: sum(f'"type": "{kind}"' in line for line in lines) >= at_least


def main_messages_before(events: list[TurnEvent], index: int) -> list[Any]:
    return [e.message for e in events[:index] if isinstance(e, MessageAdded) and not e.agent]


def resume_and_check(place: Place) -> list[TurnEvent]:
    session = place.session()
    transcript = session / "transcript.jsonl"
    before = list(read_transcript(transcript))  # reads, torn last line or not
    assert is_sendable(rebuild_history(before).messages)

    model = place.script("after.json", [{"text": "Resumed and done."}])
    result = place.run("--resume", session.name, "--model", model, "--print", "go on")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "Turn finished"

    events = list(read_transcript(transcript))
    resumed = max(i for i, e in enumerate(events) if isinstance(e, TurnStarted) and not e.agent)
    assert events[resumed] == TurnStarted("go on")
    first = next(i for i in range(resumed, len(events)) if isinstance(events[i], RequestSent))
    request = events[first]
    assert isinstance(request, RequestSent)
    conversation = main_messages_before(events, first)
    assert is_sendable(conversation)
    assert request.message_count == len(conversation)
    assert request.digest == History(conversation).digest  # exactly what was sent
    meta = json.loads((session / "meta.json").read_text())
    assert (meta["outcome"], meta["turns"]) == ("finished", 2)
    return events


@pytest.mark.parametrize("torn", [False, True])
def test_killed_during_a_stream(tmp_path: Path, torn: bool) -> None:
    place = Place(tmp_path)
    model = place.script("slow.json", [{"text": SLOW_WORDS, "chunk_delay": 0.1}])
    process = place.start("--model", model, "--print", "write slowly")
    kill_when(process, place, count("answer_delta", 3))
    if torn:  # as if the kill came in the middle of writing a line
        with (place.session() / "transcript.jsonl").open("a") as transcript:
            transcript.write('{"type": "answer_delta", "text": "wor')
    events = resume_and_check(place)
    kept = [
        e.message for e in events if isinstance(e, MessageAdded) and e.message.role == "assistant"
    ]
    assert kept[0].interrupted
    assert kept[0].text.startswith("word0 word1 word2 ")


def test_killed_during_a_tool(tmp_path: Path) -> None:
    place = Place(tmp_path)
    call = {"id": "slow", "name": "bash", "arguments": {"command": "sleep 30"}}
    model = place.script("tool.json", [{"text": "Waiting.", "tool_calls": [call]}])
    process = place.start("--model", model, "--print", "wait for it")
    kill_when(process, place, count("tool_started", 1))
    events = resume_and_check(place)
    results = [
        e.message for e in events if isinstance(e, MessageAdded) and e.message.role == "tool"
    ]
    assert [(m.tool_call_id, m.interrupted) for m in results] == [("slow", True)]


@pytest.mark.parametrize("after", [2, 6, 11, 17])
def test_killed_between_events(tmp_path: Path, after: int) -> None:
    place = Place(tmp_path)
    plan = {"steps": [{"step": "one", "status": "in_progress"}]}
    responses = [
        {
            "text": ["Plan", " first."],
            "chunk_delay": 0.05,
            "tool_calls": [{"id": f"p{i}", "name": "update_plan", "arguments": plan}],
        }
        for i in range(6)
    ] + [{"text": ["All", " done."], "chunk_delay": 0.05}]
    model = place.script("steps.json", responses)
    process = place.start("--model", model, "--print", "step by step")
    kill_when(process, place, lambda lines: len(lines) >= after)
    resume_and_check(place)


def test_a_session_killed_inside_a_sub_agent_replays_to_the_cut(tmp_path: Path) -> None:
    # The kill takes the results of the whole batch: the bash call that finished before
    # the sub-agent started ended with the interrupted result, and the replay stopped at
    # it, so the sub-agent's recorded requests were never replayed (a divergence).
    place = Place(tmp_path)
    script = {
        "responses": [
            {
                "tool_calls": [
                    {"name": "bash", "arguments": {"command": "echo before"}},
                    {"name": "agent", "arguments": {"task": "the sub-task"}},
                ]
            },
            {"text": "done"},
        ],
        "agents": {
            "the sub-task": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one"}}]},
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60"}}]},
                {"text": "report"},
            ]
        },
    }
    (place.work / "script.json").write_text(json.dumps(script))
    process = place.start("--model", "script:script.json", "--print", "a task")
    kill_when(
        process,
        place,
        lambda lines: "sleep 60" in "".join(line for line in lines if '"tool_started"' in line),
    )
    resume_and_check(place)
    transcript = str(place.session() / "transcript.jsonl")
    for flags in ([], ["--recorded-tools"]):
        result = place.run("replay", transcript, "--check", *flags)
        assert result.returncode == 0, result.stdout + result.stderr
