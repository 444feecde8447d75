"""A cgroup v2 folder per command, where Linux lets treadle make one.

A cgroup is the kernel's own list of a command's processes: a descendant that calls
``setsid``, clears its environment and loses its parent is still in it, and
``cgroup.kill`` stops all of them at once, new forks included. treadle makes one
folder of its own under the cgroup it was started in (``treadle-<pid>-<hex>``) and
one folder per command under that; the watchdog empties and removes the whole folder
when treadle dies.

Nothing here is required: without cgroup v2, or without the right to write to it (an
ordinary user outside a delegated subtree, a read-only ``/sys``), :func:`cgroup_home`
is None and the process tree falls back to its other ways of finding processes.

Example::

    home = cgroup_home()
    group = home.command_group(run_id) if home else None
    if group and group.adopt(pid): ...   # pid and all it starts are now in group.pids()
    # or: clone3(CLONE_INTO_CGROUP) with group.open(), as the native spawner does
"""

from __future__ import annotations

import contextlib
import os
import signal

_tried = False
_home: CgroupHome | None = None


def _own_cgroup_folder() -> str | None:
    """Where this process's cgroup v2 folder is mounted, or None without one."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as groups:
            own = next((line[3:].strip() for line in groups if line.startswith("0::")), None)
        with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
            # "<id> <parent> <dev> <root> <mount point> <options> ... - <type> <source> ..."
            points = [
                line.split()[4]
                for line in mounts
                if " - " in line and line.split(" - ", 1)[1].startswith("cgroup2 ")
            ]
    except (OSError, StopIteration):
        return None
    if own is None or not own.startswith("/"):
        return None
    for point in points:
        folder = os.path.normpath(point + own)
        if _holds(folder, os.getpid()):
            return folder
    return None


def _holds(folder: str, pid: int) -> bool:
    return pid in _read_pids(os.path.join(folder, "cgroup.procs"))


def _read_pids(path: str) -> set[int]:
    try:
        with open(path, "rb") as listing:
            return {int(pid) for pid in listing.read().split()}
    except (OSError, ValueError):
        return set()


def _write(path: str, text: str) -> bool:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(descriptor, text.encode())
    except OSError:
        return False
    finally:
        os.close(descriptor)
    return True


class CommandGroup:
    """The cgroup of one command: who is in it, and a way to stop them all."""

    def __init__(self, path: str, home: CgroupHome | None = None) -> None:
        self.path = path
        self._home = home

    def adopt(self, pid: int) -> bool:
        """Move ``pid`` in (before it starts anything); whether the kernel allowed it.

        Moving needs the right to write to the folder the process leaves as well (an
        ordinary user outside a delegated subtree lacks it): one refusal turns cgroups
        off for the rest of this treadle."""
        if _write(os.path.join(self.path, "cgroup.procs"), str(pid)):
            return True
        if self._home is not None:
            self._home.usable = False
        self.remove()
        return False

    def open(self) -> int:
        """A descriptor of the folder, for ``clone3(CLONE_INTO_CGROUP)``; -1 if it is gone."""
        try:
            return os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return -1

    def pids(self) -> set[int]:
        """Every process in the group, in the folders a command made inside it too."""
        found: set[int] = set()
        for folder, _, _ in os.walk(self.path):
            found |= _read_pids(os.path.join(folder, "cgroup.procs"))
        return found

    def populated(self) -> bool:
        try:
            with open(os.path.join(self.path, "cgroup.events"), encoding="utf-8") as events:
                return "populated 1" in events.read()
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL every member at once (``cgroup.kill``, or one by one on older kernels)."""
        if _write(os.path.join(self.path, "cgroup.kill"), "1"):
            return
        for pid in self.pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> bool:
        """Remove the (empty) folders, deepest first; whether they are gone."""
        return remove_tree(self.path)


def remove_tree(path: str) -> bool:
    """``rmdir`` a cgroup folder and those inside it; a populated one stays."""
    for folder, _, _ in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return not os.path.exists(path)


class CgroupHome:
    """treadle's own folder, inside the cgroup it was started in; one per process."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.usable = True

    def command_group(self, run_id: str) -> CommandGroup | None:
        """A new folder for one command, or None once the kernel refused to move one in."""
        if not self.usable:
            return None
        path = os.path.join(self.path, f"run-{run_id}")
        try:
            os.mkdir(path)
        except OSError:
            self.usable = False
            return None
        return CommandGroup(path, self)


def cgroup_home() -> CgroupHome | None:
    """This process's home for command groups, made on first use; None where there is none."""
    global _tried, _home
    if _tried:
        return _home
    _tried = True
    own = _own_cgroup_folder()
    if own is None:
        return None
    _remove_stale_homes(own)
    path = os.path.join(own, f"treadle-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.mkdir(path)
    except OSError:
        return None
    _home = CgroupHome(path)
    return _home


def _remove_stale_homes(own: str) -> None:
    """Folders left by a treadle that died with its watchdog: removed when empty."""
    with contextlib.suppress(OSError):
        for name in os.listdir(own):
            parts = name.split("-")
            ours = len(parts) == 3 and parts[0] == "treadle" and parts[1].isdigit()
            if ours and not os.path.exists(f"/proc/{parts[1]}"):
                remove_tree(os.path.join(own, name))
