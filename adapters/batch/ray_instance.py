"""Where a Ray batch runs: a private Ray instance on 127.0.0.1, or an existing cluster.

:class:`LocalRayInstance` starts Ray for one batch with what makes it start fast and
stay private: every address on 127.0.0.1, no dashboard, no usage statistics, the
smallest object store Ray accepts, a temporary folder, and a token of its own (so no
other user of the machine can hand it work, and nothing is written to ``~/.ray``). It
stops by PID what it started, never with ``ray stop`` (which stops every Ray of the
machine). :class:`RayCluster` connects to one started with ``ray start`` and only
disconnects. Both import Ray only when started: it is the optional extra ``treadle[ray]``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable

from returns.result import Failure, Result, Success

from treadle.adapters.process.cgroup import CommandGroup, cgroup_home
from treadle.adapters.process.watchdog import OWNER_MARKER, ensure_watchdog, watch_cgroup

SMALLEST_OBJECT_STORE = 78 * 1024 * 1024
"""Ray refuses an object store under 75 MiB; turns pass only small values through it."""

PRIVATE_ENVIRONMENT = {
    # Ray otherwise advertises the machine's routable address and binds some of its
    # servers to every interface; this switch (meant for laptops) keeps all on 127.0.0.1.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "token",
}

NEEDS_RAY = "--engine ray needs Ray: pip install 'treadle[ray]'"

CONNECT_SECONDS = 5.0
"""How long a cluster's address has to accept a connection before Ray is asked."""

GCS_WAIT = "RAY_gcs_server_port_wait_time_s"
"""How many one-second attempts ``ray.init`` makes to reach a cluster's GCS. Ray's
default is 20 of about 40 s each: a silent address would hold the batch for minutes."""


def _shutdown_ray() -> None:
    """Disconnect this process from Ray, if it ever imported it (nothing otherwise)."""
    ray = sys.modules.get("ray")
    if ray is not None and hasattr(ray, "shutdown"):
        with contextlib.suppress(Exception):
            ray.shutdown()


def _import_ray() -> Result[None, str]:
    try:
        import ray  # noqa: F401
    except ImportError as missing:
        return Failure(f"{NEEDS_RAY} ({missing})")
    return Success(None)


class RayCluster:
    """An existing cluster at ``address`` (``ray start --head`` printed it). With token
    authentication on, this process needs ``RAY_AUTH_MODE=token`` and the cluster's
    token (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``)."""

    def __init__(self, address: str) -> None:
        self.address = address

    def start(self) -> Result[None, str]:
        found = _import_ray()
        if isinstance(found, Failure):
            return found
        silent = _nothing_answers(self.address)
        if silent:
            return Failure(f"cannot use the Ray cluster at {self.address}: {silent}")
        import ray

        bound = GCS_WAIT not in os.environ  # one the user set is theirs
        if bound:
            os.environ[GCS_WAIT] = "1"
        try:
            ray.init(address=self.address, logging_level=logging.ERROR, log_to_driver=False)
        except Exception as error:  # Ray's own errors: ConnectionError, AuthenticationError…
            return Failure(_cannot_connect(self.address, error))
        finally:
            if bound:
                os.environ.pop(GCS_WAIT, None)
        return Success(None)

    def stop(self) -> None:
        _shutdown_ray()  # a cluster we did not start is only left


def _nothing_answers(address: str, seconds: float = CONNECT_SECONDS) -> str:
    """Why nothing accepts a connection at ``HOST:PORT`` ("" when something does, or
    when ``address`` is not of that form: Ray's ``auto``, ``ray://…``)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or "/" in host:
        return ""
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=seconds):
            return ""
    except TimeoutError:
        return f"nothing answers there (no connection within {seconds:g} s)"
    except OSError as error:
        return f"nothing answers there ({error.strerror or error})"


def _cannot_connect(address: str, error: Exception) -> str:
    first = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
    hint = ""
    if os.environ.get("RAY_AUTH_MODE") != "token":
        hint = " (a cluster with token authentication needs RAY_AUTH_MODE=token and its token)"
    return f"cannot use the Ray cluster at {address}: {first[:300]}{hint}"


class LocalRayInstance:
    """A private one-machine Ray with ``workers`` CPUs, in a temporary folder under
    ``temp_root`` (short: Ray's sockets live there, and a socket path is at most 107
    bytes)."""

    def __init__(self, workers: int, temp_root: str = "/tmp") -> None:
        self.workers = max(1, workers)
        self.temp_root = temp_root
        self.folder = ""
        self.pids: set[int] = set()
        """Every process of the instance seen so far (for checks after it stopped)."""
        self.group: CommandGroup | None = None
        """The instance's cgroup, where treadle could make one."""
        self._left = ""

    def start(self) -> Result[None, str]:
        # Ray reads these when imported and when it starts: before either.
        os.environ.pop("RAY_ADDRESS", None)  # never some other cluster by accident
        os.environ.update(PRIVATE_ENVIRONMENT)
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        found = _import_ray()
        if isinstance(found, Failure):
            return found
        import ray

        self.folder = tempfile.mkdtemp(prefix="treadle-ray-", dir=self.temp_root)
        # Every Ray process inherits the owner marker and, where Linux lets treadle make
        # one, a cgroup of the instance's own: should this process die, even by kill -9,
        # the watchdog takes the whole instance with it. The cgroup is what catches the
        # agents: Ray kills its raylet along with its parent (a parent-death signal), so
        # they are init's before the watchdog looks, and their retitled command lines
        # (``ray::DashboardAgent``) no longer show the marker.
        ensure_watchdog()
        os.environ[OWNER_MARKER] = "1"
        inside = self._enter_group()
        try:
            ray.init(
                num_cpus=self.workers,
                include_dashboard=False,
                object_store_memory=SMALLEST_OBJECT_STORE,
                logging_level=logging.ERROR,
                log_to_driver=False,
                _temp_dir=self.folder,
                _node_ip_address="127.0.0.1",
            )
        except Exception as error:  # Ray's own errors
            self.stop()
            return Failure(f"could not start Ray on this machine: {error}")
        finally:
            os.environ.pop(OWNER_MARKER, None)
            if inside:
                self._leave_group()
        self.pids.update(instance_pids(self.folder))
        return Success(None)

    def _enter_group(self) -> bool:
        """Move this process into a new cgroup the watchdog empties, for as long as it
        starts Ray: every process of the instance is born in it, and so is all they
        start later (the agents, the workers, the turns)."""
        home = cgroup_home()
        group = home.command_group(f"ray-{os.urandom(8).hex()}") if home is not None else None
        if home is None or group is None:
            return False
        watch_cgroup(home.path)
        if not group.adopt(os.getpid()):
            return False
        self.group = group
        self._left = os.path.dirname(home.path)
        return True

    def _leave_group(self) -> None:
        """Back to the cgroup this process came from: the instance stays in its own."""
        with (
            contextlib.suppress(OSError),
            open(os.path.join(self._left, "cgroup.procs"), "w", encoding="ascii") as procs,
        ):
            procs.write(str(os.getpid()))

    def stop(self, grace: float = 2.0) -> None:
        """``ray.shutdown()``, then whatever of the instance is still alive, by PID."""
        if self.folder:
            self.pids.update(instance_pids(self.folder))
            # The autoscaler's monitor of a one-machine instance has nothing to keep, and
            # takes a second to hear SIGTERM: ray.shutdown() waits that long for it.
            for pid in instance_pids(self.folder):
                if _command_line(pid).find(b"autoscaler/_private/monitor.py") >= 0:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
        _shutdown_ray()
        if self.folder:
            stop_instance(instance_pids(self.folder), grace)
            shutil.rmtree(self.folder, ignore_errors=True)
        if self.group is not None:
            # Whatever of the instance its process tree no longer showed.
            self.pids.update(self.group.pids())
            self.group.kill()
            deadline = time.monotonic() + grace
            while not self.group.remove() and time.monotonic() < deadline:
                time.sleep(0.02)


# Processes ---------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, str] | None:
    """The parent and state of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            raw = stat.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return int(fields[1]), fields[0].decode()


def alive(pid: int) -> bool:
    found = _stat(pid)
    return found is not None and found[1] not in ("Z", "X")


def instance_pids(folder: str) -> list[int]:
    """The live processes of the Ray instance in ``folder``: those whose command line
    names it (gcs_server, raylet, the monitors and agents) and their descendants (the
    workers, whose command lines are ``ray::…``)."""
    tag = os.path.realpath(folder).encode()
    me = os.getpid()
    parents: dict[int, int] = {}
    seeds: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        found = _stat(pid)
        if found is None or found[1] in ("Z", "X"):
            continue
        parents[pid] = found[0]
        if tag in _command_line(pid):
            seeds.append(pid)
    children: defaultdict[int, list[int]] = defaultdict(list)
    for pid, parent in parents.items():
        children[parent].append(pid)
    found_pids: set[int] = set()
    while seeds:
        pid = seeds.pop()
        if pid not in found_pids:
            found_pids.add(pid)
            seeds.extend(children[pid])
    return sorted(found_pids)


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read()
    except OSError:
        return b""


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return ""


def stop_instance(pids: Iterable[int], grace: float = 2.0) -> list[int]:
    """Stop one Ray instance's processes in ``ray stop``'s order (raylet, the rest, then
    gcs_server): SIGTERM, up to ``grace`` seconds a stage, then SIGKILL. Returns what
    was still alive at the end (nothing, unless a process cannot be killed)."""
    pids = list(pids)
    names = {pid: _name(pid) for pid in pids}
    stages = [
        [pid for pid in pids if names[pid] == "raylet"],
        [pid for pid in pids if names[pid] not in ("raylet", "gcs_server")],
        [pid for pid in pids if names[pid] == "gcs_server"],
    ]
    for stage in stages:
        for pid in stage:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(alive(pid) for pid in stage) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pid in stage:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [pid for pid in pids if alive(pid)]
