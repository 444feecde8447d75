"""A turn's process started ahead of its turn: ``python -m treadle.entrypoints.batch_turn``.

A batch turn is a whole ``treadle --json`` process, and at half a second of work its
interpreter's start and treadle's imports cost as much again. The local engine starts
the next turn's process while the current ones run (:class:`~treadle.adapters.batch.
turn_process.WarmTurns`): it imports what a turn needs, then waits on its stdin for
one line, the JSON list of its arguments and the folder to run in, and becomes
``treadle ARGS`` there. It is still one process per turn, with its own session, group,
markers and watchdog: only the waiting moved. Its environment is fixed when it starts
(markers included); the engine only gives it a turn whose environment is that one.

Stop signals are held from the start, as ``treadle`` holds them while it starts: one
that comes while it waits makes its turn start stopped and end paused.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import sys

AHEAD = (
    "treadle.entrypoints.cli",
    "treadle.entrypoints.container",
    "treadle.entrypoints.session",
    "treadle.entrypoints.wiring",
    "treadle.adapters.checkpoints",
    "treadle.adapters.sandbox",
    "treadle.adapters.tools",
    "treadle.adapters.turn_start",
    "treadle.adapters.context_refusals",
    "treadle.adapters.http_model",
    "treadle.adapters.fakes",
)
"""The modules a turn imports on its way to its first request (its session, wiring,
checkpoints, sandbox, tools, model adapters), found by comparing ``sys.modules``."""


def _read_line(descriptor: int) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        piece = os.read(descriptor, 1 << 16)
        if not piece:
            break
        data += piece
    return data


def main() -> int:
    from treadle.entrypoints import early_signals

    early_signals.hold()
    gc.disable()
    # What a turn imports before its first request, while nobody waits for it.
    for name in AHEAD:
        importlib.import_module(name)
    import treadle.entrypoints.cli

    line = _read_line(0)
    if not line.strip():
        return 0  # the batch had no turn for it
    order = json.loads(line)
    argv, folder = [str(arg) for arg in order["argv"]], str(order["cwd"])
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # a turn's stdin is /dev/null, as a cold one's
    os.close(devnull)
    try:
        os.chdir(folder)
    except OSError as error:
        print(f"treadle: cannot work in {folder}: {error.strerror or error}", file=sys.stderr)
        return 2
    sys.argv = ["treadle", *argv]
    return treadle.entrypoints.cli.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
