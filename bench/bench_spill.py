"""What redacting a command's saved output costs over saving the same bytes bare.

The saved copy of a cut output is redacted as it is written (a kill at any moment
leaves no secret on disk). Both sides write the same 50 MB of log-like output, in the
runner's chunks, through :class:`OutputSpill`. Two figures: the whole save, which is
spread over the command's run (the redactor must keep up: target >= 100 MB/s), and what
is left to do after the last byte, the wait before the next request (the redaction pass
at close this replaces took 0.30 s there; target <= 5 ms).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from treadle.adapters.process.runner import _OutputReader
from treadle.adapters.process.spill import OutputSpill
from treadle.adapters.redact import Redactor
from treadle.domain.rules.output_bound import OutputBound

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
    """The whole save, and its close (after the last byte), in seconds; the file."""
    spill = OutputSpill(folder, cap=len(data) + 1, redactor=redactor)
    bound = OutputBound(30_000)
    chunk = _OutputReader.CHUNK
    started = time.perf_counter()
    for at in range(0, len(data), chunk):
        piece = data[at : at + chunk]
        spill.take(piece, bound)
        bound.feed(piece)
    closing = time.perf_counter()
    spill.close()
    ended = time.perf_counter()
    assert spill.path is not None
    return ended - started, ended - closing, Path(spill.path)


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
    ours = statistics.median(whole for whole, _ in redacted)
    base = statistics.median(whole for whole, _ in bare)
    ours_end = statistics.median(end for _, end in redacted) * 1000
    base_end = statistics.median(end for _, end in bare) * 1000
    return [
        f"saving 50 MB of cut output, redacted as written: {ours:.3f} s "
        f"({len(data) / ours / 1e6:.0f} MB/s, target >= 100) vs unredacted {base:.3f} s "
        f"= {ours / base:.1f}x; secret left on disk: {'yes' if not clean else 'no'}",
        f"  after its last byte: {ours_end:.2f} ms vs unredacted {base_end:.2f} ms "
        f"(target <= 5 ms; the pass at close it replaces: 0.30 s)",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
