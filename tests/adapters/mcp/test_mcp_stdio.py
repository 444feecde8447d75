"""MCP over stdio against real servers: the tests' own (built with the SDK's server API)
and ``mcp-server-time`` from PyPI. No mock of the SDK anywhere."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.adapters.mcp.support import (
    REFERENCE_SERVER,
    Session,
    events_of,
    eventually,
    file_size,
    stdio_server,
    tool_context,
)
from tests.processes import gone_within, is_running, wait_for_pid
from treadle.adapters.mcp.config import McpServerConfig
from treadle.adapters.mcp.servers import McpServers
from treadle.domain.values.events import Notice
from treadle.domain.values.tools import ToolResult

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-stdio")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(folder: Path) -> AsyncIterator[Session]:
    """One test server for the tests that leave it running, and the reference server."""
    os.environ["MCP_TEST_SECRET_TOKEN"] = "kept-from-the-server-0123"
    configs = [
        stdio_server(
            "test",
            folder,
            "--pid-file",
            str(folder / "test.pid"),
            tool_timeout=0.5,
            env={"GIVEN_BY_CONFIG": "yes"},
        ),
        McpServerConfig("time", command=str(REFERENCE_SERVER), args=("--local-timezone", "UTC")),
    ]
    session = Session(McpServers(configs, workspace=str(folder), log_dir=str(folder), grace=0.2))
    try:
        yield await session.start()
    finally:
        del os.environ["MCP_TEST_SECRET_TOKEN"]
        await session.servers.close()


def result(outcome: object) -> ToolResult:
    assert isinstance(outcome, ToolResult)
    return outcome


async def test_the_servers_tools_are_offered_under_names_the_providers_accept(shared) -> None:
    names = set(shared.tools)
    assert {"mcp__test__echo", "mcp__test__hang", "mcp__test__files_read"} <= names
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= names
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in names)
    assert shared.notices == []


async def test_renamed_arguments_reach_the_server_under_its_own_names(shared, folder) -> None:
    offered = shared.tools["mcp__test__query"].spec.parameters["properties"]
    assert all(re.fullmatch(r"[a-zA-Z0-9_.-]{1,64}", key) for key in offered)
    long = next(key for key in offered if key.startswith("kkk"))
    arguments = {"_top": 3, "filter_id_": "a1", long: "x", "options": {"sort_by": "name"}}
    outcome = result(await shared.call("mcp__test__query", tool_context(folder), **arguments))
    assert (outcome.text, outcome.is_error) == ("queried", False)
    [call] = [line for line in events_of(folder, "test") if " tools/call query " in line]
    assert json.loads(call.split(" ", 3)[3]) == {
        "$top": 3,
        "filter[id]": "a1",
        "k" * 70: "x",
        "options": {"sort by": "name"},
    }


async def test_tools_count_as_writing_unless_the_server_says_they_only_read(shared) -> None:
    access = {name: tool.access for name, tool in shared.tools.items()}
    assert access["mcp__test__echo"] == access["mcp__time__get_current_time"] == "read"
    assert access["mcp__test__fail"] == access["mcp__test__spawn_child"] == "write"


async def test_a_tool_that_answers(shared, folder) -> None:
    outcome = result(await shared.call("mcp__test__echo", tool_context(folder), text="hi"))
    assert (outcome.text, outcome.is_error) == ("echo: hi", False)
    assert outcome.status.startswith("ok · ")


async def test_a_tool_that_fails_is_a_failed_result_the_model_reads(shared, folder) -> None:
    outcome = result(await shared.call("mcp__test__fail", tool_context(folder)))
    assert outcome.is_error and outcome.status.startswith("tool error")
    assert "failed on purpose" in outcome.text


async def test_an_image_is_described_by_its_type_and_size(shared, folder) -> None:
    outcome = result(await shared.call("mcp__test__image", tool_context(folder)))
    assert outcome.text == "here is a picture\n[image: image/png, 73 bytes]"


async def test_a_long_result_is_bounded_like_a_commands_output(shared, folder) -> None:
    context = tool_context(folder, output_limit=1000)
    outcome = result(await shared.call("mcp__test__big", context, size=100_000))
    assert len(outcome.text) < 1500 and "99,000 bytes (0 lines) omitted" in outcome.text
    saved = re.search(r"full output in (\S+)", outcome.text)
    assert saved is not None and file_size(saved.group(1)) == 100_000
    assert outcome.status.endswith("output cut")


async def test_a_call_past_its_deadline_is_cancelled_and_the_server_told(shared, folder) -> None:
    outcome = result(await shared.call("mcp__test__hang", tool_context(folder)))
    assert outcome.is_error and outcome.status == "deadline 0.5 s"
    assert "no result within 0.5 s" in outcome.text

    def told() -> bool:
        seen = events_of(folder, "test")
        return "hang cancelled" in seen and any("timed out" in line for line in seen)

    assert await eventually(told)
    after = result(await shared.call("mcp__test__echo", tool_context(folder), text="still"))
    assert after.text == "echo: still"  # a server that heard the cancel is kept


async def test_esc_cancels_a_call_with_the_protocols_notification(shared, folder) -> None:
    started = len([line for line in events_of(folder, "test") if line == "hang started"])
    call = asyncio.ensure_future(shared.call("mcp__test__hang", tool_context(folder)))
    assert await eventually(lambda: events_of(folder, "test").count("hang started") > started)
    call.cancel()  # what the loop does on Esc
    call.cancel()  # twice, as a second Esc would: the server is still told once
    with pytest.raises(asyncio.CancelledError):
        await call

    def told() -> bool:
        return any("caller cancelled" in line for line in events_of(folder, "test"))

    assert await eventually(told)
    after = result(await shared.call("mcp__test__echo", tool_context(folder), text="kept"))
    assert after.text == "echo: kept"


async def test_the_server_runs_with_the_commands_environment_and_its_own(shared, folder) -> None:
    names = ["GIVEN_BY_CONFIG", "MCP_TEST_SECRET_TOKEN", "CI"]
    outcome = result(await shared.call("mcp__test__environment", tool_context(folder), names=names))
    seen = json.loads(outcome.text)
    assert seen["cwd"] == str(folder)
    assert (seen["GIVEN_BY_CONFIG"], seen["MCP_TEST_SECRET_TOKEN"], seen["CI"]) == (
        "yes",
        None,
        "1",
    )


async def test_the_reference_server_from_pypi_answers(shared, folder) -> None:
    context = tool_context(folder)
    outcome = result(await shared.call("mcp__time__get_current_time", context, timezone="UTC"))
    assert not outcome.is_error and json.loads(outcome.text)["timezone"] == "UTC"
    wrong = result(await shared.call("mcp__time__get_current_time", context, timezone="Mars/Base"))
    assert wrong.is_error and "Mars/Base" in wrong.text


async def test_servers_that_fail_to_start_are_reported_once_and_the_rest_go_on(
    tmp_path: Path,
) -> None:
    configs = [
        stdio_server(
            "silent",
            tmp_path,
            "--silent",
            "--pid-file",
            str(tmp_path / "silent.pid"),
            startup_timeout=0.5,
        ),
        stdio_server("broken", tmp_path, "--exit-at-once", "2"),
        McpServerConfig("missing", command=str(tmp_path / "no-such-server")),
        McpServerConfig("off", command=str(tmp_path / "never-run"), enabled=False),
        stdio_server("fine", tmp_path),
    ]
    session = await Session(
        McpServers(configs, workspace=str(tmp_path), log_dir=str(tmp_path))
    ).start()
    try:
        silent_pid = wait_for_pid(tmp_path / "silent.pid")
        texts = [notice.text for notice in session.notices if isinstance(notice, Notice)]
        assert texts == [
            "MCP server silent did not start: no answer to initialize within 0.5 s. "
            "Its tools are not available.",
            "MCP server broken did not start: exited with code 2 before answering initialize "
            "(its last words: error: TEST_SERVER_KEY is not set). Its tools are not available.",
            f"MCP server missing did not start: cannot start {tmp_path / 'no-such-server'}: "
            "No such file or directory. Its tools are not available.",
        ]
        assert {name.split("__")[1] for name in session.tools} == {"fine"}
        assert gone_within(silent_pid), "a server that never answered was left running"
        states = {status.config.name: status.state for status in session.servers.statuses()}
        assert states == {
            "silent": "failed",
            "broken": "failed",
            "missing": "failed",
            "off": "disabled",
            "fine": "started",
        }
    finally:
        await session.servers.close()


async def test_a_server_that_crashes_mid_call_fails_the_call_and_is_reported_once(
    tmp_path: Path,
) -> None:
    config = stdio_server("crashy", tmp_path, "--pid-file", str(tmp_path / "crashy.pid"))
    session = await Session(
        McpServers([config], workspace=str(tmp_path), log_dir=str(tmp_path))
    ).start()
    try:
        pid = wait_for_pid(tmp_path / "crashy.pid")
        context = tool_context(tmp_path)
        crashed = result(await session.call("mcp__crashy__crash", context))
        assert crashed.is_error and crashed.status == "server gone"
        assert "went away during the call: it exited with code 3" in crashed.text
        later = result(await session.call("mcp__crashy__echo", context, text="anyone?"))
        assert later.status == "not running" and "exited with code 3" in later.text
        assert [notice.kind for notice in session.notices if isinstance(notice, Notice)] == [
            "mcp_server_stopped"
        ]
        assert not is_running(pid)
    finally:
        await session.servers.close()


async def test_a_server_that_ignores_sigterm_and_what_it_started_are_stopped(
    tmp_path: Path,
) -> None:
    config = stdio_server(
        "stubborn", tmp_path, "--ignore-sigterm", "--pid-file", str(tmp_path / "stubborn.pid")
    )
    servers = McpServers([config], workspace=str(tmp_path), log_dir=str(tmp_path), grace=0.2)
    session = await Session(servers).start()
    pid = wait_for_pid(tmp_path / "stubborn.pid")
    spawned = result(await session.call("mcp__stubborn__spawn_child", tool_context(tmp_path)))
    child = int(spawned.text.split()[-1])
    assert is_running(pid) and is_running(child)
    await servers.close()
    assert "SIGTERM ignored" in events_of(tmp_path, "stubborn")
    assert not is_running(pid) and not is_running(child)


async def test_a_server_that_does_not_stop_when_esc_cancels_is_killed(tmp_path: Path) -> None:
    """A server that cannot hear the cancel (its event loop is blocked) fails the ping
    that follows it, and is stopped with all it started."""
    config = stdio_server("wedged", tmp_path, "--pid-file", str(tmp_path / "wedged.pid"))
    servers = McpServers(
        [config], workspace=str(tmp_path), log_dir=str(tmp_path), probe_timeout=0.3
    )
    session = await Session(servers).start()
    try:
        pid = wait_for_pid(tmp_path / "wedged.pid")
        call = asyncio.ensure_future(session.call("mcp__wedged__wedge", tool_context(tmp_path)))
        assert await eventually(lambda: "wedge started" in events_of(tmp_path, "wedged"))
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await eventually(lambda: not is_running(pid))
        notices = [n.text for n in session.notices if isinstance(n, Notice)]
        assert notices == [
            "MCP server wedged stopped: it stopped answering after a call was cancelled; "
            "it was stopped. Its tools now fail."
        ]
    finally:
        await servers.close()
