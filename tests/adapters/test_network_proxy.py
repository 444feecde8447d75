"""The allowlist's proxy on its own, spoken to over real sockets: an HTTP server on
127.0.0.1 stands for "outside", reached by names the hosts mapping gives. No kernel
feature is needed."""

from __future__ import annotations

import base64
import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

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
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Outside)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


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
