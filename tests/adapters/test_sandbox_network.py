"""The network of confined commands, on the real kernel: Landlock's TCP rules, the socket
filter, and the allowlist's proxy.

Every destination is a server these tests start on 127.0.0.1: an HTTP server standing
for "outside", reached by name through the proxy with a hosts mapping the test gives,
and a UDP socket. Skipped on a kernel without Landlock's network rules (ABI 4).
"""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.local_http import serving
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.sandbox import Sandbox, probe
from treadle.adapters.sandbox.landlock import probe_seccomp
from treadle.adapters.sandbox.spawner import native_spawner
from treadle.domain.rules.network import LANDLOCK_NET_ABI, NetworkMode, NetworkPolicy
from treadle.domain.rules.sandbox import SandboxMode
from treadle.domain.values.process import ProcessResult, ProcessSpec

SUPPORT = probe()
SECCOMP = probe_seccomp() if SUPPORT.available else SUPPORT.reason
pytestmark = [
    pytest.mark.skipif(
        SUPPORT.abi < LANDLOCK_NET_ABI,
        reason=f"Landlock network rules need ABI {LANDLOCK_NET_ABI} "
        f"(this kernel: {SUPPORT.abi or SUPPORT.reason})",
    ),
    pytest.mark.skipif(bool(SECCOMP), reason=SECCOMP or "seccomp"),
]
ANSWER = "hello from outside"
OWN_NETWORK = subprocess.run(
    [sys.executable, "-c", "import ctypes, os; "
     "os._exit(ctypes.CDLL(None).unshare(0x10000000 | 0x40000000) != 0)"],
    check=False,
).returncode == 0  # fmt: skip
needs_namespaces = pytest.mark.skipif(
    not OWN_NETWORK, reason="user and network namespaces are refused here"
)

STARTS = [
    pytest.param(True, id="native spawner", marks=pytest.mark.skipif(
        native_spawner() is None, reason="the native spawner is not built (make)"
    )),
    pytest.param(False, id="python helper"),
]  # fmt: skip


class _Outside(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"{ANSWER} {self.headers.get('Host')}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def outside() -> Iterator[int]:
    """An HTTP server on 127.0.0.1: its port."""
    with serving(_Outside) as port:
        yield port


@pytest.fixture
def udp() -> Iterator[socket.socket]:
    """A UDP socket on 127.0.0.1 that a command would send to."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.3)
    yield receiver
    receiver.close()


@pytest.fixture
def workspace() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="treadle-network-", dir="/var/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


HOSTS = {"allowed.test": "127.0.0.1", "denied.test": "127.0.0.1", "pkg.allowed.test": "127.0.0.1"}


def sandbox(
    workspace: Path,
    network: NetworkMode,
    mode: SandboxMode = "workspace-write",
    **policy: object,
) -> Sandbox:
    return Sandbox(
        mode,
        str(workspace),
        network=NetworkPolicy(network, **policy),  # type: ignore[arg-type]
        network_explicit=True,
        hosts=HOSTS,
    )


async def run(command: str, box: Sandbox, workspace: Path, spawner: bool = True) -> ProcessResult:
    runner = SubprocessRunner(sandbox=box, spawner=spawner)
    return (await runner.run(ProcessSpec(command, cwd=str(workspace), timeout=30))).unwrap()


def python(code: str) -> str:
    return f"{sys.executable} -c '{textwrap.dedent(code)}'"


def tcp_connect(port: int, name: str = "tcp") -> str:
    return python(f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=5)
            print("{name} connected")
        except OSError as error:
            print("{name} refused:", error)
        """)


def udp_send(port: int) -> str:
    return python(f"""
        import socket
        try:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"leak", ("127.0.0.1", {port}))
            print("udp sent")
        except OSError as error:
            print("udp refused:", error)
        """)


# off ----------------------------------------------------------------------------------


@pytest.mark.parametrize("spawner", STARTS)
async def test_off_refuses_curl_sockets_udp_and_nc_and_the_rest_of_the_command_goes_on(
    workspace: Path, outside: int, udp: socket.socket, spawner: bool
) -> None:
    nc = f"echo hi | nc -w 2 127.0.0.1 {outside}; echo nc exit $?" if shutil.which("nc") else ""
    command = "; ".join(
        part
        for part in (
            f"curl -sS --max-time 5 http://127.0.0.1:{outside}/; echo curl exit $?",
            tcp_connect(outside),
            udp_send(udp.getsockname()[1]),
            nc,
            "echo still here > done.txt && cat done.txt",
        )
        if part
    )
    result = await run(command, sandbox(workspace, "off"), workspace, spawner)
    output = result.output
    assert ANSWER not in output, output
    assert "curl exit 0" not in output and "curl exit" in output
    assert "tcp refused: [Errno 13] Permission denied" in output
    assert "udp refused: [Errno 13] Permission denied" in output
    if nc:
        assert "nc exit 0" not in output and "nc exit" in output
    with pytest.raises(TimeoutError):
        udp.recv(16)
    assert output.rstrip().endswith("still here")
    assert (workspace / "done.txt").read_text() == "still here\n"


@pytest.mark.parametrize("spawner", STARTS)
async def test_off_confines_a_setsid_descendant_too(
    workspace: Path, outside: int, spawner: bool
) -> None:
    inner = tcp_connect(outside, "descendant").replace("'", "'\\''")
    command = f"setsid bash -c '{inner}' & wait; (bash -c '({inner}) &' &); sleep 0.5"
    result = await run(command, sandbox(workspace, "off"), workspace, spawner)
    assert result.output.count("descendant refused: [Errno 13]") == 2, result.output
    assert "descendant connected" not in result.output


async def test_off_refuses_listening_and_raw_and_ipv6_datagram_sockets(workspace: Path) -> None:
    command = python("""
        import socket
        for name, family, kind in (
            ("bind", socket.AF_INET, socket.SOCK_STREAM),
            ("udp6", socket.AF_INET6, socket.SOCK_DGRAM),
            ("raw", socket.AF_INET, socket.SOCK_RAW),
            ("packet", socket.AF_PACKET, socket.SOCK_RAW),
        ):
            try:
                s = socket.socket(family, kind)
                s.bind(("127.0.0.1", 0))
                s.listen()
                print(name, "open")
            except OSError as error:
                print(name, "refused", error.errno)
        a, b = socket.socketpair()
        a.send(b"x")
        print("unix pair", b.recv(1))
        """)
    result = await run(command, sandbox(workspace, "off"), workspace)
    for name in ("bind", "udp6", "raw", "packet"):
        assert f"{name} refused 13" in result.output, result.output
    assert "unix pair b'x'" in result.output


async def test_off_applies_with_the_filesystem_sandbox_off_too(
    workspace: Path, outside: int
) -> None:
    result = await run(tcp_connect(outside), sandbox(workspace, "off", "off"), workspace)
    assert "tcp refused: [Errno 13]" in result.output, result.output


async def test_on_keeps_the_network(workspace: Path, outside: int) -> None:
    result = await run(tcp_connect(outside), sandbox(workspace, "on"), workspace)
    assert "tcp connected" in result.output, result.output


OWN_SERVER = python("""
    import http.server, socket, threading
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=5)
    print("own server reached")
    """)


@needs_namespaces
@pytest.mark.parametrize("spawner", STARTS)
async def test_the_loopback_under_off_is_the_commands_own_and_reaches_nothing_else(
    workspace: Path, outside: int, spawner: bool
) -> None:
    escape = "nsenter -t 1 -n true && echo escaped || echo stayed"
    command = f"{OWN_SERVER}; {tcp_connect(outside)}; {escape}; echo work > f && cat f"
    box = sandbox(workspace, "off", loopback=True)
    result = await run(command, box, workspace, spawner)
    assert "own server reached" in result.output, result.output
    assert "tcp refused: [Errno 111] Connection refused" in result.output  # not treadle's
    assert "escaped" not in result.output and "stayed" in result.output
    assert result.output.rstrip().endswith("work")


# allowlist ----------------------------------------------------------------------------


@pytest.mark.parametrize("spawner", STARTS)
@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
async def test_an_allowed_host_answers_through_the_proxy_over_http_and_connect(
    workspace: Path, outside: int, spawner: bool, mode: SandboxMode
) -> None:
    box = sandbox(workspace, "allowlist", mode, allow=("allowed.test", "*.allowed.test"))
    command = (
        f"curl -sS --max-time 5 http://allowed.test:{outside}/plain; "
        f"curl -sS --max-time 5 --proxytunnel http://pkg.allowed.test:{outside}/tunnel"
    )
    try:
        result = await run(command, box, workspace, spawner)
    finally:
        box.close()
    assert f"{ANSWER} allowed.test:{outside}" in result.output, result.output
    assert f"{ANSWER} pkg.allowed.test:{outside}" in result.output, result.output
    assert "not allowed" not in result.output


async def test_a_denied_host_is_refused_with_its_line(workspace: Path, outside: int) -> None:
    box = sandbox(workspace, "allowlist", allow=("*.test",), deny=("denied.test",))
    command = (
        f"curl -sS -f --max-time 5 http://denied.test:{outside}/; echo curl exit $?; "
        f"curl -sS -f --max-time 5 -p http://denied.test:{outside}/; "
        f"curl -sS --max-time 5 http://allowed.test:{outside}/"
    )
    try:
        result = await run(command, box, workspace)
    finally:
        box.close()
    lines = result.output.splitlines()
    assert lines.count("network: denied.test not allowed") == 1, result.output
    assert lines[-1] == "network: denied.test not allowed"
    assert "curl exit 22" in result.output  # the proxy's 403
    assert f"{ANSWER} allowed.test" in result.output


async def test_a_connection_that_bypasses_the_proxy_is_refused_by_the_kernel(
    workspace: Path, outside: int, udp: socket.socket
) -> None:
    box = sandbox(workspace, "allowlist", allow=("allowed.test",))
    command = "; ".join((
        f"curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{outside}/; echo curl exit $?",
        tcp_connect(outside),
        udp_send(udp.getsockname()[1]),
    ))  # fmt: skip
    try:
        result = await run(command, box, workspace)
    finally:
        box.close()
    assert ANSWER not in result.output, result.output
    assert "tcp refused: [Errno 13] Permission denied" in result.output
    assert "udp refused: [Errno 13] Permission denied" in result.output


@needs_namespaces
@pytest.mark.parametrize("spawner", STARTS)
async def test_the_loopback_beside_the_allowlist_is_the_commands_own(
    workspace: Path, outside: int, spawner: bool
) -> None:
    box = sandbox(workspace, "allowlist", allow=("allowed.test",), loopback=True)
    command = "; ".join((
        OWN_SERVER,
        tcp_connect(outside),
        f"curl -sS --max-time 5 http://allowed.test:{outside}/",
        f"curl -sS -f --max-time 5 http://denied.test:{outside}/",
    ))  # fmt: skip
    try:
        result = await run(command, box, workspace, spawner)
    finally:
        box.close()
    assert "own server reached" in result.output, result.output
    assert "tcp refused: [Errno 111] Connection refused" in result.output  # not treadle's
    assert f"{ANSWER} allowed.test:{outside}" in result.output
    assert result.output.splitlines()[-1] == "network: denied.test not allowed"


@needs_namespaces
@pytest.mark.parametrize("spawner", STARTS)
async def test_another_host_on_the_proxys_port_is_out_of_reach(
    workspace: Path, spawner: bool
) -> None:
    box = sandbox(workspace, "allowlist", allow=("allowed.test",))
    try:
        first = await run("echo $HTTPS_PROXY", box, workspace, spawner)
        port = int(first.output.strip().rsplit(":", 1)[1])
        # "Another host" listening on the proxy's port number: 127.0.0.2, as Landlock's
        # port rule alone would let a command reach it.
        with socket.create_server(("127.0.0.2", port)) as other:
            other.settimeout(0.3)
            command = python(f"""
                import socket
                try:
                    socket.create_connection(("127.0.0.2", {port}), timeout=5)
                    print("other host reached")
                except OSError as error:
                    print("other host refused:", error)
                """)
            result = await run(command, box, workspace, spawner)
            with pytest.raises(TimeoutError):
                other.accept()
    finally:
        box.close()
    assert "other host refused" in result.output, result.output


async def test_the_proxy_is_gone_when_the_session_ends(workspace: Path, outside: int) -> None:
    box = sandbox(workspace, "allowlist", allow=("allowed.test",))
    result = await run("echo $HTTPS_PROXY", box, workspace)
    port = int(result.output.strip().rsplit(":", 1)[1])
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    box.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


SESSION = """
import asyncio, sys
from treadle.adapters.process import SubprocessRunner
from treadle.adapters.sandbox import Sandbox
from treadle.domain.rules.network import NetworkPolicy
from treadle.domain.values.process import ProcessSpec
box = Sandbox("workspace-write", sys.argv[1], network=NetworkPolicy("allowlist", ("a.test",)),
              network_explicit=True)
spec = ProcessSpec("echo $HTTPS_PROXY", cwd=sys.argv[1], timeout=30)
print(asyncio.run(SubprocessRunner(sandbox=box).run(spec)).unwrap().output, flush=True)
sys.stdin.read()
"""


def test_the_proxy_dies_with_treadle_killed_by_sigkill(workspace: Path) -> None:
    treadle = subprocess.Popen(
        [sys.executable, "-c", SESSION, str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert treadle.stdout is not None
        port = int(treadle.stdout.readline().strip().rsplit(":", 1)[1])
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    finally:
        os.kill(treadle.pid, signal.SIGKILL)
        treadle.wait()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


@pytest.mark.parametrize("spawner", STARTS)
async def test_commands_under_the_allowlist_leave_no_descriptor_open(
    workspace: Path, outside: int, spawner: bool
) -> None:
    box = sandbox(workspace, "allowlist", allow=("allowed.test",))
    fetch = f"curl -sS --max-time 5 http://allowed.test:{outside}/"
    try:
        await run(fetch, box, workspace, spawner)  # the proxy, the session's ruleset
        before = sorted(os.listdir("/proc/self/fd"))
        for _ in range(3):
            assert ANSWER in (await run(fetch, box, workspace, spawner)).output
        # The proxy's thread closes its side of each connection as the client's end
        # reaches it: wait for that (a leak never settles).
        for _ in range(200):
            after = sorted(os.listdir("/proc/self/fd"))
            if after == before:
                break
            await asyncio.sleep(0.01)
    finally:
        box.close()
    assert after == before


# Escapes a hostile command tries (found by the adversarial pass) ------------------------


@pytest.mark.parametrize("spawner", STARTS)
async def test_off_refuses_a_tcp_fast_open_send_which_connects_without_connect(
    workspace: Path, spawner: bool
) -> None:
    """sendto(MSG_FASTOPEN) opens a connection without connect(), which is all Landlock's
    TCP rule looks at: the socket filter refuses the flag (sendto, sendmsg, sendmmsg)."""
    receiver = socket.socket()
    receiver.bind(("127.0.0.1", 0))
    receiver.listen(4)
    receiver.settimeout(0.5)
    port = receiver.getsockname()[1]
    command = python(f"""
        import socket
        for name, send in (
            ("sendto", lambda s: s.sendto(b"escaped", 0x20000000, ("127.0.0.1", {port}))),
            ("sendmsg", lambda s: s.sendmsg([b"escaped"], [], 0x20000000, ("127.0.0.1", {port}))),
        ):
            try:
                send(socket.socket())
                print(name, "sent")
            except OSError as error:
                print(name, "refused", error.errno)
        """)
    try:
        result = await run(command, sandbox(workspace, "off"), workspace, spawner)
        with pytest.raises(TimeoutError):
            receiver.accept()
    finally:
        receiver.close()
    assert "sendto refused 13" in result.output, result.output
    assert "sendmsg refused 13" in result.output, result.output


@needs_namespaces
@pytest.mark.parametrize("spawner", STARTS)
async def test_off_gives_no_listener_on_treadles_network_even_one_that_binds_itself(
    workspace: Path, spawner: bool
) -> None:
    """listen() on an unbound socket picks a port itself, without bind(), which is all
    Landlock's TCP rule looks at: under off the command's network is one of its own,
    where such a listener answers nobody outside."""
    command = python("""
        import pathlib, socket, time
        s = socket.socket()
        s.listen(1)
        pathlib.Path("port").write_text(str(s.getsockname()[1]))
        time.sleep(3)
        """)
    runner = SubprocessRunner(sandbox=sandbox(workspace, "off"), spawner=spawner)
    task = asyncio.create_task(runner.run(ProcessSpec(command, cwd=str(workspace), timeout=30)))
    while not (workspace / "port").exists() or not (workspace / "port").read_text():
        assert not task.done(), (await task).unwrap().output
        await asyncio.sleep(0.02)
    port = int((workspace / "port").read_text())
    reached = await asyncio.to_thread(_reaches, port)
    (await task).unwrap()
    assert not reached, f"the command's listener on port {port} answered from outside"


def _reaches(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize("spawner", STARTS)
async def test_off_refuses_io_uring_and_a_32_bit_system_call_and_x32_sockets(
    workspace: Path, spawner: bool
) -> None:
    """io_uring makes sockets without socket(); the x32 ABI numbers socket differently
    (held by the filter; i386's int 0x80 needs a compiler, tried by hand: EACCES)."""
    command = python("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        params = ctypes.create_string_buffer(120)
        for name, number, args in (
            ("io_uring", 425, (ctypes.c_uint(4), params)),
            ("x32 socket", 0x40000000 + 41, (ctypes.c_int(2), ctypes.c_int(2), ctypes.c_int(0))),
        ):
            result = libc.syscall(ctypes.c_long(number), *args)
            print(name, result, ctypes.get_errno())
        """)
    result = await run(command, sandbox(workspace, "off"), workspace, spawner)
    assert "io_uring -1 13" in result.output, result.output
    assert "x32 socket -1 13" in result.output, result.output


async def test_a_yes_lets_a_refused_host_through_the_proxy_once_or_for_the_session(
    workspace: Path, outside: int
) -> None:

    box = sandbox(workspace, "allowlist", allow=("allowed.test",), deny=("denied.test",))
    runner = SubprocessRunner(sandbox=box)
    fetch = f"curl -sS -f --max-time 5 http://pkg.allowed.test:{outside}/; echo curl exit $?"
    spec = ProcessSpec(fetch, cwd=str(workspace), timeout=30)

    async def fetched() -> ProcessResult:
        return (await runner.run(spec)).unwrap()

    try:
        refused = await fetched()
        runner.allow_host("pkg.allowed.test", "once")
        runner.allow_host("denied.test", "always")  # deny wins over a yes
        once = await fetched()
        after_once = await fetched()
        runner.allow_host("pkg.allowed.test", "always")
        always = [await fetched() for _ in range(2)]
        denied = await run(
            f"curl -sS -f --max-time 5 http://denied.test:{outside}/", box, workspace
        )
    finally:
        box.close()
    assert refused.refused_hosts == ("pkg.allowed.test",), refused.output
    assert "network: pkg.allowed.test not allowed" in refused.output
    assert f"{ANSWER} pkg.allowed.test" in once.output and once.refused_hosts == ()
    assert after_once.refused_hosts == ("pkg.allowed.test",), after_once.output
    for result in always:
        assert f"{ANSWER} pkg.allowed.test" in result.output, result.output
    assert "network: denied.test not allowed" in denied.output
    assert denied.refused_hosts == ()  # on network_deny: never offered
