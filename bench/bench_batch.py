"""``treadle batch``: 20 turns of 0.5 s on 2 workers, per engine, against the ideal 5 s.

A "turn of 0.5 s" is a whole ``treadle --json`` process that takes 0.5 s alone: the
scripted model's pause is set in this run so that one turn, measured alone, takes
that long (its start-up included). The ideal is then 20 such turns / 2 workers. The
batches are the real command, start to exit (Ray's start and stop included for
``--engine ray``); the figures are medians. Two turns at once started by hand are the
second baseline: on a two-core machine they contend for the CPU, which no engine avoids.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

TURNS = 20
WORKERS = 2
TURN_SECONDS = 0.5
ROUNDS = 3
TARGETS = {"local": 1.15, "ray": 1.6}
"""Issue 21: the batch's wall time at most this many times the ideal (Ray's start and
stop included)."""


def _timed(command: Sequence[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-800:]}")
    return elapsed


def _script(folder: Path, pause: float) -> Path:
    path = folder / f"turn-{pause:.3f}.json"
    path.write_text(json.dumps({"responses": [{"text": "done", "chunk_delay": pause}]}))
    return path


def _one_turn(folder: Path, env: dict[str, str], pause: float) -> float:
    command = [sys.executable, "-m", "treadle", "--json"]
    command += ["--model", f"script:{_script(folder, pause)}", "go"]
    return statistics.median(_timed(command, env, folder) for _ in range(ROUNDS))


def _pair(folder: Path, env: dict[str, str], pause: float) -> float:
    """Two turns started together by hand, as a batch on two workers runs them: what
    the machine itself allows (on two cores they contend for the CPU)."""
    command = [sys.executable, "-m", "treadle", "--json"]
    command += ["--model", f"script:{_script(folder, pause)}", "go"]
    runs = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        both = [
            subprocess.Popen(command, env=env, cwd=folder, stdout=subprocess.DEVNULL)
            for _ in range(WORKERS)
        ]
        if any(turn.wait() for turn in both):
            raise RuntimeError("a turn of the pair failed")
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def _ray_alone(env: dict[str, str], folder: Path) -> dict[str, float]:
    """The private instance's phases with no turn: start (``ray.init`` and what it
    waits for), the first two tasks (workers ready), stop; and the whole process."""
    code = (
        "import time\n"
        "from treadle.adapters.batch.ray_instance import LocalRayInstance\n"
        f"instance = LocalRayInstance({WORKERS})\n"
        "began = time.perf_counter()\n"
        "assert instance.start().unwrap() is None\n"
        "import ray\n"
        "started = time.perf_counter()\n"
        "task = ray.remote(num_cpus=1)(lambda: None)\n"
        f"ray.get([task.remote() for _ in range({WORKERS})])\n"
        "ran = time.perf_counter()\n"
        "instance.stop()\n"
        "print(started - began, ran - started, time.perf_counter() - ran)\n"
    )
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=folder, capture_output=True, text=True
    )
    whole = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"Ray alone exited {done.returncode}: {done.stderr[-800:]}")
    start, first, stop = (float(word) for word in done.stdout.split()[-3:])
    return {"ray alone": whole, "ray start": start, "ray first tasks": first, "ray stop": stop}


def measure(engines: Sequence[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="treadle-bench-batch-") as name:
        folder = Path(name)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TREADLE_", "RAY_"))}
        env["TREADLE_STATE_DIR"] = str(folder / "state")
        env["TREADLE_CONFIG_DIR"] = str(folder / "config")
        overhead = _one_turn(folder, env, 0.0)
        pause = max(0.0, TURN_SECONDS - overhead)
        # A pause costs a little more than itself (a timer, a wake-up): correct once.
        pause = max(0.0, pause - (_one_turn(folder, env, pause) - TURN_SECONDS))
        alone = _one_turn(folder, env, pause)
        pair = _pair(folder, env, pause)
        tasks = folder / "tasks.jsonl"
        tasks.write_text(
            "".join(json.dumps({"id": f"t{n:02d}", "task": "go"}) + "\n" for n in range(TURNS))
        )
        figures = {"overhead": overhead, "alone": alone, "pair": pair}
        for engine in engines:
            runs = []
            for round_ in range(ROUNDS):
                out = folder / f"{engine}-{round_}.jsonl"
                command = [sys.executable, "-m", "treadle", "batch", str(tasks), "--engine", engine]
                command += ["--workers", str(WORKERS), "--out", str(out)]
                command += ["--model", f"script:{_script(folder, pause)}"]
                runs.append(_timed(command, env, folder))
            figures[engine] = statistics.median(runs)
        if "ray" in engines:
            figures.update(_ray_alone(env, folder))
    return figures


def run() -> list[str]:
    try:
        import ray  # noqa: F401
    except ImportError:
        engines = ["local"]
    else:
        engines = ["local", "ray"]
    figures = measure(engines)
    alone = figures["alone"]
    ideal = TURNS * alone / WORKERS
    by_hand = TURNS / WORKERS * figures["pair"]
    lines = [
        f"batch: one turn alone {alone:.3f} s (treadle's own start {figures['overhead']:.3f} s); "
        f"{TURNS} turns on {WORKERS} workers, ideal {ideal:.2f} s; {WORKERS} turns at once "
        f"by hand {figures['pair']:.3f} s, so {by_hand:.2f} s for {TURNS} (medians of {ROUNDS})"
    ]
    for engine in engines:
        wall, target = figures[engine], TARGETS[engine] * ideal
        verdict = "ok" if wall <= target else "MISSED"
        extra = (
            (
                f"; Ray alone {figures['ray alone']:.2f} s (start {figures['ray start']:.2f}, "
                f"first {WORKERS} tasks {figures['ray first tasks']:.2f}, "
                f"stop {figures['ray stop']:.2f})"
            )
            if engine == "ray"
            else ""
        )
        lines.append(
            f"batch: --engine {engine} {wall:.2f} s = {wall / ideal:.2f}x ideal, "
            f"{wall / by_hand:.2f}x by hand (target <= {TARGETS[engine]:g}x = {target:.2f} s: "
            f"{verdict}){extra}"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
