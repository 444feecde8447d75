"""The full output saved when the bound cuts keeps no secret, even if treadle is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from returns.result import Success

from tests.processes import ROOT, until
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.process import runner as runner_module
from treadle.adapters.redact import Redactor
from treadle.domain.values.process import ProcessSpec

SECRET = "s3cr3t-value-0123456789"


@pytest.mark.parametrize("chunk", [runner_module._OutputReader.CHUNK, 7])
async def test_a_secret_printed_by_a_command_is_redacted_in_the_saved_output(
    tmp_path, monkeypatch, chunk
):
    monkeypatch.setattr(runner_module._OutputReader, "CHUNK", chunk)  # secrets split across reads
    runner = SubprocessRunner(redactor=Redactor([SECRET]))
    command = f"seq 1 2000; echo 'key={SECRET}'; printf '\\377\\n'; seq 1 2000"
    spec = ProcessSpec(command, str(tmp_path), 30, output_limit=200, spill_dir=str(tmp_path / "s"))
    result = await runner.run(spec)
    assert isinstance(result, Success)
    saved = result.unwrap().full_output_path
    assert saved is not None
    data = (tmp_path / "s" / saved.rsplit("/", 1)[-1]).read_bytes()
    assert SECRET.encode() not in data
    assert b"key=[redacted]\n\xff\n" in data
    assert data.startswith(b"1\n2\n") and data.endswith(b"1999\n2000\n")
    assert [p.name for p in (tmp_path / "s").iterdir()] == [saved.rsplit("/", 1)[-1]]


# A treadle-like process saving a command's output; the command then waits, mid-save.
SAVE_THEN_WAIT = f"""
import asyncio, sys
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.redact import Redactor
from treadle.domain.values.process import ProcessSpec
command = "seq 1 3000; echo key={SECRET}; seq 1 3000; echo written; sleep 300"
spec = ProcessSpec(command, ".", 300, output_limit=100, spill_dir=sys.argv[1])
asyncio.run(SubprocessRunner(redactor=Redactor([{SECRET!r}])).run(spec))
"""


@pytest.mark.slow
def test_a_kill_while_the_output_is_saved_leaves_no_secret_on_disk(tmp_path) -> None:
    saving = subprocess.Popen(
        [sys.executable, "-c", SAVE_THEN_WAIT, str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:

        def written() -> bool:
            return any(b"written" in path.read_bytes() for path in tmp_path.glob("output-*"))

        assert until(written, 20)
        saving.send_signal(signal.SIGKILL)
        saving.wait(10)
        (saved,) = tmp_path.glob("output-*")
        assert SECRET.encode() not in saved.read_bytes()
        assert b"key=[redacted]\n" in saved.read_bytes()
    finally:
        saving.kill()
