"""What loading the HTTP adapters does to the imports of the libraries under them."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.processes import ROOT, treadle_env


def test_a_missing_sniffio_is_looked_for_once_not_at_every_connection() -> None:
    # httpcore imports sniffio at every connection's lock; uninstalled, each import
    # searched all of sys.path. In a process of its own: the finding is made at import.
    program = (
        "import importlib.util, sys\n"
        "missing = importlib.util.find_spec('sniffio') is None\n"
        "import treadle.adapters.http_model\n"
        "print(missing, 'sniffio' in sys.modules and sys.modules['sniffio'] is None)\n"
    )
    env = treadle_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    missing, marked = done.stdout.split()
    assert marked == missing  # marked missing exactly when it is not installed


def test_httpcore_still_runs_on_asyncio_when_sniffio_is_marked_missing() -> None:
    import httpcore._synchronization as sync

    import treadle.adapters.http_model  # noqa: F401

    if sys.modules.get("sniffio", "installed") is None:
        assert sync.current_async_library() == "asyncio"
