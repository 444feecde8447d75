"""The terminal's own cost: a long streamed answer, and how soon Esc pauses a turn.

1. A 100,000-token answer is streamed into a pseudo-terminal through
   ``BlessedTerminal.show(AnswerDelta)`` (live status row and all), and the same
   pieces are written straight to the same pseudo-terminal; the figure is the
   display's throughput as a share of the direct one (target: at least 50 %); then the
   same for an answer in markdown, and the display's CPU time per piece into a sink
   (steady on a loaded machine, where the pty's figures swing).
2. ``treadle`` runs in a pseudo-terminal with a command running (``sleep 30``);
   Esc is pressed and the time until ``Turn paused`` is on the screen is taken,
   median of five runs (target: under 200 ms).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]
TOKENS = 100_000
ROWS, COLUMNS = 40, 120
WORDS = (
    *("the", "turn", "loop", "asks", "the", "model", "runs", "tools", "until", "it", "answers"),
    *("def", "fix(path):", "return", "open(path).read()", "#", "the", "failing", "test"),
)


def streamed_answer(tokens: int = TOKENS, seed: int = 7) -> list[str]:
    """Pieces of an answer, one token each, with a line break every dozen or so."""
    chooser = random.Random(seed)
    pieces = []
    for number in range(tokens):
        word = chooser.choice(WORDS)
        pieces.append(word + ("\n" if number % 13 == 12 else " "))
    return pieces


SECTION = (
    "## Step {n}: the deadline\n\n"
    "The runner now keeps **what a command printed** when its `deadline` passes, and the "
    "loop hands it to the model with the reason, as *Esc* does; see [the issue](#22).\n\n"
    "- `runner.py` keeps the partial output of a stopped command\n"
    "- the test **fails** on the old code and passes on the new one\n"
    "  1. a nested item with `code` in it\n\n"
    "> A quoted note about the change, long enough to wrap at a narrow width.\n\n"
    "```python\ndef deadline(seconds):\n    return seconds * 2  # the pause\n```\n\n"
    "| file | change |\n|---|---|\n| runner.py | keeps partial output |\n| test.py | new |\n\n"
)


def streamed_markdown(tokens: int = TOKENS) -> list[str]:
    """Pieces of an answer in markdown (headings, emphasis, code, lists, a quote, a
    fence, a table in every section), a word or a mark each, ``tokens`` of them."""
    pieces: list[str] = []
    n = 0
    while len(pieces) < tokens:
        n += 1
        for word in SECTION.format(n=n).split(" "):
            pieces.append(word + " ")
    return pieces[:tokens]


def _drain(leader: int) -> subprocess.Popen[bytes]:
    """Read the other end of the pseudo-terminal as fast as it fills, like a terminal.

    A separate process: a reading thread here would compete for the GIL with the
    writer being measured.
    """
    return subprocess.Popen(
        ["cat"], stdin=leader, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _pty() -> tuple[int, int]:
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    return leader, follower


def _timed(prepare: Callable[[TextIO], Callable[[str], None]], pieces: list[str]) -> float:
    """Seconds to send every piece with the writer ``prepare`` makes (set-up not counted)."""
    leader, follower = _pty()
    reader = _drain(leader)
    out = open(follower, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    try:
        send = prepare(out)
        started = time.perf_counter()
        for piece in pieces:
            send(piece)
        out.flush()
        termios.tcdrain(follower)
        return time.perf_counter() - started
    finally:
        out.close()
        os.close(follower)
        reader.wait(timeout=10)
        os.close(leader)


def _direct(out: TextIO) -> Callable[[str], None]:
    def send(piece: str) -> None:
        out.write(piece)
        out.flush()

    return send


def _through_the_display(out: TextIO) -> Callable[[str], None]:
    from blessed import Terminal

    from treadle.adapters.blessed_terminal import BlessedTerminal
    from treadle.domain.values.events import AnswerDelta, RequestSent, TurnStarted

    term = Terminal(kind="xterm-256color", stream=out, force_styling=True)
    terminal = BlessedTerminal(term, input_fd=None, live=True)
    terminal.bind_interrupt(lambda: None)
    terminal.show(TurnStarted("write a long answer"))
    terminal.show(RequestSent(1, 1, 8192, 1, "digest"))
    show = terminal.show
    # The events are made before the clock starts, as the strings are for the direct
    # writer: what is measured is the rendering.
    events = {piece: AnswerDelta(piece) for piece in {*streamed_answer(), *streamed_markdown()}}
    return lambda piece: show(events[piece])


def throughput(markdown: bool = False) -> list[str]:
    pieces = streamed_markdown() if markdown else streamed_answer()
    size = sum(len(piece.encode()) for piece in pieces)
    # Interleaved, best of five each: other work on the machine only ever adds time.
    runs = [(_timed(_direct, pieces), _timed(_through_the_display, pieces)) for _ in range(5)]
    direct = min(run[0] for run in runs)
    shown = min(run[1] for run in runs)
    share = direct / shown
    return [
        f"terminal: {TOKENS:,}-token streamed answer{' in markdown' if markdown else ''} "
        f"({size / 1e6:.1f} MB) into a pty: "
        f"{size / shown / 1e6:.1f} MB/s through BlessedTerminal, "
        f"{size / direct / 1e6:.1f} MB/s written directly: {share:.0%} (target ≥ 50%); "
        f"{(shown - direct) / TOKENS * 1e6:.1f} µs added per piece"
    ]


class _Sink(io.StringIO):
    """A stream that takes every write and keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)


def render_cpu() -> list[str]:
    """The display's own CPU time per piece (into a sink: no pseudo-terminal, so other
    work on a loaded machine does not move it), plain and in markdown; best of three."""
    figures = []
    for markdown in (False, True):
        pieces = streamed_markdown() if markdown else streamed_answer()
        best = float("inf")
        for _ in range(3):
            send = _through_the_display(_Sink())
            started = time.process_time()
            for piece in pieces:
                send(piece)
            best = min(best, time.process_time() - started)
        figures.append(f"{best / len(pieces) * 1e6:.1f} µs {'markdown' if markdown else 'plain'}")
    return [f"terminal: CPU time per streamed piece, into a sink: {', '.join(figures)}"]


def _esc_to_paused(folder: Path) -> float:
    import pexpect

    pid_file = folder / "sleep.pid"
    pid_file.unlink(missing_ok=True)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "treadle", "--model", f"script:{folder / 'script.json'}", "--approval=auto", "go"],
        cwd=str(folder),
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "TERM": "xterm-256color",
            "TREADLE_STATE_DIR": str(folder / "state"),
            "TREADLE_CONFIG_DIR": str(folder / "config"),
        },
        encoding="utf-8",
        timeout=30,
        dimensions=(ROWS, COLUMNS),
    )
    child.delaybeforesend = None  # pexpect sleeps 50 ms before each send by default
    try:
        child.expect("sleep 30")
        while not pid_file.exists() or not pid_file.read_text().strip():
            time.sleep(0.01)
        time.sleep(0.3)  # let it settle into the running tool
        started = time.perf_counter()
        child.send("\x1b")
        child.expect("Turn paused")
        elapsed = time.perf_counter() - started
        child.expect(pexpect.EOF)
        return elapsed
    finally:
        child.close(force=True)


def esc_latency(runs: int = 5) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="treadle-bench-") as name:
        folder = Path(name)
        command = "sleep 30 & echo $! > sleep.pid; wait"
        script = {
            "responses": [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}]
        }
        (folder / "script.json").write_text(json.dumps(script), encoding="utf-8")
        times = [_esc_to_paused(folder) for _ in range(runs)]
    median = statistics.median(times)
    spread = ", ".join(f"{t * 1000:.0f}" for t in times)
    return [
        f"terminal: Esc to 'Turn paused' with a running command: median {median * 1000:.0f} ms "
        f"over {runs} runs ({spread} ms) (target < 200 ms)"
    ]


def run() -> list[str]:
    return throughput() + throughput(markdown=True) + render_cpu() + esc_latency()


if __name__ == "__main__":
    for line in run():
        print(line)
