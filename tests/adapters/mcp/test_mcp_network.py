"""MCP servers started by a command under the network rules (issue 28): the session's
``sandbox_network``, or the server's own ``network``, over a real server that opens a
TCP connection to a listener the test starts on 127.0.0.1."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.mcp.support import Session, stdio_server, tool_context
from treadle.adapters.mcp.config import TableProblem, check_table
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.sandbox import probe
from treadle.adapters.sandbox.landlock import probe_seccomp
from treadle.domain.rules.network import LANDLOCK_NET_ABI, NetworkPolicy
from treadle.domain.values.tools import ToolResult

SUPPORT = probe()
SECCOMP = probe_seccomp() if SUPPORT.available else SUPPORT.reason
kernel = [
    pytest.mark.skipif(
        SUPPORT.abi < LANDLOCK_NET_ABI,
        reason=f"Landlock network rules need ABI {LANDLOCK_NET_ABI}",
    ),
    pytest.mark.skipif(bool(SECCOMP), reason=SECCOMP or "seccomp"),
]


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


async def connect_from(
    folder: Path, port: int, session: NetworkPolicy, **own: str
) -> tuple[str, Session]:
    configs = [stdio_server("net", folder, **own)]
    servers = McpServers(
        configs, workspace=str(folder), log_dir=str(folder), grace=0.2, network=session
    )
    started = await Session(servers).start()
    try:
        outcome = await started.call("mcp__net__connect", tool_context(folder), port=port)
    finally:
        await servers.close()
    assert isinstance(outcome, ToolResult), outcome
    return outcome.text, started


@pytest.mark.slow
@pytest.mark.parametrize(
    ("session", "own", "reached"),
    [
        pytest.param("on", {}, True, id="the session's on"),
        pytest.param("off", {}, False, id="the session's off", marks=kernel),
        pytest.param("on", {"network": "off"}, False, id="its own off", marks=kernel),
        pytest.param("off", {"network": "on"}, True, id="its own on", marks=kernel),
        pytest.param("on", {"network": "allowlist"}, False, id="its own allowlist", marks=kernel),
    ],
)
async def test_a_stdio_server_reaches_what_its_network_mode_lets_it(
    tmp_path: Path, listener: int, session: str, own: dict[str, str], reached: bool
) -> None:
    text, started = await connect_from(tmp_path, listener, NetworkPolicy(session), **own)  # type: ignore[arg-type]
    assert not started.notices, started.notices
    assert (text == "connected") is reached, text


def test_a_server_s_network_is_one_of_the_modes_and_only_for_stdio() -> None:
    assert check_table("a", {"command": "x", "network": "off"})["network"] == "off"
    with pytest.raises(TableProblem, match="network: must be one of on, off, allowlist"):
        check_table("a", {"command": "x", "network": "closed"})
