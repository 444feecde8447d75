"""Ray for the tests, for real and on 127.0.0.1 only, started once and gone afterwards.

- ``ray_instance``: one private instance for the whole session, started by treadle's own
  :class:`LocalRayInstance` (as ``treadle batch --engine ray`` does), with a temporary
  HOME; the in-process engine tests share it.
- ``ray_head``: one ``ray start --head`` with token authentication, for ``--address``.
- At the end of the session every process either ever had is asserted gone, by PID.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from returns.result import Success

from tests.processes import until

RAY_PIDS: set[int] = set()
"""Every process of a Ray instance the tests started."""


def _alive(pid: int) -> bool:
    from treadle.adapters.batch.ray_instance import alive

    return alive(pid)


@pytest.fixture(scope="session")
def ray_instance() -> Iterator[object]:
    from treadle.adapters.batch.ray_instance import LocalRayInstance

    saved = {name: os.environ.get(name) for name in ("HOME", *_RAY_VARIABLES)}
    home = tempfile.mkdtemp(prefix="treadle-ray-home-")
    os.environ["HOME"] = home  # Ray may write ~/.ray; its processes inherit this HOME
    instance = LocalRayInstance(workers=2)
    try:
        assert instance.start() == Success(None)
    finally:
        _restore({"HOME": saved["HOME"]})
    try:
        yield instance
    finally:
        instance.stop()
        RAY_PIDS.update(instance.pids)
        _restore(saved)
        shutil.rmtree(home, ignore_errors=True)
        left = [pid for pid in instance.pids if _alive(pid)]
        assert not left, f"Ray processes outlived the instance: {left}"


_RAY_VARIABLES = (
    "RAY_ADDRESS",
    "RAY_AUTH_MODE",
    "RAY_AUTH_TOKEN",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
    "RAY_USAGE_STATS_ENABLED",
)


def _restore(saved: dict[str, str | None]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@dataclass(frozen=True)
class RayHead:
    """A cluster started with ``ray start --head``: its address, and the environment a
    driver needs to reach it (its token, and loopback only)."""

    address: str
    env: dict[str, str]
    folder: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def ray_head() -> Iterator[RayHead]:
    from treadle.adapters.batch.ray_instance import (
        SMALLEST_OBJECT_STORE,
        instance_pids,
        stop_instance,
    )

    folder = tempfile.mkdtemp(prefix="treadle-rayhead-")
    home = Path(folder) / "home"
    home.mkdir()
    port = _free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    # Loopback only, for the cluster and its drivers alike: a driver told 127.0.0.1
    # would otherwise look for the cluster at the machine's routable address.
    loopback = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    env = {**base, **token, **loopback, "HOME": str(home)}
    head_env = env
    ray = Path(sys.executable).with_name("ray")
    command = [str(ray), "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1"]
    command += ["--temp-dir", str(Path(folder) / "ray"), "--num-cpus", "2"]
    command += ["--include-dashboard", "false", "--disable-usage-stats"]
    command += ["--object-store-memory", str(SMALLEST_OBJECT_STORE)]
    # Its own session: a Ctrl-C sent to a test's process group never reaches the cluster.
    started = subprocess.run(
        command, env=head_env, capture_output=True, text=True, start_new_session=True, timeout=120
    )
    pids = instance_pids(str(Path(folder) / "ray"))
    RAY_PIDS.update(pids)
    try:
        assert started.returncode == 0, started.stderr[-2000:]
        yield RayHead(f"127.0.0.1:{port}", env, folder)
    finally:
        pids = instance_pids(str(Path(folder) / "ray"))
        RAY_PIDS.update(pids)
        left = stop_instance(pids)
        shutil.rmtree(folder, ignore_errors=True)
        assert not left, f"the test cluster's processes outlived it: {left}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """No Ray process the tests started outlives them (by PID)."""
    if not RAY_PIDS:
        return
    if not until(lambda: not any(_alive(pid) for pid in RAY_PIDS), 10):
        left = sorted(pid for pid in RAY_PIDS if _alive(pid))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nRay processes outlived the tests: {left}", file=sys.stderr)
