"""What the engine tests share: a place for one test's turns, checked afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch_support import Place, nothing_left


@pytest.fixture
def place(tmp_path: Path):
    here = Place(tmp_path)
    yield here
    assert nothing_left(here.state), "a process of the batch outlived it"
