"""What redacting a command's saved output costs over saving the same bytes bare.

The saved copy of a cut output never holds a secret on disk (a kill at any moment
included): its first MiB is redacted as it is read, the rest waits in an unnamed file
and is redacted after the command, on a thread, while the next request goes out. Both
sides write the same 50 MB of log-like output, in the runner's chunks, through
:class:`OutputSpill`. Figures:

- the save up to its close, what the command's run and the next request wait for
  (redacted as written, before: 0.42 s; target: within 1.5x the bare save);
- how long after the close the redacted copy is whole (off the critical path);
- a real command (``cat`` of the 50 MB) through the runner, from its start to its
  result, the part of "answer -> next request" that the output costs (target <= 0.2 s),
  against the same runner without a redactor.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from treadle.adapters.process import SubprocessRunner
from treadle.adapters.process.runner import _OutputReader
from treadle.adapters.process.spill import OutputSpill, settle
from treadle.adapters.secrets.redact import Redactor
from treadle.domain.rules.output_bound import OutputBound
from treadle.domain.values.process import ProcessSpec

SIZE = 50 * 1024 * 1024
ROUNDS = 3
SECRET = "s3cr3t-value-0123456789"
ENVIRONMENT = {"MY_API_KEY": SECRET, "DB_PASS": "hunter2", "HOME": "/home/someone"}


def _output() -> bytes:
    """Test-runner lines with the words that send a redactor looking (gh, https://, sk-)."""
    lines = [
        b"tests/test_parser.py::test_high_ranking_paths PASSED                 [ 12%]\n",
        b"GET https://example.com/api/v1/items?page=3 200 OK (highest latency 12 ms)\n",
        b"warning: task-runner reached a checkpoint at step 1234, see logs for detail\n",
    ]
    block = b"".join(lines) * 1000
    data = block * (SIZE // len(block))
    middle = len(data) // 2
    return data[:middle] + f"token={SECRET}\n".encode() + data[middle:]


def _save(data: bytes, folder: str, redactor: Redactor | None) -> tuple[float, float, Path]:
    """The save up to its close, and then until the copy is whole, in seconds; the file."""
    spill = OutputSpill(folder, cap=len(data) + 1, redactor=redactor)
    bound = OutputBound(30_000)
    chunk = _OutputReader.CHUNK
    started = time.perf_counter()
    for at in range(0, len(data), chunk):
        piece = data[at : at + chunk]
        spill.take(piece, bound)
        bound.feed(piece)
    spill.close()
    closed = time.perf_counter()
    settle()
    whole = time.perf_counter()
    assert spill.path is not None
    return closed - started, whole - closed, Path(spill.path)


async def _command(path: Path, folder: str, redactor: Redactor | None) -> tuple[float, float]:
    """Seconds from a ``cat`` of ``path`` to its result, and then to a whole saved copy."""
    runner = SubprocessRunner(redactor=redactor)
    spec = ProcessSpec(f"cat {path}", folder, 60, output_limit=30_000, spill_dir=folder)
    started = time.perf_counter()
    result = (await runner.run(spec)).unwrap()
    ended = time.perf_counter()
    settle()
    whole = time.perf_counter()
    assert result.full_output_path is not None
    os.unlink(result.full_output_path)
    return ended - started, whole - ended


def run() -> list[str]:
    data = _output()
    redactor = Redactor.from_environ(ENVIRONMENT)
    bare: list[tuple[float, float]] = []
    redacted: list[tuple[float, float]] = []
    clean = True
    with tempfile.TemporaryDirectory(prefix="treadle-bench-") as folder:
        for _ in range(ROUNDS):  # interleaved, so load on the machine hits both alike
            *seconds, path = _save(data, folder, None)
            bare.append((seconds[0], seconds[1]))
            os.unlink(path)
            *seconds, path = _save(data, folder, redactor)
            redacted.append((seconds[0], seconds[1]))
            clean = clean and SECRET.encode() not in path.read_bytes()
            os.unlink(path)
        source = Path(folder) / "source.log"
        source.write_bytes(data)
        commands: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(ROUNDS):
            for redacting in (False, True):
                chosen = redactor if redacting else None
                commands[redacting].append(asyncio.run(_command(source, folder, chosen)))
    ours = statistics.median(closed for closed, _ in redacted)
    base = statistics.median(closed for closed, _ in bare)
    whole = statistics.median(after for _, after in redacted)
    ran = statistics.median(took for took, _ in commands[True])
    ran_bare = statistics.median(took for took, _ in commands[False])
    ran_whole = statistics.median(after for _, after in commands[True])
    return [
        f"saving 50 MB of cut output, up to its close: {ours:.3f} s vs unredacted {base:.3f} s "
        f"= {ours / base:.2f}x (target <= 1.5x; redacted as written: 0.42 s); "
        f"secret left on disk: {'yes' if not clean else 'no'}",
        f"  the redacted copy whole {whole:.3f} s after the close, off the critical path",
        f"a command printing 50 MB, start to result: {ran:.3f} s vs unredacted {ran_bare:.3f} s "
        f"= {ran / ran_bare:.2f}x (target <= 0.2 s); copy whole {ran_whole:.3f} s later",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
