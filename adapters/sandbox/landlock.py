"""Landlock through ctypes: ask the kernel what it supports, and build a ruleset.

The kernel's ABI is used directly (three system calls, an append-only interface)
rather than a binding from PyPI: the ruleset is built here, in treadle, where a bad
path or a refused right is an error treadle can report; it is enforced by the native
spawner (:mod:`.spawner`, ``spawn.c``) or, without it, by a tiny Python program
(:mod:`.confine_exec`) that imports nothing but ``ctypes``, each of which then becomes
(or starts) the command. No binding splits the work that way.

Example::

    support = probe()                           # SandboxSupport(abi=7)
    ruleset = prepare(("/src/app", "/tmp"), support)
    ...                                         # pass ruleset.fd to the exec helper
    ruleset.close()

Rights are those the running ABI knows (REFER from 2, TRUNCATE from 3, IOCTL_DEV from
5): ``handled_access_fs`` never holds a bit the kernel does not know, or it would
refuse the ruleset. A rule on a path that is not a folder carries only the rights that
make sense on a file, or the kernel answers EINVAL.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import errno
import os
import platform
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from treadle.adapters.sandbox.confine_exec import MACHINES
from treadle.domain.rules.sandbox import SandboxSupport

# Since Linux 5.1 every architecture shares the numbers of new system calls.
SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}
KNOWN_MACHINES = frozenset(
    {"x86_64", "aarch64", "arm64", "armv7l", "riscv64", "ppc64le", "s390x", "i686"}
)
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2


class Access(enum.IntFlag):
    """``LANDLOCK_ACCESS_FS_*`` (include/uapi/linux/landlock.h)."""

    EXECUTE = 1 << 0
    WRITE_FILE = 1 << 1
    READ_FILE = 1 << 2
    READ_DIR = 1 << 3
    REMOVE_DIR = 1 << 4
    REMOVE_FILE = 1 << 5
    MAKE_CHAR = 1 << 6
    MAKE_DIR = 1 << 7
    MAKE_REG = 1 << 8
    MAKE_SOCK = 1 << 9
    MAKE_FIFO = 1 << 10
    MAKE_BLOCK = 1 << 11
    MAKE_SYM = 1 << 12
    REFER = 1 << 13  # ABI 2: rename and link across folders (always refused on ABI 1)
    TRUNCATE = 1 << 14  # ABI 3: truncate(2) and O_TRUNC (not confined before)
    IOCTL_DEV = 1 << 15  # ABI 5: ioctl on devices


class NetAccess(enum.IntFlag):
    """``LANDLOCK_ACCESS_NET_*`` (ABI 4): TCP only, by port, whatever the address."""

    BIND_TCP = 1 << 0
    CONNECT_TCP = 1 << 1


TCP = NetAccess.BIND_TCP | NetAccess.CONNECT_TCP


class Scope(enum.IntFlag):
    """``LANDLOCK_SCOPE_*`` (ABI 6): keep a command from signalling processes outside
    its domain (treadle among them) or reaching their abstract Unix sockets."""

    ABSTRACT_UNIX_SOCKET = 1 << 0
    SIGNAL = 1 << 1


_ABI1 = Access(0x1FFF)
_FS_BY_ABI = {
    1: _ABI1,
    2: _ABI1 | Access.REFER,
    3: _ABI1 | Access.REFER | Access.TRUNCATE,
    4: _ABI1 | Access.REFER | Access.TRUNCATE,  # ABI 4 added network rules only
    5: _ABI1 | Access.REFER | Access.TRUNCATE | Access.IOCTL_DEV,
}
READ = Access.EXECUTE | Access.READ_FILE | Access.READ_DIR
FILE_RIGHTS = (
    Access.EXECUTE | Access.WRITE_FILE | Access.READ_FILE | Access.TRUNCATE | Access.IOCTL_DEV
)
"""The only rights a rule on a file (not a folder) may carry."""
DEVICE_RIGHTS = Access.READ_FILE | Access.WRITE_FILE | Access.TRUNCATE | Access.IOCTL_DEV
NEVER_GRANTED = Access.MAKE_CHAR | Access.MAKE_BLOCK | Access.IOCTL_DEV
"""Handled, so refused, and granted on no folder, writable ones included: a device node
made in the workspace or ``/tmp`` opens whatever device its numbers name (as root, a
block node for the disk writes any file of any user), and ``ioctl`` on a device found
beneath a writable folder is no part of changing files. The devices a command may use
are the :data:`DEVICES` files, each with its own rule."""

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
"""Devices every confined command may write: writing to them leaves nothing behind.
(A command in its own session has no controlling terminal: /dev/tty fails with ENXIO.)"""
SHARED_MEMORY = "/dev/shm"
"""Writable in ``workspace-write``: POSIX semaphores live there (multiprocessing's locks)."""


def fs_rights(abi: int) -> Access:
    """The filesystem rights an ABI handles; later ABIs handle at least ABI 5's.

    >>> Access.REFER in fs_rights(1), Access.REFER in fs_rights(2), Access.IOCTL_DEV in fs_rights(7)
    (False, True, True)
    """
    return _FS_BY_ABI[min(max(abi, 1), 5)]


def scopes(abi: int) -> Scope:
    return Scope.ABSTRACT_UNIX_SOCKET | Scope.SIGNAL if abi >= 6 else Scope(0)


class _RulesetAttr(ctypes.Structure):
    # It grows with the ABI: before ABI 6 only its first 8 bytes are passed.
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)): 12 bytes
    _fields_ = [
        ("allowed_access", ctypes.c_uint64),
        ("parent_fd", ctypes.c_int32),
    ]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [
        ("allowed_access", ctypes.c_uint64),
        ("port", ctypes.c_uint64),
    ]


class LandlockError(OSError):
    """A Landlock call failed; the message says which and why."""


class _Kernel:
    """The system calls, bound once."""

    def __init__(self) -> None:
        self._syscall = ctypes.CDLL(None, use_errno=True).syscall
        self._syscall.restype = ctypes.c_long

    def create_ruleset(self, attr: _RulesetAttr | None, size: int, flags: int) -> int:
        pointer = ctypes.byref(attr) if attr is not None else None
        number = ctypes.c_long(SYSCALLS["create_ruleset"])
        return int(self._syscall(number, pointer, ctypes.c_size_t(size), ctypes.c_uint32(flags)))

    def add_rule(self, ruleset: int, rule: _PathBeneathAttr | _NetPortAttr) -> int:
        kind = RULE_NET_PORT if isinstance(rule, _NetPortAttr) else RULE_PATH_BENEATH
        return int(
            self._syscall(
                ctypes.c_long(SYSCALLS["add_rule"]),
                ctypes.c_int(ruleset),
                ctypes.c_int(kind),
                ctypes.byref(rule),
                ctypes.c_uint32(0),
            )
        )


_kernel: _Kernel | None = None


def _bound() -> _Kernel:
    global _kernel
    if _kernel is None:
        _kernel = _Kernel()
    return _kernel


def probe() -> SandboxSupport:
    """The kernel's Landlock ABI version, asked of the system call itself
    (``/sys/kernel/security`` is often not mounted), or 0 and why there is none."""
    system, machine = platform.system(), platform.machine()
    if system != "Linux":
        return SandboxSupport(0, f"Landlock is Linux-only (this is {system})")
    if machine not in KNOWN_MACHINES:
        return SandboxSupport(0, f"no Landlock system calls known for {machine}")
    abi = _bound().create_ruleset(None, 0, CREATE_RULESET_VERSION)
    if abi > 0:
        return SandboxSupport(abi)
    code = ctypes.get_errno()
    why = {
        errno.ENOSYS: "the kernel was built without Landlock (or a seccomp filter hides it)",
        errno.EOPNOTSUPP: "Landlock is built in but not enabled at boot (lsm= leaves it out)",
        errno.EPERM: "a seccomp filter or container policy refuses the Landlock system calls",
    }.get(code, os.strerror(code))
    return SandboxSupport(0, f"Landlock is unavailable: {why} (kernel {platform.release()})")


PR_GET_SECCOMP = 21


def probe_seccomp() -> str:
    """Why no socket filter can be installed here, or "" when one can: the kernel must
    have seccomp filters (``PR_GET_SECCOMP`` answers) and the filter must know the
    machine's system call numbers (:data:`~.confine_exec.MACHINES`)."""
    machine = platform.machine()
    if machine not in MACHINES:
        return f"no socket filter is known for {machine}"
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    unset = ctypes.c_ulong(0)
    if prctl(PR_GET_SECCOMP, unset, unset, unset, unset) < 0:
        code = ctypes.get_errno()
        return f"the kernel refuses seccomp filters: {os.strerror(code)}"
    return ""


@dataclass
class Ruleset:
    """A ruleset ready to be enforced by the exec helper. Its descriptor is close-on-exec
    in treadle; the runner passes it to the helper alone. ``skipped`` lists folders
    that did not exist and got no rule."""

    fd: int
    abi: int
    skipped: tuple[str, ...] = field(default=())

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:  # a session's ruleset goes with its sandbox
        with contextlib.suppress(OSError):
            self.close()


def prepare(
    writable: Sequence[str],
    support: SandboxSupport,
    *,
    devices: Sequence[str] = DEVICES,
    readable: Sequence[str] = ("/",),
    scoped: bool = True,
    files: bool = True,
    tcp: bool = False,
    connect_ports: Sequence[int] = (),
) -> Ruleset:
    """A ruleset letting a command read ``readable``, change ``writable`` (make in it
    anything but device nodes) and write ``devices``, and nothing else. Raises
    :class:`LandlockError`.

    ``files`` False leaves the filesystem alone (``sandbox = off`` with a network
    mode). ``tcp`` refuses every TCP bind and connect (ABI 4) but a connect to one of
    ``connect_ports`` (the proxy's), whatever the address: Landlock names ports only.

    Rules bind inodes: a ruleset kept for a session must be built again when a folder
    it names is deleted and made again (it takes a tenth of a millisecond).
    """
    if not support.available:
        raise LandlockError(errno.EOPNOTSUPP, support.reason)
    kernel = _bound()
    if tcp and support.abi < 4:
        raise LandlockError(errno.EOPNOTSUPP, f"Landlock ABI {support.abi} has no TCP rules")
    handled = fs_rights(support.abi) if files else Access(0)
    net = TCP if tcp else NetAccess(0)
    scope = scopes(support.abi) if scoped else Scope(0)
    attr = _RulesetAttr(handled_access_fs=handled, handled_access_net=net, scoped=scope)
    size = ctypes.sizeof(_RulesetAttr) if support.abi >= 6 else 16 if tcp else 8
    fd = kernel.create_ruleset(attr, size, 0)
    if fd < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, f"landlock_create_ruleset: {os.strerror(code)}")
    wanted = [(path, READ) for path in readable]
    wanted += [(path, handled & ~NEVER_GRANTED) for path in writable]
    wanted += [(path, DEVICE_RIGHTS) for path in devices]
    skipped: list[str] = []
    try:
        for path, access in wanted if files else ():
            if not _add_rule(kernel, fd, path, access & handled):
                skipped.append(path)
        for port in connect_ports if tcp else ():
            rule = _NetPortAttr(allowed_access=NetAccess.CONNECT_TCP, port=port)
            if kernel.add_rule(fd, rule) != 0:
                code = ctypes.get_errno()
                raise LandlockError(code, f"landlock_add_rule(port {port}): {os.strerror(code)}")
    except BaseException:
        os.close(fd)
        raise
    return Ruleset(fd, support.abi, tuple(skipped))


def _add_rule(kernel: _Kernel, ruleset: int, path: str, access: Access) -> bool:
    """One path-beneath rule; False when the path does not exist. Symlinks are
    followed, so a workspace reached through one gets its real folder."""
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        if not stat.S_ISDIR(os.fstat(target).st_mode):
            access &= FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=target)
        if kernel.add_rule(ruleset, rule) != 0:
            code = ctypes.get_errno()
            raise LandlockError(code, f"landlock_add_rule({path}): {os.strerror(code)}")
    finally:
        os.close(target)
    return True
