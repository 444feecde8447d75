"""What the tests of ``treadle batch`` share: a model server in a thread, scripts for
long turns, TASKS files, a place for a test's turns, a batch run on a real engine, and
finding the processes a batch started."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.adapters.http.server import Reply, ScriptedServer
from tests.processes import is_running, until
from treadle.adapters.batch.results_file import ResultsFile
from treadle.adapters.fakes.batch import RecordingBatchScreen
from treadle.adapters.system_clock import SystemClock
from treadle.domain.loop.batch import BatchPorts, BatchRun
from treadle.domain.rules.batch import start_batch
from treadle.domain.values.batch import TurnOrder
from treadle.ports.batch import TurnEngine

STREAMS = Path(__file__).resolve().parent / "fixtures" / "streams"
ANSWER = STREAMS / "openai-chat" / "text_with_usage.sse"
ANSWER_TOKENS = {"input": 14, "output": 47, "cache_read": 0, "cache_write": 0, "reasoning": 0}
"""What a turn that got ANSWER counted, by kind."""


@contextmanager
def model_server(replies: int, script: Sequence[Reply] = ()) -> Iterator[str]:
    """The test HTTP model server on 127.0.0.1, in a thread of its own (the turns are
    other processes), answering ``replies`` requests with a streamed answer (or playing
    ``script``, when given); yields its base URL for ``--base-url``."""
    ready = threading.Event()
    stop: dict[str, asyncio.AbstractEventLoop | asyncio.Event] = {}
    found: dict[str, str] = {}

    async def serve() -> None:
        body = ANSWER.read_bytes()
        async with ScriptedServer.running(script or [Reply.sse(body)] * replies) as server:
            stop["event"] = asyncio.Event()
            stop["loop"] = asyncio.get_running_loop()
            found["url"] = server.base_url + "/v1"
            ready.set()
            await stop["event"].wait()  # type: ignore[union-attr]

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10), "the model server did not start"
    try:
        yield found["url"]
    finally:
        loop = stop["loop"]
        assert isinstance(loop, asyncio.AbstractEventLoop)
        loop.call_soon_threadsafe(stop["event"].set)  # type: ignore[union-attr]
        thread.join(10)


def long_turn_script(folder: Path, name: str = "long.json") -> Path:
    """A scripted model whose turn runs a command for 60 s, after starting a grandchild
    that leaves the process group (``setsid``) and writing its pid beside the script."""
    command = f"setsid sleep 300 & echo $! >> {folder / 'setsid.pids'}; sleep 60"
    path = folder / name
    path.write_text(
        json.dumps(
            {
                "responses": [
                    {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
                    {"text": "done"},
                ]
            }
        )
    )
    return path


def quick_turn_script(folder: Path, seconds: float = 0.0, name: str = "quick.json") -> Path:
    """A scripted model that answers after ``seconds``, with usage."""
    path = folder / name
    response = {
        "text": "done",
        "chunk_delay": seconds,
        "usage": {"input_tokens": 7, "output_tokens": 2},
    }
    path.write_text(json.dumps({"responses": [response]}))
    return path


def write_tasks(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def carrying(name: str, value: str) -> set[int]:
    """Live processes whose environment has ``name=value``: every turn and all it
    started inherit the batch's TREADLE_STATE_DIR."""
    tag = f"\0{name}={value}\0".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if tag in b"\0" + environ.read() + b"\0" and is_running(int(entry)):
                    found.add(int(entry))
        except OSError:
            continue
    return found


def turn_process(state: Path, session: str) -> int | None:
    """The treadle process of the turn of ``session``, while it runs."""
    for pid in carrying("TREADLE_STATE_DIR", str(state)):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if session.encode() in command and b"treadle" in command:
            return pid
    return None


def nothing_left(state: Path, seconds: float = 10.0) -> bool:
    """Whether, within ``seconds``, no process of the batch with this state folder runs."""
    return until(lambda: not carrying("TREADLE_STATE_DIR", str(state)), seconds)


def setsid_pids(folder: Path) -> list[int]:
    path = folder / "setsid.pids"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


class Place:
    """A state folder and a workspace for one test's turns."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self.work = root / "work"
        self.work.mkdir()

    def order(self, name: str, *, model: str, base_url: str = "", task: str = "go") -> TurnOrder:
        session = f"batch-{name}"
        return TurnOrder(
            name,
            task,
            session,
            str(self.work),
            model=model,
            base_url=base_url,
            environment=(
                ("TREADLE_STATE_DIR", str(self.state)),
                ("TREADLE_CONFIG_DIR", str(self.root / "config")),
            ),
            transcript=str(self.state / "sessions" / session / "transcript.jsonl"),
        )


async def run_batch(engine: TurnEngine, orders, out: Path, *, workers=2, during=None):
    screen = RecordingBatchScreen()
    results = ResultsFile(out)
    run = BatchRun(
        start_batch(orders, workers=workers), BatchPorts(engine, results, screen, SystemClock())
    )
    try:
        job = asyncio.ensure_future(run.run())
        if during is not None:
            await during(run)
        return await job
    finally:
        results.close()


def transcript_kept(row: dict[str, object]) -> bool:
    """Whether the turn's transcript is where its line of RESULTS says."""
    return Path(str(row["transcript"])).is_file()


def last_event(row: dict[str, object]) -> tuple[str, str]:
    """The type and outcome of the last event in the turn's transcript."""
    last = json.loads(Path(str(row["transcript"])).read_text().splitlines()[-1])
    return last["type"], last.get("outcome", {}).get("kind", "")


def by_id(path: Path) -> dict[str, dict[str, object]]:
    return {str(row["id"]): row for row in rows(path)}


async def wait_for(predicate, seconds: float = 30.0) -> None:
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("it never happened")
