"""The full output saved when the bound cuts keeps no secret."""

from __future__ import annotations

import pytest
from returns.result import Success

from treadle.adapters.process import SubprocessRunner
from treadle.adapters.process import spill as spill_module
from treadle.adapters.redact import Redactor
from treadle.domain.values.process import ProcessSpec

SECRET = "s3cr3t-value-0123456789"


@pytest.mark.parametrize("block", [spill_module.REDACT_BLOCK, 7])
async def test_a_secret_printed_by_a_command_is_redacted_in_the_saved_output(
    tmp_path, monkeypatch, block
):
    monkeypatch.setattr(spill_module, "REDACT_BLOCK", block)
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
