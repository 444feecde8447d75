"""The watchdog's own program, run by path with ``python -I -S`` (standard library only).

It waits for treadle to close its end of a pipe (which any death does, kill -9 too),
then kills what treadle's commands left running:

- everything in treadle's cgroup folder, when treadle said it has one
  (``cgroup PATH`` on the pipe), then removes the folder;
- every process carrying the owner marker in its environment;
- every process that was treadle's child outside treadle's session (a command, or
  an orphan re-parented to it) when last looked: without a cgroup it looks four
  times a second, since those children go to init the moment treadle dies;
- and the descendants of all of these.

Usage: ``python -I -S watchdog_script.py OWNER_MARKER``, stdin the pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping

LOOK_EVERY = 0.25
ROUNDS = 5

Entry = tuple[int, int, int]
"""(parent, session, start time) of one process."""


def read_entry(pid: int) -> Entry | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            raw = stat.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[3]), int(fields[19])


def all_entries() -> dict[int, Entry]:
    entries = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (entry := read_entry(int(name))) is not None:
            entries[int(name)] = entry
    return entries


def carries(pid: int, tag: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return tag in b"\0" + environ.read()
    except OSError:
        return False


def children_of(pid: int) -> set[int]:
    """The children of every thread of ``pid``."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            found |= _pids_in(f"/proc/{pid}/task/{task}/children")
    return found


def cgroup_pids(path: str) -> set[int]:
    found: set[int] = set()
    for folder, _, _ in os.walk(path):
        found |= _pids_in(os.path.join(folder, "cgroup.procs"))
    return found


def _pids_in(path: str) -> set[int]:
    try:
        with open(path, "rb") as listing:
            return {int(pid) for pid in listing.read().split()}
    except (OSError, ValueError):
        return set()


def doomed(
    entries: Mapping[int, Entry],
    seeds: Iterable[int],
    recorded: Mapping[int, int],
    spare: Iterable[int],
) -> set[int]:
    """The processes to kill: ``seeds``, the ``recorded`` (pid → start time) that are
    still the same processes, and all their descendants; never those in ``spare``.

    >>> doomed({5: (1, 5, 9), 6: (5, 5, 10), 7: (1, 7, 3)}, [], {5: 9, 7: 4}, [1])
    {5, 6}
    """
    children: defaultdict[int, list[int]] = defaultdict(list)
    for pid, (parent, _, _) in entries.items():
        children[parent].append(pid)
    stack = [pid for pid in seeds if pid in entries]
    stack += [pid for pid, start in recorded.items() if entries.get(pid, (0, 0, -1))[2] == start]
    excluded = set(spare)
    found: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid in found or pid in excluded:
            continue
        found.add(pid)
        stack.extend(children[pid])
    return found


def remove_cgroup(path: str) -> None:
    """Kill everything in the folder, wait for it to empty, remove it (deepest first)."""
    kill = os.path.join(path, "cgroup.kill")
    for _ in range(100):
        if not os.path.isdir(path):
            return
        pids = cgroup_pids(path)
        if pids and not _write(kill, "1"):
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        for folder, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        time.sleep(0.02)


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w", encoding="ascii") as target:
            target.write(text)
    except OSError:
        return False
    return True


def main(marker: str) -> None:
    tag = b"\0" + marker.encode() + b"="
    me, owner = os.getpid(), os.getppid()
    owner_entry = read_entry(owner)
    owner_session = owner_entry[1] if owner_entry else -1
    cgroups: list[str] = []
    recorded: dict[int, int] = {}
    pending = b""
    while True:
        timeout = None if cgroups else LOOK_EVERY
        try:
            ready, _, _ = select.select([0], [], [], timeout)
        except InterruptedError:
            continue
        except BaseException:
            break
        if not ready:
            for pid in children_of(owner) - {me}:
                entry = read_entry(pid)
                if entry is not None and entry[1] != owner_session:
                    recorded[pid] = entry[2]
            recorded = {pid: s for pid, s in recorded.items() if read_entry(pid) is not None}
            continue
        try:
            data = os.read(0, 4096)
        except OSError:
            data = b""
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.startswith(b"cgroup "):
                cgroups.append(line[7:].decode(errors="surrogateescape"))
    for path in cgroups:
        with contextlib.suppress(OSError):
            _write(os.path.join(path, "cgroup.kill"), "1")
    for _ in range(ROUNDS):
        entries = all_entries()
        seeds = [pid for pid in entries if carries(pid, tag)]
        for path in cgroups:
            seeds.extend(cgroup_pids(path))
        targets = doomed(entries, seeds, recorded, (me, 1))
        if not targets:
            break
        for pid in targets:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    for path in cgroups:
        remove_cgroup(path)


if __name__ == "__main__":
    with contextlib.suppress(BaseException):
        main(sys.argv[1])
