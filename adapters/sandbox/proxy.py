"""The session's HTTP and HTTPS proxy for ``sandbox_network = allowlist``.

Commands reach the network only through it: Landlock lets them connect to its port
alone. It answers ``CONNECT host:port`` (HTTPS, and any TLS) and absolute-URI requests
(``GET http://host/path``, plain HTTP), checks the host *name* against the lists
(:func:`~treadle.domain.rules.network.host_allowed`: deny wins), and resolves it
itself (a command has no DNS: the socket filter refuses UDP). A refusal is a 403 to the
command and a host remembered for its result (``network: example.com not allowed``).

It is an asyncio server in a daemon thread of treadle: it ends with the session
(:meth:`NetworkProxy.close`) and with treadle itself, ``kill -9`` included.

Example::

    proxy = NetworkProxy(("pypi.org", "*.pythonhosted.org"), (), hosts={"pypi.org": "127.0.0.1"})
    proxy.start()                          # 127.0.0.1, a port of its own
    env = proxy_environment(proxy.url("c0ffee"))
    ...                                    # a command runs with env
    proxy.refused("c0ffee")                # ("example.com",)
    proxy.close()
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Mapping, Sequence

from treadle.domain.rules.network import host_allowed, normal_host, offerable
from treadle.domain.values.process import HostGrant

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
"""Bytes a request's head may be (its line and headers)."""
CONNECT_TIMEOUT = 15.0
CHUNK = 64 * 1024
ANONYMOUS = ""
"""The token of a request that named none (a client that drops the proxy's userinfo)."""


class NetworkProxy:
    """A proxy letting through hosts named by ``allow`` and not by ``deny``.

    ``hosts`` maps names to addresses before DNS is asked (the tests' "outside" is a
    server on 127.0.0.1 reached by name). Each command gets a ``token`` (sent back by
    its clients as the proxy URL's user name), so that a refusal goes to its result.
    """

    def __init__(
        self,
        allow: Sequence[str],
        deny: Sequence[str],
        *,
        hosts: Mapping[str, str] | None = None,
    ) -> None:
        self.allow = tuple(allow)
        self.deny = tuple(deny)
        self.hosts = {normal_host(name): address for name, address in (hosts or {}).items()}
        self.port = 0
        self._refused: dict[str, list[str]] = {}
        self._once: dict[str, int] = {}
        self._always: set[str] = set()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Listen on 127.0.0.1 (a port the kernel picks), in a thread; the port."""
        if self._thread is not None:
            return self.port
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._client, "127.0.0.1", 0, limit=HEAD_LIMIT)
                )
                self.port = self._server.sockets[0].getsockname()[1]
            except OSError as error:
                failure.append(error)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                self._server.close()  # the port is free from here
                tasks = asyncio.all_tasks(loop)
                for task in tasks:
                    task.cancel()
                if tasks:
                    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
                loop.close()

        self._thread = threading.Thread(target=serve, name="treadle-network-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread = None
            raise failure[0]
        return self.port

    def serve(self, listener: socket.socket) -> Callable[[], None]:
        """Accept connections on ``listener`` too (the proxy's port in a command's own
        network namespace); the function returned stops that."""
        loop = self._loop
        if loop is None or not self.running:
            listener.close()
            return lambda: None

        async def start() -> asyncio.Server:
            return await asyncio.start_server(self._client, sock=listener, limit=HEAD_LIMIT)

        server = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=5)

        async def close() -> None:
            server.close()  # its listening socket is closed from here

        def stop() -> None:
            with contextlib.suppress(RuntimeError, TimeoutError):  # the proxy has stopped
                asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=5)

        return stop

    def url(self, token: str) -> str:
        """The proxy's URL for the command ``token`` names."""
        return f"http://{token}:-@127.0.0.1:{self.port}"

    def refused(self, token: str) -> tuple[str, ...]:
        """The hosts refused to the command ``token`` (and to clients that named none)
        since last asked."""
        with self._lock:
            mine = self._refused.pop(token, [])
            anonymous = self._refused.pop(ANONYMOUS, []) if token != ANONYMOUS else []
        return tuple(mine + anonymous)

    def grant(self, host: str, grant: HostGrant) -> None:
        """Let ``host`` through beyond the lists: its next connection (``ONCE``), or
        every one until the proxy stops (``ALWAYS``: in memory, never written). A host
        ``deny`` names stays refused."""
        name = normal_host(host)
        if grant == "no" or not offerable(name, self.deny):
            return
        with self._lock:
            if grant == "always":
                self._always.add(name)
            else:
                self._once[name] = self._once.get(name, 0) + 1

    def _lets_through(self, host: str) -> bool:
        """The lists, then the grants (a once is used up by this connection)."""
        if host_allowed(host, self.allow, self.deny):
            return True
        name = normal_host(host)
        if not offerable(name, self.deny):
            return False
        with self._lock:
            if name in self._always:
                return True
            if self._once.get(name, 0) > 0:
                self._once[name] -= 1
                return True
        return False

    def close(self) -> None:
        """Stop listening and drop every connection; the port is free once this returns."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # already closed
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # One client --------------------------------------------------------------------

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._answer(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        except Exception:  # a bug: this connection ends, the proxy goes on
            log.exception("network proxy")
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = line.split(" ")
        if len(parts) != 3:
            await _reply(writer, 400, "not a proxy request")
            return
        method, target, version = parts
        headers = [h for h in header_lines if h]
        token = _token(headers)
        if method.upper() == "CONNECT":
            host, port = _host_port(target, 443)
        elif target.lower().startswith("http://"):
            host, port = _host_port(target[7:].split("/", 1)[0], 80)
        else:
            await _reply(writer, 400, "only CONNECT and absolute http:// requests")
            return
        if not host or port is None:
            await _reply(writer, 400, f"not a host and port: {target}")
            return
        if not self._lets_through(host):
            with self._lock:
                self._refused.setdefault(token, []).append(normal_host(host))
            await _reply(writer, 403, f"network: {normal_host(host)} not allowed")
            return
        address = self.hosts.get(normal_host(host), host)
        try:
            upstream_reader, upstream = await asyncio.wait_for(
                asyncio.open_connection(address, port), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError) as error:
            await _reply(writer, 502, f"{host}:{port}: {error.strerror or error}")
            return
        try:
            if method.upper() == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                upstream.write(_origin_form(method, target, version, headers))
            await _relay(reader, writer, upstream_reader, upstream)
        finally:
            upstream.close()


def _token(headers: Sequence[str]) -> str:
    """The user name of a ``Proxy-Authorization: Basic`` header, or :data:`ANONYMOUS`."""
    for header in headers:
        name, _, value = header.partition(":")
        if name.strip().lower() == "proxy-authorization":
            scheme, _, credentials = value.strip().partition(" ")
            if scheme.lower() == "basic":
                with contextlib.suppress(binascii.Error, UnicodeDecodeError):
                    return base64.b64decode(credentials).decode().partition(":")[0]
    return ANONYMOUS


def _host_port(authority: str, default: int) -> tuple[str, int | None]:
    """
    >>> _host_port("pypi.org:443", 80), _host_port("[::1]:8080", 80), _host_port("a.test", 80)
    (('pypi.org', 443), ('::1', 8080), ('a.test', 80))
    """
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    if not port_text:
        return host, default
    return host, int(port_text) if port_text.isdigit() and 0 < int(port_text) < 65536 else None


HOP_BY_HOP = frozenset({"proxy-authorization", "proxy-connection", "connection", "keep-alive"})


def _origin_form(method: str, target: str, version: str, headers: Sequence[str]) -> bytes:
    """The request as the origin server takes it: a path, no proxy headers, one request
    per connection (the proxy relays to the end of the upstream's answer)."""
    rest = target[7:]
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    kept = [h for h in headers if h.partition(":")[0].strip().lower() not in HOP_BY_HOP]
    lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
) -> None:
    """Bytes both ways until the upstream has said all: the client's end half-closes
    the upstream; the upstream's end ends the connection."""

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, half: bool) -> None:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
        if half and sink.can_write_eof():
            with contextlib.suppress(OSError):
                sink.write_eof()

    outward = asyncio.create_task(copy(reader, upstream, True))
    try:
        await copy(upstream_reader, writer, False)
        await writer.drain()
    finally:
        outward.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await outward


async def _reply(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = f"{text}\n".encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    with contextlib.suppress(OSError):
        await writer.drain()
