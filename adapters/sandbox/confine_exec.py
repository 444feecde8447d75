"""The exec helper: confine this process with a Landlock ruleset, then become the command.

The fallback of the native spawner (:mod:`.spawner`), used where ``make`` could not
build it: it costs a second interpreter per command (7-20 ms).

    python -I -S confine_exec.py RULESET_FD STATUS_FD NETWORK CHANNEL_FD PORT -- bash -c COMMAND

treadle builds the ruleset (:mod:`treadle.adapters.sandbox.landlock`) and hands its
descriptor over; this program sets no_new_privs, restricts itself, closes the
descriptor and execs the command. The confinement is inherited by every descendant,
setsid and double forks included, and cannot be lifted.

NETWORK is the session's ``sandbox_network``: under ``off`` and ``allowlist`` a seccomp
filter (:data:`SOCKET_FILTER`, the one spawn.c installs) refuses every socket but Unix,
netlink and TCP ones (TCP is Landlock's to refuse, by port), io_uring, which makes
sockets without the socket system call, and TCP Fast Open (a send with MSG_FASTOPEN),
which connects without the connect system call. ``loopback`` and ``allowlist`` also give the
command a network namespace of its own (spawn.c's own_network and proxy_inside: under
``allowlist`` the proxy's PORT on its own loopback, handed to treadle over CHANNEL_FD).

STATUS_FD is the write end of a pipe treadle reads: when the process cannot confine
itself it writes why there and exits, and otherwise the exec closes it, unwritten. So
treadle knows, before it lets the command start, whether it is confined; an exit
code could be any command's.

It runs as a file, not as part of the package: it imports ``os``, ``sys`` and
``ctypes`` only, so it starts in the time of a bare interpreter (``-I -S``: no site,
no environment variables). It is a separate program rather than a ``preexec_fn``
because fork() with a ``preexec_fn`` costs more the larger treadle grows and runs
Python in a forked child of a threaded process. Exit 126 when the kernel refuses (as a
shell that cannot exec), 127 when the command is not found.
"""

import ctypes
import os
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
LANDLOCK_RESTRICT_SELF = 446  # the same number on every architecture since Linux 5.1
NETWORKS = ("on", "off", "allowlist", "loopback", "allowlist+loopback")

MACHINES = {  # AUDIT_ARCH_*, then the numbers of socket, sendto, sendmsg and sendmmsg
    "x86_64": (0xC000003E, 41, 44, 46, 307),
    "aarch64": (0xC00000B7, 198, 206, 211, 269),
    "arm64": (0xC00000B7, 198, 206, 211, 269),
}
IO_URING_SETUP = 425  # the same on both
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_TYPE_MASK, IPPROTO_TCP = 1, 0xF, 6
MSG_FASTOPEN = 0x20000000
EACCES = 13
_LD, _JEQ, _JGE, _JSET, _AND, _RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | EACCES
# seccomp_data: nr at 0, arch at 4, the arguments' low words at 16, 24, 32, 40 (little end).
SOCKET_FILTER = (  # (code, jump if true, jump if false, k); a jump skips that many
    (_LD, 0, 0, 4),  # 0 the architecture
    (_JEQ, 0, 23, "arch"),  # 1 another (a 32-bit program): refuse everything
    (_LD, 0, 0, 0),  # 2 the system call
    (_JGE, 21, 0, 0x40000000),  # 3 the x32 ABI: refused
    (_JEQ, 20, 0, IO_URING_SETUP),  # 4 io_uring: refused
    (_JEQ, 14, 0, "sendto"),  # 5 its flags at 20
    (_JEQ, 13, 0, "sendmmsg"),  # 6 its flags at 20
    (_JEQ, 14, 0, "sendmsg"),  # 7 its flags at 22
    (_JEQ, 0, 15, "socket"),  # 8 anything else: allowed
    (_LD, 0, 0, 16),  # 9 its family
    (_JEQ, 13, 0, AF_UNIX),  # 10
    (_JEQ, 12, 0, AF_NETLINK),  # 11
    (_JEQ, 1, 0, AF_INET),  # 12
    (_JEQ, 0, 11, AF_INET6),  # 13 any other family: refused
    (_LD, 0, 0, 24),  # 14 its type
    (_AND, 0, 0, SOCK_TYPE_MASK),  # 15 without SOCK_NONBLOCK and SOCK_CLOEXEC
    (_JEQ, 0, 8, SOCK_STREAM),  # 16 UDP, raw, SCTP's SEQPACKET: refused
    (_LD, 0, 0, 32),  # 17 its protocol
    (_JEQ, 5, 0, 0),  # 18
    (_JEQ, 4, 5, IPPROTO_TCP),  # 19 MPTCP, SCTP: refused
    # TCP Fast Open connects inside a send, where Landlock's connect rule never looks:
    (_LD, 0, 0, 40),  # 20 sendto's and sendmmsg's flags
    (_JSET, 3, 2, MSG_FASTOPEN),  # 21
    (_LD, 0, 0, 32),  # 22 sendmsg's flags
    (_JSET, 1, 0, MSG_FASTOPEN),  # 23
    (_RET, 0, 0, _ALLOW),  # 24
    (_RET, 0, 0, _DENY),  # 25
)


def main(argv: list[str]) -> None:
    numbers = (argv[0], argv[1], argv[3].removeprefix("-"), argv[4]) if len(argv) > 5 else ()
    if (
        len(argv) < 7
        or argv[5] != "--"
        or argv[2] not in NETWORKS
        or not all(text.isdigit() for text in numbers)
    ):
        _fail(
            "usage: confine_exec.py RULESET_FD STATUS_FD NETWORK CHANNEL_FD PORT -- "
            "PROGRAM [ARGUMENT ...]",
            2,
        )
    ruleset, status, network = int(argv[0]), int(argv[1]), argv[2]
    channel, port, command = int(argv[3]), int(argv[4]), argv[6:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if network == "off":  # for a listen() that binds a port itself, unseen by Landlock
        _own_network(libc, status, required=False, up=False)
    if network == "loopback":
        _own_network(libc, status, required=True)
    if network.startswith("allowlist") and channel >= 0:
        _proxy_inside(libc, status, channel, port, required=network != "allowlist")
    unset = ctypes.c_ulong(0)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), unset, unset, unset) != 0:
        _fail(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}", 126, status)
    if libc.syscall(ctypes.c_long(LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), 0) != 0:
        _fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}", 126, status)
    os.close(ruleset)
    if network != "on":
        _filter_sockets(libc, status)
    os.set_inheritable(status, False)  # confined: the exec closes it, saying so
    try:
        os.execvp(command[0], command)
    except OSError as error:
        _fail(f"{command[0]}: {error.strerror}", 127)


CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _own_network(libc: ctypes.CDLL, status: int, *, required: bool, up: bool = True) -> bool:
    """A user and network namespace of the command's own, whose only interface is its
    own loopback, brought up here unless not ``up`` (spawn.c's own_network). Before
    Landlock, which would refuse the writes to /proc/self. False when the kernel
    refuses the namespaces and they are not ``required``."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(ctypes.c_int(CLONE_NEWUSER | CLONE_NEWNET)) != 0:
        if not required:
            return False
        why = os.strerror(ctypes.get_errno())
        _fail(f"unshare(CLONE_NEWUSER | CLONE_NEWNET): {why}", 126, status)
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1\n")):
        _write(f"/proc/self/{name}", text, status)
    _write("/proc/self/gid_map", f"{gid} {gid} 1\n", status)
    if not up:
        return True
    request = ctypes.create_string_buffer(b"lo", 40)  # struct ifreq: a name, then flags
    sock = libc.socket(ctypes.c_int(2), ctypes.c_int(2 | 0o2000000), ctypes.c_int(0))
    if sock < 0 or libc.ioctl(sock, ctypes.c_ulong(SIOCGIFFLAGS), request) != 0:
        _fail(f"the loopback: {os.strerror(ctypes.get_errno())}", 126, status)
    flags = int.from_bytes(request.raw[16:18], sys.byteorder) | IFF_UP
    request = ctypes.create_string_buffer(
        request.raw[:16] + flags.to_bytes(2, sys.byteorder) + request.raw[18:], 40
    )
    if libc.ioctl(sock, ctypes.c_ulong(SIOCSIFFLAGS), request) != 0:
        _fail(f"bringing the loopback up: {os.strerror(ctypes.get_errno())}", 126, status)
    os.close(sock)
    return True


def _proxy_inside(
    libc: ctypes.CDLL, status: int, channel: int, port: int, *, required: bool
) -> None:
    """The proxy's port on the command's own loopback, handed to treadle (spawn.c's
    proxy_inside); without the namespaces (unless ``required``), Landlock's port rule
    alone."""
    import socket  # here only: every other command starts without it

    if _own_network(libc, status, required=required):
        try:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", port))
            listener.listen(128)
            with socket.socket(fileno=channel) as treadle:
                socket.send_fds(treadle, [b"L"], [listener.fileno()])
            listener.close()
        except OSError as error:
            _fail(f"the proxy's port in the command's network: {error.strerror}", 126, status)
    else:
        os.close(channel)


def _write(path: str, text: str, status: int) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(descriptor, text.encode())
        finally:
            os.close(descriptor)
    except OSError as error:
        _fail(f"{path}: {error.strerror}", 126, status)


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _filter_sockets(libc: ctypes.CDLL, status: int) -> None:
    """Install :data:`SOCKET_FILTER` for this machine, for good (no_new_privs is set)."""
    machine = os.uname().machine
    if machine not in MACHINES:
        _fail(f"no socket filter is known for {machine}", 126, status)
    arch, socket, sendto, sendmsg, sendmmsg = MACHINES[machine]
    named = {
        "arch": arch,
        "socket": socket,
        "sendto": sendto,
        "sendmsg": sendmsg,
        "sendmmsg": sendmmsg,
    }
    program = (_SockFilter * len(SOCKET_FILTER))(
        *(
            _SockFilter(code, jt, jf, named[k] if isinstance(k, str) else k)
            for code, jt, jf, k in SOCKET_FILTER
        )
    )
    fprog = _SockFprog(len(SOCKET_FILTER), program)
    unset = ctypes.c_ulong(0)
    mode = ctypes.c_ulong(SECCOMP_MODE_FILTER)
    if libc.prctl(PR_SET_SECCOMP, mode, ctypes.byref(fprog), unset, unset) != 0:
        _fail(f"prctl(PR_SET_SECCOMP): {os.strerror(ctypes.get_errno())}", 126, status)


def _fail(message: str, code: int, status: int = -1) -> None:
    """End, saying why on stderr, and on the status pipe when confinement failed."""
    line = f"treadle sandbox: {message}\n".encode()
    for descriptor in (2, status):
        if descriptor >= 0:
            try:  # noqa: SIM105 (contextlib is one import more for every command)
                os.write(descriptor, line)
            except OSError:
                pass
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
