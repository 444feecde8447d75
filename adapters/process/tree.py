"""Finding and stopping everything one command started, including what left its group.

A command runs in its own session and process group, so ``killpg`` reaches most of
what it starts. Programs that call ``setsid`` or double-fork leave the group; on Linux
these catch them:

- where the kernel lets treadle make one, each command runs in a cgroup of its own
  (:mod:`.cgroup`): the exact list of its processes, whatever they do;
- this process is a *child subreaper*, so an orphaned descendant is re-parented to us
  instead of to init, and shows up among our children. Without a cgroup, a re-parented
  child is the command's if it started after the command did and no other command
  still running could have started it (then the last of them to end stops it);
- every run tags its environment with a marker variable that descendants inherit,
  so a scan of ``/proc/*/environ`` finds them wherever they went;
- and whatever any of these find, its descendants with it.

Processes that treadle starts itself, not as a command (the watchdog, a tool server),
are either in treadle's own session, which no command's process can join, or listed
in :data:`active_commands`: they are never taken for a command's leftovers.
A process that changes user is out of reach. Elsewhere than Linux only the group is
signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections import defaultdict
from dataclasses import dataclass, field

from treadle.adapters.process.cgroup import CommandGroup
from treadle.adapters.process.environment import run_marker

_PROC = "/proc"
_HAVE_PROC = os.path.isdir(f"{_PROC}/self")
_PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.02
_KILL_ROUNDS = 50
_subreaper_tried = False

active_commands: set[int] = set()
"""Process ids of the commands being run now (by any runner in this process).

Their exit status belongs to the runner awaiting them, so cleanup never reaps them."""

running_trees: dict[int, CommandTree] = {}
"""The trees of those commands, for :func:`kill_every_command_now`."""


def become_subreaper() -> None:
    """Make orphaned descendants our children (once per process; Linux only)."""
    global _subreaper_tried
    if _subreaper_tried or not sys.platform.startswith("linux"):
        return
    _subreaper_tried = True
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class ProcessEntry:
    """One line of ``/proc/<pid>/stat``: who its parent is, its group and session, and
    when it started (clock ticks since boot)."""

    pid: int
    parent: int
    group: int
    session: int
    state: str
    started: int = 0

    @property
    def ended(self) -> bool:
        return self.state in ("Z", "X")


def _read_entry(pid: int) -> ProcessEntry | None:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as stat:
            raw = stat.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses; the fields follow the last ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    # Field 3 of the man page is fields[0]: the start time, field 22, is fields[19].
    return ProcessEntry(
        pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode(), int(fields[19])
    )


def start_time(pid: int) -> int:
    """When ``pid`` started (clock ticks since boot), 0 if it is gone."""
    entry = _read_entry(pid)
    return entry.started if entry is not None else 0


def _carries(pid: int, tag: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as environ:
            return tag in b"\0" + environ.read()
    except OSError:
        return False


def _all_entries() -> dict[int, ProcessEntry]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return {}
    entries = {}
    for name in names:
        if name.isdigit() and (entry := _read_entry(int(name))) is not None:
            entries[entry.pid] = entry
    return entries


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` (0: none) to a process group; whether it still had members."""
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _our_children() -> set[int] | None:
    """Our direct children (re-parented orphans included), or None if Linux won't say.

    Orphans are handed to the main thread of a subreaper, so its list is the one to read.
    """
    try:
        with open(f"{_PROC}/self/task/{os.getpid()}/children", "rb") as listing:
            return {int(pid) for pid in listing.read().split()}
    except OSError:
        return None


@dataclass(slots=True)
class CommandTree:
    """The processes of one run: its leader (the shell), whose pid is also its group
    and session id, what is in its cgroup, what carries the run's marker, the orphans
    re-parented to us that are its own, and all their descendants."""

    leader: int
    run_id: str
    cgroup: CommandGroup | None = None
    started: int = 0
    """The leader's start time: nothing started before it is of this run."""
    signalled: set[int] = field(default_factory=set)
    group_signals: set[int] = field(default_factory=set)

    @property
    def _tag(self) -> bytes:
        return b"\0" + run_marker(self.run_id).encode() + b"="

    def members(self) -> dict[int, ProcessEntry]:
        """Every process of the run now, ended ones (zombies) included."""
        entries = _all_entries()
        me = os.getpid()
        tag = self._tag
        seeds = [
            entry.pid
            for entry in entries.values()
            if entry.pid not in (me, 1)
            and (self.leader in (entry.group, entry.session) or _carries(entry.pid, tag))
        ]
        if self.cgroup is not None:
            seeds.extend(pid for pid in self.cgroup.pids() if pid in entries)
        else:  # with a cgroup, an orphan is in it: nothing to guess
            seeds.extend(self._adopted(entries, me))
        children: defaultdict[int, list[int]] = defaultdict(list)
        for entry in entries.values():
            children[entry.parent].append(entry.pid)
        found: dict[int, ProcessEntry] = {}
        while seeds:
            pid = seeds.pop()
            if pid in found or pid in (me, 1):
                continue
            found[pid] = entries[pid]
            seeds.extend(children[pid])
        return found

    def _adopted(self, entries: dict[int, ProcessEntry], me: int) -> list[int]:
        """Our children that are this run's orphans, though nothing else marks them.

        Not a command's own process, nor in our session (where treadle's own children
        are), started after this run's leader, and started by no other run still going.
        """
        ours = os.getsid(0)
        others = [tree.started for tree in running_trees.values() if tree is not self]
        return [
            entry.pid
            for entry in entries.values()
            if entry.parent == me
            and entry.pid not in active_commands
            and entry.session != ours
            and entry.started >= self.started
            and not any(started <= entry.started for started in others)
        ]

    def may_have_leftovers(self) -> bool:
        """A cheap check after the leader ended: could anything of the run still be about?

        Anything still running is in the group or, the leader having ended, was
        re-parented to us; False here means a full scan would find nothing alive.
        """
        if _signal_group(self.leader, 0):
            return True
        if self.cgroup is not None and self.cgroup.populated():
            return True
        if not _HAVE_PROC:
            return False  # the group is all we could reach anyway
        children = _our_children()
        if children is None:
            return True
        ours = os.getsid(0)
        for pid in children - active_commands:
            entry = _read_entry(pid)
            # A live child may be a leftover (unless it is in our session: treadle's
            # own); an ended one is, if it was of this group (then it needs reaping).
            # Other ended children are not this run's to judge, and would otherwise
            # make every later run scan.
            if entry is not None and (
                (not entry.ended and entry.session != ours)
                or self.leader in (entry.group, entry.session)
            ):
                return True
        return False

    def signal(self, signum: int, *, again: bool = False) -> int:
        """Send ``signum`` to the group and every live member; how many were live.

        Without ``again`` the group and each member get the signal once (a slow
        SIGTERM handler is not interrupted by a second SIGTERM); members that appear
        later get it when first seen.
        """
        # Scan before signalling: a member that dies hands its children to us, and
        # the parent links that lead to them are gone.
        live = [entry.pid for entry in self.members().values() if not entry.ended]
        if again or signum not in self.group_signals:
            self.group_signals.add(signum)
            group_live = _signal_group(self.leader, signum)
        else:
            group_live = _signal_group(self.leader, 0)
        if not _HAVE_PROC:
            # No process list to consult: the group is live while it can be signalled.
            return int(group_live)
        for pid in live:
            if again or pid not in self.signalled:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signum)
                self.signalled.add(pid)
        return len(live)

    def reap(self) -> None:
        """Collect the exit status of members that ended as our (adopted) children, and of
        any ended child outside our session: a command's (a process that ended has left
        its cgroup, so nothing else says whose it was; treadle's own stay in its session)."""
        me, ours = os.getpid(), os.getsid(0)
        ended = [entry for entry in self.members().values() if entry.ended]
        for pid in (_our_children() or set()) - active_commands:
            entry = _read_entry(pid)
            if entry is not None and entry.ended and entry.session != ours:
                ended.append(entry)
        for entry in ended:
            if entry.parent == me and entry.pid not in active_commands:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(entry.pid, os.WNOHANG)

    async def stop(self, grace: float) -> None:
        """SIGTERM to all, SIGKILL after ``grace`` seconds to what is left, until none is."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        try:
            # No event says "the whole tree has ended": poll, rescanning each time.
            # SIGTERM goes out at least once, even with no grace at all.
            while self.signal(signal.SIGTERM):
                if loop.time() >= deadline:
                    break
                await asyncio.sleep(min(_POLL, deadline - loop.time()))
            for _ in range(_KILL_ROUNDS):
                # A member may fork between the scan and the kill: scan again until empty.
                if self.cgroup is not None:
                    self.cgroup.kill()  # all at once, forks included
                if not self.signal(signal.SIGKILL, again=True):
                    break
                self.reap()
                await asyncio.sleep(_POLL / 2)
        except BaseException:
            # Cancelled again during the grace: no more waiting, but nothing survives.
            self.kill_now()
            raise
        finally:
            self.reap()

    def kill_now(self) -> None:
        """SIGKILL everything at once, without waiting (a last resort)."""
        if self.cgroup is not None:
            self.cgroup.kill()
        for _ in range(3):
            if not self.signal(signal.SIGKILL, again=True):
                break
        self.reap()


def kill_every_command_now() -> None:
    """SIGKILL every command still running and all it started: before a hard exit,
    which leaves no time for the runners' own cleanup."""
    for tree in list(running_trees.values()):
        with contextlib.suppress(OSError):
            tree.kill_now()
