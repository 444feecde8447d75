"""The allowlist's proxy on its own, spoken to over real sockets: an HTTP server on
127.0.0.1 stands for "outside", reached by names the hosts mapping gives. No kernel
feature is needed."""

from __future__ import annotations

import base64
import contextlib
import http.server
import os
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.local_http import serving
from treadle.adapters.sandbox.proxy import NetworkProxy

SEEN: list[tuple[str, str]] = []


class _Outside(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        SEEN.append((self.path, self.headers.get("Proxy-Authorization") or ""))
        body = b"outside answered\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture(scope="module")
def outside() -> Iterator[int]:
    with serving(_Outside) as port:
        yield port


@pytest.fixture
def proxy() -> Iterator[NetworkProxy]:
    hosts = {
        "pypi.test": "127.0.0.1",
        "api.github.test": "127.0.0.1",
        "gist.github.test": "127.0.0.1",
    }
    running = NetworkProxy(("pypi.test", "*.github.test"), ("gist.github.test",), hosts=hosts)
    running.start()
    yield running
    running.close()


def ask(proxy: NetworkProxy, request: str, token: str = "") -> bytes:
    """One request to the proxy, as a client that sends ``token`` as its user name."""
    auth = base64.b64encode(f"{token}:-".encode()).decode()
    head = request.replace("\r\n\r\n", f"\r\nProxy-Authorization: Basic {auth}\r\n\r\n", 1)
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as client:
        client.sendall((head if token else request).encode())
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def test_an_allowed_name_is_forwarded_as_the_origin_server_takes_it(proxy, outside) -> None:
    SEEN.clear()
    answer = ask(
        proxy, f"GET http://pypi.test:{outside}/simple/?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", "t"
    )
    assert answer.startswith(b"HTTP/1.0 200") and answer.endswith(b"outside answered\n")
    assert SEEN == [("/simple/?q=1", "")]  # a path, and no proxy credentials passed on
    assert proxy.refused("t") == ()


def test_connect_to_an_allowed_name_opens_a_tunnel(proxy, outside) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as client:
        client.sendall(f"CONNECT api.github.test:{outside} HTTP/1.1\r\n\r\n".encode())
        assert client.recv(4096) == b"HTTP/1.1 200 Connection Established\r\n\r\n"
        client.sendall(
            b"GET /through HTTP/1.1\r\nHost: api.github.test\r\nConnection: close\r\n\r\n"
        )
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    assert answer.endswith(b"outside answered\n")


def test_a_denied_or_unlisted_name_gets_403_and_is_kept_for_its_command(proxy, outside) -> None:
    denied = ask(proxy, f"CONNECT gist.github.test:{outside} HTTP/1.1\r\n\r\n", "one")
    unlisted = ask(proxy, "GET http://example.com/ HTTP/1.1\r\n\r\n", "two")
    assert denied.startswith(b"HTTP/1.1 403 Forbidden")
    assert denied.endswith(b"network: gist.github.test not allowed\n")
    assert unlisted.endswith(b"network: example.com not allowed\n")
    assert proxy.refused("one") == ("gist.github.test",)
    assert proxy.refused("two") == ("example.com",)
    assert proxy.refused("one") == ()  # said once


def test_a_refusal_to_a_client_that_named_no_command_goes_to_the_next_one_asking(proxy) -> None:
    ask(proxy, "GET http://example.com/ HTTP/1.1\r\n\r\n")
    assert proxy.refused("any") == ("example.com",)


def test_an_address_is_not_a_name_on_the_list(proxy, outside) -> None:
    answer = ask(proxy, f"GET http://127.0.0.1:{outside}/ HTTP/1.1\r\n\r\n", "t")
    assert answer.startswith(b"HTTP/1.1 403")
    assert proxy.refused("t") == ("127.0.0.1",)


def test_what_is_no_proxy_request_is_a_400_and_an_unreachable_host_a_502(proxy) -> None:
    assert ask(proxy, "GET /local HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert ask(proxy, "CONNECT pypi.test:99999 HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    assert ask(proxy, f"CONNECT pypi.test:{port} HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 502")


def test_closing_frees_the_port(proxy) -> None:
    port = proxy.port
    proxy.close()
    assert not proxy.running
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


# What a hostile command tries against the proxy (the adversarial pass) ------------------


class _Recorder:
    """A raw TCP server that keeps every byte sent to it and answers one response per
    connection, without closing: a keep-alive upstream that would serve a second,
    smuggled request."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(client,), daemon=True).start()

    def _one(self, client: socket.socket) -> None:
        data = b""
        client.settimeout(2)
        with client:
            answered = False
            try:
                while chunk := client.recv(65536):
                    data += chunk
                    if b"\r\n\r\n" in data and not answered:
                        client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                        answered = True
            except OSError:
                pass
            self.received.append(data)

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def recorder() -> Iterator[_Recorder]:
    running = _Recorder()
    yield running
    running.close()


def _exchange(proxy: NetworkProxy, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as client:
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := client.recv(65536):
            answer += chunk
    return answer


def _received(recorder: _Recorder) -> bytes:
    for _ in range(200):
        if recorder.received:
            return recorder.received[0]
        threading.Event().wait(0.02)
    raise AssertionError("the upstream got no connection")


def test_the_host_header_is_the_host_the_request_was_checked_for(proxy, recorder) -> None:
    """A Host header naming another site on the same front (a CDN serves many) would
    reach a host the lists never saw: the proxy sends the target's own."""
    request = (
        f"GET http://pypi.test:{recorder.port}/simple/ HTTP/1.1\r\n"
        "Host: gist.github.test\r\nhOsT: evil.test\r\n\r\n"
    )
    answer = _exchange(proxy, request.encode())
    assert answer.startswith(b"HTTP/1.1 200")
    sent = _received(recorder).decode("latin-1")
    hosts = [line for line in sent.split("\r\n") if line.lower().startswith("host:")]
    assert hosts == [f"Host: pypi.test:{recorder.port}"], sent


def test_a_request_smuggled_after_the_first_never_reaches_the_upstream(proxy, recorder) -> None:
    """Plain HTTP is one request per connection: what follows its body is not passed on
    (a keep-alive upstream would serve it, Host and all)."""
    first = f"POST http://pypi.test:{recorder.port}/up HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody"
    smuggled = "GET /admin HTTP/1.1\r\nHost: gist.github.test\r\n\r\n"
    _exchange(proxy, (first + smuggled).encode())
    sent = _received(recorder)
    assert sent.endswith(b"\r\n\r\nbody"), sent
    assert b"/admin" not in sent and b"gist" not in sent


def test_a_chunked_body_is_passed_on_to_its_last_chunk_and_no_further(proxy, recorder) -> None:
    first = (
        f"POST http://pypi.test:{recorder.port}/up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4\r\nbody\r\n0\r\n\r\n"
    )
    _exchange(proxy, (first + "GET /admin HTTP/1.1\r\n\r\n").encode())
    sent = _received(recorder)
    assert sent.endswith(b"4\r\nbody\r\n0\r\n\r\n"), sent
    assert b"/admin" not in sent


def test_a_body_both_sized_and_chunked_is_refused(proxy, recorder) -> None:
    request = (
        f"POST http://pypi.test:{recorder.port}/ HTTP/1.1\r\nContent-Length: 4\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    )
    assert _exchange(proxy, request.encode()).startswith(b"HTTP/1.1 400")


@pytest.fixture
def everything() -> Iterator[NetworkProxy]:
    """A proxy letting every name through (``network_allow = ["*"]``), as a person who
    only wants a deny list would set it."""
    running = NetworkProxy(("*",), ("evil.test",))
    running.start()
    yield running
    running.close()


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "LOCALHOST.", "127.1", "2130706433", "0x7f000001", "0.0.0.0",
     "[::1]", "[::ffff:127.0.0.1]", "169.254.169.254"],
)  # fmt: skip
def test_a_glob_never_lets_a_command_reach_treadles_own_loopback(everything, outside, host) -> None:
    """A name the lists let through by a glob, or an address spelled any way, that leads to
    the machine's own loopback (or the link-local metadata service) is refused: a command
    under allowlist must not reach treadle's local servers through the proxy (nor a name
    rebound to 127.0.0.1)."""
    for request in (f"CONNECT {host}:{outside} HTTP/1.1\r\n\r\n",
                    f"GET http://{host}:{outside}/ HTTP/1.1\r\n\r\n"):  # fmt: skip
        answer = ask(everything, request)
        assert b" 200 " not in answer and b"outside answered" not in answer, (request, answer)
        assert answer.startswith((b"HTTP/1.1 403", b"HTTP/1.1 502")), (request, answer)


def test_a_loopback_named_exactly_on_the_list_is_reached() -> None:
    with http_server() as port:
        named = NetworkProxy(("localhost",), ())
        named.start()
        try:
            answer = ask(named, f"GET http://localhost:{port}/ HTTP/1.1\r\n\r\n")
        finally:
            named.close()
    assert answer.startswith(b"HTTP/1.0 200"), answer


@contextlib.contextmanager
def http_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Outside)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_an_idle_client_holds_up_no_other(proxy, outside) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as idle:
        idle.sendall(b"CONNECT pypi.test:")  # and nothing more
        answer = ask(proxy, f"GET http://pypi.test:{outside}/ HTTP/1.1\r\n\r\n")
    assert answer.endswith(b"outside answered\n")


def test_a_client_that_never_finishes_its_request_is_dropped() -> None:
    brief = NetworkProxy(("pypi.test",), (), head_timeout=0.3)
    brief.start()
    try:
        with socket.create_connection(("127.0.0.1", brief.port), timeout=5) as idle:
            idle.sendall(b"CONNECT pypi.test:")
            assert idle.recv(100) == b""  # closed by the proxy, well before 5 s
    finally:
        brief.close()


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_flood_of_connections_takes_no_more_than_its_share_of_treadles_descriptors(
    outside,
) -> None:
    """Every connection to the proxy is a descriptor of treadle's: a command that opens
    thousands would leave treadle none for its own files. Past ``max_clients`` the
    proxy closes new ones at once."""
    capped = NetworkProxy(("pypi.test",), (), hosts={"pypi.test": "127.0.0.1"}, max_clients=20)
    capped.start()
    before = _descriptors()
    clients = []
    try:
        for _ in range(60):
            client = socket.create_connection(("127.0.0.1", capped.port), timeout=5)
            client.sendall(b"CONNECT pypi.test:")
            clients.append(client)
        threading.Event().wait(0.5)  # the proxy's thread accepts them
        held = _descriptors() - before - len(clients)
        dropped = 0
        for client in clients:
            client.settimeout(0.05)
            try:
                dropped += client.recv(100) == b""
            except ConnectionResetError:
                dropped += 1
            except TimeoutError:
                pass
    finally:
        for client in clients:
            client.close()
    try:
        assert held <= 20 + 2, held
        assert dropped >= 40
        answer = ask(capped, f"GET http://pypi.test:{outside}/ HTTP/1.1\r\n\r\n")
        assert answer.endswith(b"outside answered\n")  # room again once they are gone
    finally:
        capped.close()
