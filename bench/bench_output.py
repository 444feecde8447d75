"""What showing a command's output live costs the command itself.

A command writes 8 MB/s of numbered lines for two seconds, paced, and times itself:
when whoever reads its pipe falls behind, its writes block and its time grows. It runs
through the bash tool with its last lines shown live by ``BlessedTerminal`` into a
pseudo-terminal (drained by ``cat``, as a terminal would), and through the runner with
nobody watching; the figure is the command's own time shown live over unobserved,
best of three each, interleaved (target: within 1.2×).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import struct
import subprocess
import sys
import tempfile
import termios
from pathlib import Path
from typing import TextIO

from returns.result import Success

RATE = 8_000_000
SECONDS = 2.0
ROWS, COLUMNS = 40, 120
RUNS = 3

WRITER = """
import sys, time
rate, seconds, report = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
block = b"".join(b"%08d the output of a build step, as long as a line of it is\\n" % n
                 for n in range(1000))
out = sys.stdout.buffer
total, sent = rate * seconds, 0
start = time.perf_counter()
while sent < total:
    due = start + sent / rate
    now = time.perf_counter()
    if due > now:
        time.sleep(due - now)
    out.write(block)
    out.write(b"block %d written\\n" % (sent // len(block)))  # the last lines change
    out.flush()
    sent += len(block)
with open(report, "w") as file:
    file.write(repr(time.perf_counter() - start))
"""


def _pty() -> tuple[int, int]:
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    return leader, follower


async def _unobserved(command: str, folder: str) -> None:
    from treadle.adapters.process import SubprocessRunner
    from treadle.domain.values.process import ProcessSpec

    outcome = await SubprocessRunner().run(ProcessSpec(command, cwd=folder, timeout=60))
    assert isinstance(outcome, Success), outcome


def _shown_live(command: str, folder: str) -> int:
    """The command through the bash tool, shown live into a pseudo-terminal; how many
    live updates it made."""
    leader, follower = _pty()
    reader = subprocess.Popen(
        ["cat"], stdin=leader, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    out = open(follower, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    try:
        updates = asyncio.run(_through_the_tool(command, folder, out))
        out.flush()
        termios.tcdrain(follower)
    finally:
        out.close()
        os.close(follower)
        reader.wait(timeout=10)
        os.close(leader)
    return updates


async def _through_the_tool(command: str, folder: str, out: TextIO) -> int:
    from blessed import Terminal

    from treadle.adapters.blessed_terminal import BlessedTerminal
    from treadle.adapters.process import SubprocessRunner
    from treadle.adapters.system_clock import SystemClock
    from treadle.domain.loop.builtin_tools import BashTool
    from treadle.domain.values.conversation import ToolCall
    from treadle.domain.values.events import ToolOutput, ToolStarted, TurnEvent, TurnStarted
    from treadle.domain.values.tools import ToolLimits, ToolResult
    from treadle.ports.tools import ToolContext

    updates = 0
    term = Terminal(kind="xterm-256color", stream=out, force_styling=True)
    terminal = BlessedTerminal(term, input_fd=None, live=True)
    terminal.bind_interrupt(lambda: None)  # the turn's live block, ticking
    terminal.show(TurnStarted("build"))
    call = ToolCall("build", "bash", "{}")
    terminal.show(ToolStarted(call, command))

    def emit(event: TurnEvent) -> None:
        nonlocal updates
        updates += isinstance(event, ToolOutput)
        terminal.show(event)

    async def no_answer(question: str) -> str | None:
        return None

    async def never_stopped() -> None:
        await asyncio.Event().wait()

    context = ToolContext(
        workspace=folder,
        session_dir="",
        runner=SubprocessRunner(),
        clock=SystemClock(),
        limits=ToolLimits(),
        emit=emit,
        ask_question=no_answer,
        until_stopped=never_stopped,
        call_id=call.id,
    )
    outcome = await BashTool().run({"command": command}, context)
    assert isinstance(outcome, ToolResult) and not outcome.is_error, outcome
    terminal.close()
    return updates


def live_output() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="treadle-bench-") as folder:
        writer = Path(folder) / "writer.py"
        writer.write_text(WRITER, encoding="utf-8")
        report = Path(folder) / "took"
        command = f"{sys.executable} {writer} {RATE} {SECONDS} {report}"

        def took() -> float:
            return float(report.read_text())

        bare: list[float] = []
        shown: list[float] = []
        updates = 0
        for _ in range(RUNS):
            asyncio.run(_unobserved(command, folder))
            bare.append(took())
            updates = _shown_live(command, folder)
            shown.append(took())
    ratio = min(shown) / min(bare)
    return [
        f"output: a command writing {RATE / 1e6:.0f} MB/s for {SECONDS:g} s, shown live "
        f"({updates} live updates): its own time {min(shown):.2f} s, unobserved "
        f"{min(bare):.2f} s: {ratio:.2f}× (target ≤ 1.2×)"
    ]


def run() -> list[str]:
    return live_output()


if __name__ == "__main__":
    for line in run():
        print(line)
