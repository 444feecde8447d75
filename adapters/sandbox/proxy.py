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
import ipaddress
import logging
import re
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from treadle.domain.rules.network import (
    host_allowed,
    host_named_exactly,
    normal_host,
    offerable,
)
from treadle.domain.values.process import HostGrant

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
"""Bytes a request's head may be (its line and headers)."""
CONNECT_TIMEOUT = 15.0
HEAD_TIMEOUT = 30.0
"""Seconds a client has to send its request's head: a client that sends none (or a
byte at a time) is dropped rather than held for ever."""
MAX_CLIENTS = 256
"""Connections the proxy holds at once. Each is a descriptor of treadle's (two for a
tunnel): a command that opened thousands would leave treadle none for its own files;
past this a new connection is closed at once."""
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
        head_timeout: float = HEAD_TIMEOUT,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.allow = tuple(allow)
        self.deny = tuple(deny)
        self.hosts = {normal_host(name): address for name, address in (hosts or {}).items()}
        self.head_timeout = head_timeout
        self.max_clients = max_clients
        self.port = 0
        self._clients = 0
        self._refused: dict[str, list[str]] = {}
        self._once: dict[str, int] = {}
        self._always: set[str] = set()
        self._granted: set[str] = set()
        """Names a yes let through: the person named each exactly."""
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
            self._granted.add(name)
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
        if self._clients >= self.max_clients:  # a flood: its descriptor goes back at once
            writer.close()
            return
        self._clients += 1
        try:
            await self._answer(reader, writer)
        except (
            OSError,
            TimeoutError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ):
            pass
        except Exception:  # a bug: this connection ends, the proxy goes on
            log.exception("network proxy")
        finally:
            self._clients -= 1
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.head_timeout)
        line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = line.split(" ")
        if len(parts) != 3:
            await _reply(writer, 400, "not a proxy request")
            return
        method, target, version = parts
        headers = [h for h in header_lines if h]
        token = _token(headers)
        connect = method.upper() == "CONNECT"
        framing: Framing | None = None
        if connect:
            host, port = _host_port(target, 443)
        elif target.lower().startswith("http://"):
            host, port = _host_port(target[7:].split("/", 1)[0], 80)
            framing = _framing(headers)
            if framing is None:
                await _reply(writer, 400, "a body framed two ways, or neither as HTTP/1.1 says")
                return
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
        try:
            addresses = await self._addresses(host, port)
        except OSError as error:
            await _reply(writer, 502, f"{host}:{port}: {error.strerror or error}")
            return
        if not addresses:  # the machine's own loopback, reached by a glob or a spelling
            with self._lock:
                self._refused.setdefault(token, []).append(normal_host(host))
            await _reply(
                writer,
                403,
                f"network: {normal_host(host)} not allowed (it leads to this machine's own "
                "loopback or link-local addresses, which only a name listed exactly reaches)",
            )
            return
        try:
            upstream_reader, upstream = await asyncio.wait_for(
                _open(addresses, port), CONNECT_TIMEOUT
            )
        except (OSError, TimeoutError) as error:
            await _reply(writer, 502, f"{host}:{port}: {error.strerror or error}")
            return
        try:
            if framing is None:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await _relay(reader, writer, upstream_reader, upstream, None)
            else:
                upstream.write(_origin_form(method, target, version, headers))
                await _relay(reader, writer, upstream_reader, upstream, framing)
        finally:
            upstream.close()

    async def _addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, looked up once (the connection goes to
        what was checked, so a name rebound between the two changes nothing). Empty when
        the name leads to the machine's own loopback, an unspecified or a link-local
        address (the cloud's metadata service) and ``allow`` does not name it exactly:
        a glob (``*``, ``*.corp.test``) or an address spelled another way reaches no
        local server of treadle's machine."""
        name = normal_host(host)
        if name in self.hosts:  # the tests' "outside": chosen by whoever built the proxy
            return [self.hosts[name]]
        loop = asyncio.get_running_loop()
        found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(entry[4][0]) for entry in found))
        exactly = host_named_exactly(host, self.allow) or name in self._granted
        if any(_local(address) for address in addresses) and not exactly:
            return []
        return addresses


def _local(address: str) -> bool:
    """Whether ``address`` is this machine's (loopback, unspecified) or link-local.

    >>> _local("127.0.0.2"), _local("::ffff:127.0.0.1"), _local("0.0.0.0"), _local("10.0.0.1")
    (True, True, True, False)
    """
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified or ip.is_link_local or ip.is_multicast


async def _open(
    addresses: Sequence[str], port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the first of ``addresses`` that answers."""
    failure: OSError = OSError("no address")
    for address in addresses:
        try:
            return await asyncio.open_connection(address, port)
        except OSError as error:
            failure = error
    raise failure


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


HOP_BY_HOP = frozenset(
    {"proxy-authorization", "proxy-connection", "connection", "keep-alive", "host"}
)
"""Headers not passed on; ``Host`` is the target's own (another would let a request
reach a site the lists never checked, on the same front)."""

Framing = int | Literal["chunked"]
"""How a plain request's body ends: after so many bytes, or at its last chunk."""
CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")


def _framing(headers: Sequence[str]) -> Framing | None:
    """The body's length from ``Content-Length`` or ``Transfer-Encoding: chunked`` (0
    without either), or None when both are there, or either is malformed: the proxy
    passes on the body alone, so that nothing after it reaches the upstream as a
    second, unchecked request.

    >>> _framing(["Content-Length: 4"]), _framing(["Transfer-Encoding: Chunked"]), _framing([])
    (4, 'chunked', 0)
    >>> _framing(["Content-Length: 4", "Transfer-Encoding: chunked"])
    >>> _framing(["Content-Length: -1"]), _framing(["Content-Length: 1", "Content-Length: 2"])
    (None, None)
    """
    lengths, codings = set(), []
    for header in headers:
        name, _, value = header.partition(":")
        name, value = name.strip().lower(), value.strip()
        if name == "content-length":
            lengths.add(value)
        elif name == "transfer-encoding":
            codings.append(value.lower())
    if codings:
        return "chunked" if codings == ["chunked"] and not lengths else None
    if not lengths:
        return 0
    (length,) = lengths if len(lengths) == 1 else ("",)
    return int(length) if length.isascii() and length.isdigit() else None


def _origin_form(method: str, target: str, version: str, headers: Sequence[str]) -> bytes:
    """The request as the origin server takes it: a path, no proxy headers, one request
    per connection (the proxy relays to the end of the upstream's answer)."""
    rest = target[7:]
    path = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    kept = [h for h in headers if h.partition(":")[0].strip().lower() not in HOP_BY_HOP]
    authority = rest.split("/", 1)[0].rpartition("@")[2]
    lines = [f"{method} {path} {version}", f"Host: {authority}", *kept, "Connection: close"]
    lines += ["", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
    framing: Framing | None,
) -> None:
    """Bytes both ways until the upstream has said all: the client's end (or, for a
    plain request, its body's, ``framing``) half-closes the upstream; the upstream's
    end ends the connection."""

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, half: bool) -> None:
        while data := await source.read(CHUNK):
            sink.write(data)
            await sink.drain()
        if half and sink.can_write_eof():
            with contextlib.suppress(OSError):
                sink.write_eof()

    async def body(framing: Framing) -> None:
        if framing == "chunked":
            await _chunked(reader, upstream)
        else:
            await _exactly(reader, upstream, framing)
        if upstream.can_write_eof():
            with contextlib.suppress(OSError):
                upstream.write_eof()

    outward = asyncio.create_task(
        copy(reader, upstream, True) if framing is None else body(framing)
    )
    try:
        await copy(upstream_reader, writer, False)
        await writer.drain()
    finally:
        outward.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await outward


async def _exactly(source: asyncio.StreamReader, sink: asyncio.StreamWriter, size: int) -> None:
    while size > 0:
        data = await source.read(min(size, CHUNK))
        if not data:
            return
        sink.write(data)
        await sink.drain()
        size -= len(data)


async def _chunked(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """A chunked body as it came, to its last chunk and trailers, and not a byte more
    (a size that is not plain hex ends the relay: nothing ambiguous is passed on)."""
    while True:
        line = await source.readuntil(b"\r\n")
        if not CHUNK_SIZE.fullmatch(line[:-2].partition(b";")[0].strip()):
            return
        sink.write(line)
        size = int(line[:-2].partition(b";")[0].strip(), 16)
        if size == 0:
            while (trailer := await source.readuntil(b"\r\n")) != b"\r\n":
                sink.write(trailer)
            sink.write(trailer)
            await sink.drain()
            return
        await _exactly(source, sink, size + 2)


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
