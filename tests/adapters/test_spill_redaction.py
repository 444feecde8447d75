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
from treadle.adapters.process import spill as spill_module
from treadle.adapters.process.spill import OutputSpill, settle
from treadle.adapters.secrets.redact import Redactor
from treadle.domain.rules.output_bound import OutputBound
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
from treadle.adapters.secrets.redact import Redactor
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


def _spilled(folder, chunks: list[bytes], redactor: Redactor) -> OutputSpill:
    spill = OutputSpill(str(folder), redactor=redactor)
    bound = OutputBound(50)
    for chunk in chunks:
        spill.take(chunk, bound)
        bound.feed(chunk)
    return spill


@pytest.mark.parametrize("piece", [7, 64 * 1024])
def test_a_secret_across_the_part_redacted_at_once_and_the_part_redacted_later_is_caught(
    tmp_path, monkeypatch, piece
) -> None:
    monkeypatch.setattr(spill_module, "REDACT_AT_ONCE", 1000)
    monkeypatch.setattr(spill_module, "PIECE", piece)
    data = b"x" * 990 + f" key={SECRET} ".encode() * 50 + b"\xff end\n"
    chunks = [data[at : at + 100] for at in range(0, len(data), 100)]  # 990 + 12: across
    redactor = Redactor([SECRET])
    spill = _spilled(tmp_path, chunks, redactor)
    spill.close()
    settle()
    assert spill.path is not None
    saved = (tmp_path / spill.path.rsplit("/", 1)[-1]).read_bytes()
    assert SECRET.encode() not in saved
    assert saved == redactor.redact(data.decode("utf-8", "surrogateescape")).encode(
        "utf-8", "surrogateescape"
    )


def test_bytes_waiting_to_be_redacted_are_under_no_name(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(spill_module, "REDACT_AT_ONCE", 1000)
    data = b"x" * 2000 + f"key={SECRET}\n".encode()
    spill = _spilled(tmp_path, [data[:900], data[900:]], Redactor([SECRET]))
    (saved,) = tmp_path.iterdir()  # before the close: the part redacted at once
    assert saved.read_bytes() == b"x" * 900
    spill.close()
    settle()
    assert [path.name for path in tmp_path.iterdir()] == [saved.name]
    assert saved.read_bytes() == b"x" * 2000 + b"key=[redacted]\n"


def test_a_command_started_after_a_big_output_finds_its_saved_copy_whole(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(spill_module, "REDACT_AT_ONCE", 1000)
    monkeypatch.setattr(spill_module, "PIECE", 100)
    data = (f"line key={SECRET}\n" * 5000).encode()
    spill = _spilled(tmp_path / "s", [data], Redactor([SECRET]))
    spill.close()
    OutputSpill(str(tmp_path / "s"))  # what the runner makes first, for the next command
    assert spill.path is not None
    assert (tmp_path / "s" / spill.path.rsplit("/", 1)[-1]).read_bytes() == (
        b"line key=[redacted]\n" * 5000
    )


# The same, when the output outgrows what is redacted at once: the rest waits unnamed.
SAVE_MUCH_THEN_WAIT = f"""
import asyncio, sys
from treadle.adapters.process import SubprocessRunner, spill
from treadle.adapters.secrets.redact import Redactor
from treadle.domain.values.process import ProcessSpec
spill.REDACT_AT_ONCE = 10_000
command = "seq 1 3000; echo written; seq 1 3000; echo key={SECRET}; seq 1 3000; sleep 300"
spec = ProcessSpec(command, ".", 300, output_limit=100, spill_dir=sys.argv[1])
asyncio.run(SubprocessRunner(redactor=Redactor([{SECRET!r}])).run(spec))
"""


@pytest.mark.slow
def test_a_kill_while_a_big_output_waits_to_be_redacted_leaves_no_secret_on_disk(
    tmp_path,
) -> None:
    saving = subprocess.Popen(
        [sys.executable, "-c", SAVE_MUCH_THEN_WAIT, str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert until(lambda: any(tmp_path.glob("output-*")), 20)
        (saved,) = tmp_path.glob("output-*")
        waiting = f"/proc/{saving.pid}/fd"
        assert until(lambda: _holds_unnamed(waiting), 20)
        saving.send_signal(signal.SIGKILL)
        saving.wait(10)
        assert [path.name for path in tmp_path.iterdir()] == [saved.name]
        assert SECRET.encode() not in saved.read_bytes()
    finally:
        saving.kill()


def _holds_unnamed(fds: str) -> bool:
    """Whether a process holds a file with no name (the bytes waiting to be redacted)
    that has the secret's line in it by now."""
    for fd in os.listdir(fds):
        target = os.readlink(os.path.join(fds, fd))
        if "(deleted)" in target:
            with open(os.path.join(fds, fd), "rb") as file:
                if SECRET.encode() in file.read():
                    return True
    return False


class _FailingLater(Redactor):
    """A redactor that breaks on the part that waited: a bug met on the thread."""

    def releasable(self, text: str) -> int:
        if "key=" in text:
            raise ValueError("broken")
        return super().releasable(text)


def test_a_copy_whose_redaction_fails_on_the_thread_is_removed_not_left_half_done(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(spill_module, "REDACT_AT_ONCE", 1000)
    spill = _spilled(
        tmp_path, [b"x" * 900, f"key={SECRET}\n".encode() * 100], _FailingLater([SECRET])
    )
    spill.close()
    settle()
    assert list(tmp_path.iterdir()) == []
    assert spill.path is None and spill.problem == "broken"
