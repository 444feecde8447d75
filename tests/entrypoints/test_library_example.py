"""The README's library example runs, exactly as printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_library_example_runs_a_whole_turn_on_the_fakes():
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- library-example -->\n```python\n(.*?)```", text, re.DOTALL)
    assert match, "the README lost its library example"
    source = match.group(1)
    assert len([line for line in source.splitlines() if line.strip()]) <= 14
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "README.md", "exec"), {})
    assert out.getvalue().strip() == "Turn finished | All 4 tests pass."
