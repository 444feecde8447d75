"""A state folder or session records that cannot be used: one clear line, exit 2, no
traceback; a folder that fills up mid-turn costs the rest of the record, not the turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import ROOT, run_treadle, treadle_env, until, write_script
from treadle.adapters.transcript.jsonl_transcript import read_transcript
from treadle.adapters.transcript.sessions import SessionStore
from treadle.domain.values.events import TurnStarted

pytestmark = pytest.mark.slow

# The child may write this many bytes to any one file: the kernel then fails the write
# (EFBIG), as a full disk would (ENOSPC).
WITH_A_FILE_SIZE_LIMIT = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv.pop(1))
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.argv[0] = "treadle"
runpy.run_module("treadle", run_name="__main__")
"""


def one_clear_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr + result.stdout
    (line,) = result.stderr.splitlines()
    assert line.startswith("treadle: ")
    assert all(word in line for word in words), line


def with_size_limit(limit: int, *args: str, cwd: Path, env: dict[str, str]):
    return subprocess.run(
        [sys.executable, "-c", WITH_A_FILE_SIZE_LIMIT, str(limit), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_state_folder_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("not a folder")

    result = run_treadle(
        "--model", "demo", "--print", "hi", cwd=tmp_path, env=treadle_env(tmp_path)
    )

    one_clear_line(result, "cannot keep the session in", "Not a directory")


def test_a_state_folder_that_takes_no_bytes_is_one_line(tmp_path: Path) -> None:
    result = with_size_limit(
        0, "--model", "demo", "--print", "hi", cwd=tmp_path, env=treadle_env(tmp_path)
    )

    one_clear_line(result, "cannot keep the session in", "File too large")


def test_a_state_folder_that_fills_up_mid_turn_still_ends_the_turn(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 3000"}}]},
        {"text": "Counted."},
    )

    result = with_size_limit(
        4000,
        *("--model", f"script:{script}", "--print", "count"),
        cwd=tmp_path,
        env=treadle_env(tmp_path),
    )

    assert "Traceback" not in result.stderr + result.stdout
    assert result.stdout.splitlines()[-1] == "Turn finished"
    assert result.returncode == 0
    assert "can no longer be recorded" in result.stdout
    (session,) = (tmp_path / "state" / "sessions").iterdir()
    recorded = list(read_transcript(session / "transcript.jsonl"))  # what was kept reads
    assert recorded[0] == TurnStarted("count")


# Records of the wrong shape ------------------------------------------------------------

FIRST = '{"type": "turn_started", "task": "x", "agent": ""}'
BAD_TRANSCRIPTS = {
    "a message that is a number": (
        f'{FIRST}\n{{"type": "message_added", "message": 5, "agent": ""}}\n'
    ),
    "tool calls an object": (
        f"{FIRST}\n"
        '{"type": "message_added", "message": {"role": "assistant", "text": "",'
        ' "tool_calls": {"id": "c1"}}, "agent": ""}\n'
    ),
    "a task that is a list": '{"type": "turn_started", "task": ["x"], "agent": ""}\n',
    "a record that is a list": f"{FIRST}\n[1, 2]\n",
    "a number too long to read": (
        f'{FIRST}\n{{"type": "request_sent", "number": {"9" * 5000}, "attempt": 1,'
        ' "max_tokens": 1, "message_count": 1, "digest": "", "agent": ""}\n'
    ),
    "stubs that do not match their places": (
        f'{FIRST}\n{{"type": "context_pruned", "tokens_before": 9, "tokens_after": 5,'
        ' "window": 100, "positions": [1, 2], "results": [], "agent": ""}\n'
    ),
    "a number too large for a float": (
        f'{FIRST}\n{{"type": "turn_ended", "outcome": {{"kind": "paused"}},'
        f' "usage": {{}}, "requests": 0, "elapsed": 1{"0" * 400}, "agent": ""}}\n'
    ),
}


def a_session(tmp_path: Path, transcript: bytes) -> tuple[Path, dict[str, str]]:
    env = treadle_env(tmp_path)
    store = SessionStore(tmp_path / "state" / "sessions")
    store.create("s1", workspace=str(tmp_path), model="demo")
    store.transcript_path("s1").write_bytes(transcript)
    return store.transcript_path("s1"), env


@pytest.mark.parametrize("content", list(BAD_TRANSCRIPTS.values()), ids=list(BAD_TRANSCRIPTS))
def test_a_transcript_with_a_record_of_the_wrong_shape_is_refused_with_its_line(
    tmp_path: Path, content: str
) -> None:
    path, env = a_session(tmp_path, content.encode())
    line = len(content.splitlines())

    resumed = run_treadle("--resume", "s1", "--print", "go on", cwd=tmp_path, env=env)
    replayed = run_treadle("replay", str(path), cwd=tmp_path, env=env)

    one_clear_line(resumed, f"transcript.jsonl:{line}:")
    one_clear_line(replayed, f"transcript.jsonl:{line}:")


@pytest.mark.parametrize("window", [0, 1, -5])
def test_a_window_a_lying_refusal_taught_an_older_version_is_no_damage(
    tmp_path: Path, window: int
) -> None:
    # Issue 20: treadle itself recorded "maximum context length is 0 tokens" as the
    # window; resuming such a session goes on, and the window is not kept to.
    learned = (
        f'{{"type": "context_window_known", "window": {window}, '
        '"origin": "the server\'s refusal", "agent": ""}'
    )
    ended = (
        '{"type": "turn_ended", "outcome": {"kind": "failed", "reason": "ContextExceeded", '
        '"detail": "x"}, "usage": {}, "requests": 1, "elapsed": 1.0, "agent": ""}'
    )
    _, env = a_session(tmp_path, f"{FIRST}\n{learned}\n{ended}\n".encode())
    quick = write_script(tmp_path, {"text": "Gone on."})  # not the demo's tour, taking its time

    listed = run_treadle("sessions", cwd=tmp_path, env=env)
    resumed = run_treadle(
        "--resume", "s1", "--model", f"script:{quick}", "--print", "go on", cwd=tmp_path, env=env
    )

    assert "damaged" not in listed.stdout.splitlines()[1].split()
    assert "Traceback" not in resumed.stderr + resumed.stdout
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[-1] == "Turn finished"


def test_a_transcript_of_nul_bytes_is_refused_not_resumed_empty(tmp_path: Path) -> None:
    _, env = a_session(tmp_path, b"\0" * 4096)

    resumed = run_treadle("--resume", "s1", "--print", "go on", cwd=tmp_path, env=env)
    listed = run_treadle("sessions", cwd=tmp_path, env=env)

    one_clear_line(resumed, "transcript.jsonl:1:")
    assert "damaged" in listed.stdout.splitlines()[1].split()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_transcript_that_is_no_file_is_refused_and_listed_damaged_never_waited_on(
    tmp_path: Path, kind: str
) -> None:
    path, env = a_session(tmp_path, b"")
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)  # opened, it would wait for a writer for ever
    else:
        path.mkdir()

    resumed = run_treadle("--resume", "s1", "--print", "go on", cwd=tmp_path, env=env)
    listed = run_treadle("sessions", cwd=tmp_path, env=env)

    one_clear_line(resumed, "not a regular file")
    assert "damaged" in listed.stdout.splitlines()[1].split()


@pytest.mark.parametrize("content", list(BAD_TRANSCRIPTS.values()), ids=list(BAD_TRANSCRIPTS))
def test_one_damaged_transcript_never_stops_the_listing_of_the_others(
    tmp_path: Path, content: str
) -> None:
    _, env = a_session(tmp_path, content.encode())
    healthy = SessionStore(tmp_path / "state" / "sessions")
    healthy.create("s2", workspace=str(tmp_path), model="demo")

    listed = run_treadle("sessions", cwd=tmp_path, env=env)

    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    assert {row.split()[0] for row in listed.stdout.splitlines()[1:]} == {"s1", "s2"}


@pytest.mark.parametrize("pid", ['"abc"', str(2**70), "true"])
def test_a_record_with_a_pid_that_is_no_pid_is_refused_and_listed_as_damaged(
    tmp_path: Path, pid: str
) -> None:
    path, env = a_session(tmp_path, (FIRST + "\n").encode())
    store = SessionStore(tmp_path / "state" / "sessions")
    store.create("s2", workspace=str(tmp_path), model="demo")
    meta = path.parent / "meta.json"
    meta.write_text(
        meta.read_text().replace(f'"pid": {json.loads(meta.read_text())["pid"]}', f'"pid": {pid}')
    )
    line = next(n for n, row in enumerate(meta.read_text().splitlines(), 1) if '"pid"' in row)

    resumed = run_treadle("--resume", "s1", "--print", "go on", cwd=tmp_path, env=env)
    listed = run_treadle("sessions", cwd=tmp_path, env=env)

    one_clear_line(resumed, f"meta.json:{line}: pid: must be a whole number")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    rows = {row.split()[0]: row.split()[1:] for row in listed.stdout.splitlines()[1:]}
    assert "damaged" in rows["s1"]
    assert "s2" in rows


# Two at once ---------------------------------------------------------------------------

WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.01; done; echo went"


def test_two_resumes_of_one_session_at_once_run_exactly_one(tmp_path: Path) -> None:
    env = treadle_env(tmp_path)
    script = write_script(
        tmp_path,
        {"tool_calls": [{"name": "bash", "arguments": {"command": WAIT_FOR_GO}}]},
        {"text": "Done."},
    )
    (tmp_path / "go").touch()
    first = run_treadle("--model", f"script:{script}", "--print", "start", cwd=tmp_path, env=env)
    assert first.returncode == 0, first
    (session,) = (tmp_path / "state" / "sessions").iterdir()
    (tmp_path / "go").unlink()

    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "treadle", "--resume", session.name, "--print", "again"],
            cwd=tmp_path,
            env={**env, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        assert until(lambda: any(run.poll() is not None for run in runs), 30)
        (tmp_path / "go").touch()  # the one that runs may now finish
        ended = [(run.wait(30), *run.communicate()) for run in runs]
    finally:
        for run in runs:
            run.kill()

    codes = sorted(code for code, _, _ in ended)
    assert codes == [0, 2], ended
    refused = next(err for code, _, err in ended if code == 2)
    assert refused.strip() == f"treadle: session {session.name} is open in another treadle"


def test_a_resume_whose_repairs_cannot_be_recorded_is_one_line(tmp_path: Path) -> None:
    call = {"id": "c1", "name": "bash", "arguments": "{}"}
    killed = "\n".join(  # killed mid-tool: the call has no result yet
        [
            FIRST,
            json.dumps(
                {"type": "message_added", "message": {"role": "user", "text": "x"}, "agent": ""}
            ),
            json.dumps(
                {
                    "type": "message_added",
                    "message": {"role": "assistant", "text": "", "tool_calls": [call]},
                    "agent": "",
                }
            ),
        ]
    )
    path, env = a_session(tmp_path, (killed + "\n").encode())

    resumed = with_size_limit(
        path.stat().st_size, "--resume", "s1", "--print", "go on", cwd=tmp_path, env=env
    )

    one_clear_line(resumed, "cannot continue the session in", "File too large")
