"""The exec helper: confine this process with a Landlock ruleset, then become the command.

The fallback of the native spawner (:mod:`.spawner`), used where ``make`` could not
build it: it costs a second interpreter per command (7-20 ms).

    python -I -S confine_exec.py RULESET_FD STATUS_FD -- /bin/bash -c COMMAND

treadle builds the ruleset (:mod:`treadle.adapters.sandbox.landlock`) and hands its
descriptor over; this program sets no_new_privs, restricts itself, closes the
descriptor and execs the command. The confinement is inherited by every descendant,
setsid and double forks included, and cannot be lifted.

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
LANDLOCK_RESTRICT_SELF = 446  # the same number on every architecture since Linux 5.1


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--" or not (argv[0].isdigit() and argv[1].isdigit()):
        _fail("usage: confine_exec.py RULESET_FD STATUS_FD -- PROGRAM [ARGUMENT ...]", 2)
    ruleset, status, command = int(argv[0]), int(argv[1]), argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    unset = ctypes.c_ulong(0)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), unset, unset, unset) != 0:
        _fail(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}", 126, status)
    if libc.syscall(ctypes.c_long(LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), 0) != 0:
        _fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}", 126, status)
    os.close(ruleset)
    os.set_inheritable(status, False)  # confined: the exec closes it, saying so
    try:
        os.execvp(command[0], command)
    except OSError as error:
        _fail(f"{command[0]}: {error.strerror}", 127)


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
