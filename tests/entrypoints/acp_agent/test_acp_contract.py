"""``treadle acp`` driven over a real pipe by the official SDK's client side (issue 24):
a turn's updates in order, permissions answered each way, cancel as Esc, load and go on,
modes, and what the client sees of bad requests."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import ClientCapabilities, McpServerStdio

from tests.entrypoints.acp_agent.acp_client import RecordingClient, treadle_acp
from tests.processes import gone_within, is_running, wait_for_pid, write_script

pytestmark = [pytest.mark.slow]


def bash(command: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def saying(text: str) -> dict[str, object]:
    return {"text": [text]}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("old line\n")
    return folder


async def new_session(conn: Any, workspace: Path) -> str:
    session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    return str(session.session_id)


async def test_a_turn_streams_its_call_its_output_its_diff_then_the_answer(
    tmp_path: Path, workspace: Path
) -> None:
    edit = {"path": "notes.txt", "old_string": "old line", "new_string": "new line"}
    script = write_script(
        tmp_path,
        bash("echo built; echo twice"),
        {"tool_calls": [{"name": "edit_file", "arguments": edit}]},
        {"text": ["All ", "done", "."]},
    )
    client = RecordingClient()
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "auto"
    ) as (
        conn,
        _,
    ):
        session_id = await new_session(conn, workspace)
        reply = await conn.prompt(session_id=session_id, prompt=[text_block("fix it")])
    assert reply.stop_reason == "end_turn"
    calls = [u for u in client.updates if u.session_update in ("tool_call", "tool_call_update")]
    started, ran, opened, edited = calls[0], calls[-3], calls[-2], calls[-1]
    assert (started.session_update, started.kind, started.title) == (
        "tool_call",
        "execute",
        "bash: echo built; echo twice",
    )
    assert ran.status == "completed" and "built\ntwice" in ran.content[-1].content.text
    assert opened.session_update == "tool_call" and opened.kind == "edit"
    assert [loc.path for loc in opened.locations] == [str(workspace / "notes.txt")]
    assert edited.status == "completed"
    diff = edited.content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == (
        "diff",
        str(workspace / "notes.txt"),
        "old line\n",
        "new line\n",
    )
    kinds = client.kinds()
    assert kinds.index("agent_message_chunk") > kinds.index("tool_call_update")
    assert client.text() == "All done."


@pytest.mark.parametrize(
    ("answer", "ran", "asked_again"),
    [
        ("once", True, True),
        ("always", True, False),
        ("reject", False, True),
        ("cancel", False, True),
    ],
)
async def test_a_call_the_policy_asks_about_is_a_permission_request_answered_each_way(
    tmp_path: Path, workspace: Path, answer: str, ran: bool, asked_again: bool
) -> None:
    script = write_script(tmp_path, bash("touch one.txt"), bash("touch two.txt"), saying("ok"))
    client = RecordingClient(answer=answer)
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "ask"
    ) as (
        conn,
        _,
    ):
        session_id = await new_session(conn, workspace)
        reply = await conn.prompt(session_id=session_id, prompt=[text_block("write")])
    assert reply.stop_reason == "end_turn"
    assert client.asked[0].title == "bash: touch one.txt"
    assert client.asked[0].tool_call_id == "call_1"  # the call the editor already shows
    assert (workspace / "one.txt").exists() is ran
    assert len(client.asked) == (2 if asked_again else 1)
    finished = [u for u in client.updates if getattr(u, "status", None) in ("completed", "failed")]
    assert finished[0].status == ("completed" if ran else "failed")


async def test_cancel_stops_the_running_command_tree_at_once_and_the_prompt_ends_cancelled(
    tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path, bash("sleep 30 & echo $! > sleep.pid; wait"), saying("never"))
    client = RecordingClient()
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "auto"
    ) as (
        conn,
        _,
    ):
        session_id = await new_session(conn, workspace)
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[text_block("wait")])
        )
        pid = await asyncio.to_thread(wait_for_pid, workspace / "sleep.pid")
        loop = asyncio.get_running_loop()
        cancelled = loop.time()
        await conn.cancel(session_id=session_id)
        await asyncio.to_thread(gone_within, pid, 2.0)
        gone = loop.time() - cancelled
        reply = await prompt
    assert not is_running(pid)
    assert gone < 0.2, f"the command's tree took {gone:.3f} s to go"
    assert reply.stop_reason == "cancelled"


async def test_a_paused_session_loads_with_its_history_and_a_second_prompt_goes_on(
    tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path, bash("sleep 30"), saying("never"))
    client = RecordingClient()
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "auto"
    ) as (
        conn,
        _,
    ):
        session_id = await new_session(conn, workspace)
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[text_block("the first task")])
        )
        await client.until(lambda c: "tool_call" in c.kinds())
        await conn.cancel(session_id=session_id)
        assert (await prompt).stop_reason == "cancelled"
    script = write_script(tmp_path, saying("Going on from where it stopped."))
    again = RecordingClient()
    async with treadle_acp(again, tmp_path, "--model", f"script:{script}") as (conn, _):
        await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        replayed = list(again.updates)
        reply = await conn.prompt(session_id=session_id, prompt=[text_block("go on")])
    assert replayed[0].session_update == "user_message_chunk"
    assert replayed[0].content.text == "the first task"
    assert any(u.session_update == "tool_call" and "sleep 30" in u.title for u in replayed)
    assert reply.stop_reason == "end_turn"
    assert again.text().endswith("Going on from where it stopped.")


async def test_switching_to_read_only_refuses_a_command_that_auto_ran(
    tmp_path: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path, bash("touch first"), saying("done"), bash("touch second"), saying("refused")
    )
    client = RecordingClient()
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "auto"
    ) as (
        conn,
        _,
    ):
        session_id = await new_session(conn, workspace)
        await conn.prompt(session_id=session_id, prompt=[text_block("one")])
        await conn.set_session_mode(session_id=session_id, mode_id="read-only")
        await conn.prompt(session_id=session_id, prompt=[text_block("two")])
        with pytest.raises(RequestError):
            await conn.set_session_mode(session_id=session_id, mode_id="yolo")
    assert (workspace / "first").exists()
    assert not (workspace / "second").exists()
    assert any(getattr(u, "current_mode_id", None) == "read-only" for u in client.updates)
    assert client.asked == []


async def test_bad_requests_are_json_rpc_errors_and_the_agent_goes_on(
    tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path, saying("still here"))
    client = RecordingClient()
    async with treadle_acp(client, tmp_path, "--model", f"script:{script}") as (conn, process):
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="no-such-session", prompt=[text_block("x")])
        assert unknown.value.code == -32602
        with pytest.raises(RequestError) as missing:
            await conn.load_session(cwd=str(workspace), session_id="nothing-here", mcp_servers=[])
        assert missing.value.code == -32602
        with pytest.raises(RequestError) as method:
            await conn.ext_method("treadle/nonsense", {})
        assert method.value.code == -32601
        assert process.stdin is not None
        process.stdin.write(b"{this is not json\n")
        await process.stdin.drain()
        session_id = await new_session(conn, workspace)
        reply = await conn.prompt(session_id=session_id, prompt=[text_block("hello")])
    assert reply.stop_reason == "end_turn"
    assert client.text() == "still here"


async def test_a_failed_turn_says_why_in_the_conversation(tmp_path: Path, workspace: Path) -> None:
    script = write_script(tmp_path, {"failure": {"status": 400}})
    client = RecordingClient()
    async with treadle_acp(client, tmp_path, "--model", f"script:{script}") as (conn, _):
        session_id = await new_session(conn, workspace)
        reply = await conn.prompt(session_id=session_id, prompt=[text_block("x")])
    assert reply.stop_reason == "end_turn"
    assert "Turn failed" in client.text()


async def test_closing_stdin_ends_treadle_and_every_command_within_a_second(
    tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path, bash("sleep 30 & echo $! > sleep.pid; wait"), saying("never"))
    client = RecordingClient()
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "auto"
    ) as (
        conn,
        process,
    ):
        session_id = await new_session(conn, workspace)
        running = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[text_block("wait")])
        )
        pid = await asyncio.to_thread(wait_for_pid, workspace / "sleep.pid")
        assert process.stdin is not None
        process.stdin.close()
        loop = asyncio.get_running_loop()
        closed = loop.time()
        code = await asyncio.wait_for(process.wait(), 5)
        ended = loop.time() - closed
        running.cancel()
    assert not is_running(pid)
    assert ended < 1.0, f"treadle acp took {ended:.2f} s to end"
    assert code == 0


async def test_kill_9_mid_turn_leaves_no_process_and_the_session_loads(
    tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path, bash("sleep 30 & echo $! > sleep.pid; wait"), saying("never"))
    client = RecordingClient()
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "auto"
    ) as (
        conn,
        process,
    ):
        session_id = await new_session(conn, workspace)
        running = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[text_block("wait")])
        )
        pid = await asyncio.to_thread(wait_for_pid, workspace / "sleep.pid")
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()
        running.cancel()
        await asyncio.to_thread(gone_within, pid, 5.0)
    assert not is_running(pid)
    script = write_script(tmp_path, saying("back"))
    again = RecordingClient()
    async with treadle_acp(again, tmp_path, "--model", f"script:{script}") as (conn, _):
        await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        reply = await conn.prompt(session_id=session_id, prompt=[text_block("go on")])
    assert reply.stop_reason == "end_turn"
    assert again.text().endswith("back")


async def test_a_cancel_while_a_permission_waits_refuses_the_call_and_pauses_the_turn(
    tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path, bash("touch never.txt"), saying("never"))
    client = RecordingClient(answer="once", release=asyncio.Event())
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "ask"
    ) as (
        conn,
        _,
    ):
        session_id = await new_session(conn, workspace)
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[text_block("write")])
        )
        await client.until(lambda c: bool(c.asked))
        await conn.cancel(session_id=session_id)
        reply = await prompt
        assert client.release is not None
        client.release.set()  # the editor's late yes changes nothing
    assert reply.stop_reason == "cancelled"
    assert not (workspace / "never.txt").exists()


async def test_the_editors_mcp_servers_are_added_to_the_session(
    tmp_path: Path, workspace: Path
) -> None:
    server = Path(__file__).parents[2] / "adapters" / "mcp" / "mcp_test_server.py"
    echo = {"name": "mcp__from_editor__echo", "arguments": {"text": "via the editor"}}
    script = write_script(tmp_path, {"tool_calls": [echo]}, saying("echoed"))
    client = RecordingClient()
    async with treadle_acp(
        client, tmp_path, "--model", f"script:{script}", "--approval", "auto"
    ) as (
        conn,
        _,
    ):
        editors = McpServerStdio(
            name="from editor", command=sys.executable, args=[str(server), "stdio"], env=[]
        )
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[editors])
        reply = await conn.prompt(session_id=session.session_id, prompt=[text_block("echo")])
    assert reply.stop_reason == "end_turn"
    on_call = [u for u in client.updates if getattr(u, "tool_call_id", "") == "call_1"]
    assert [u.status for u in on_call][:2] == ["in_progress", "completed"]
    assert "via the editor" in on_call[-1].content[-1].content.text, on_call


async def test_the_model_is_a_configuration_option_the_editor_switches_between_turns(
    tmp_path: Path, workspace: Path
) -> None:
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = write_script(tmp_path / "first", saying("the first model"), saying("again first"))
    second = write_script(tmp_path / "second", saying("the second model"))
    client = RecordingClient()
    flags = ("--model", f"script:{first}", "--models", f"script:{second},script:nowhere.json")
    async with treadle_acp(client, tmp_path, *flags) as (conn, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.config_options is not None
        [option] = session.config_options
        assert (option.id, option.category, option.current_value) == (
            "model",
            "model",
            f"script:{first}",
        )
        assert [choice.value for choice in option.options] == [
            f"script:{first}",
            f"script:{second}",
            "script:nowhere.json",
        ]
        session_id = session.session_id
        await conn.prompt(session_id=session_id, prompt=[text_block("one")])
        changed = await conn.set_config_option(
            config_id="model", session_id=session_id, value=f"script:{second}"
        )
        assert changed is not None and changed.config_options[0].current_value == f"script:{second}"
        await conn.prompt(session_id=session_id, prompt=[text_block("two")])
        with pytest.raises(RequestError) as unknown:  # a model not offered
            await conn.set_config_option(
                config_id="model", session_id=session_id, value="openai:gpt-9"
            )
        assert unknown.value.code == -32602
        with pytest.raises(RequestError) as broken:  # offered, but it cannot be built
            await conn.set_config_option(
                config_id="model", session_id=session_id, value="script:nowhere.json"
            )
        assert broken.value.code == -32602
    assert client.text() == "the first modelthe second model"


async def test_a_model_chosen_while_a_turn_runs_answers_from_the_next_turn(
    tmp_path: Path, workspace: Path
) -> None:
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = write_script(
        tmp_path / "first", bash("sleep 1"), saying("the first model ends its turn")
    )
    second = write_script(tmp_path / "second", saying("the second model"))
    client = RecordingClient()
    flags = ("--model", f"script:{first}", "--models", f"script:{second}", "--approval", "auto")
    async with treadle_acp(client, tmp_path, *flags) as (conn, _):
        session_id = await new_session(conn, workspace)
        running = asyncio.ensure_future(
            conn.prompt(session_id=session_id, prompt=[text_block("one")])
        )
        await client.until(lambda c: "tool_call" in c.kinds())
        await conn.set_config_option(
            config_id="model", session_id=session_id, value=f"script:{second}"
        )
        assert (await running).stop_reason == "end_turn"
        assert client.text() == "the first model ends its turn"
        await conn.prompt(session_id=session_id, prompt=[text_block("two")])
    assert client.text().endswith("the second model")


async def test_initialize_settles_on_a_version_both_speak_and_says_what_treadle_offers(
    tmp_path: Path,
) -> None:
    script = write_script(tmp_path, saying("hello"))
    async with treadle_acp(RecordingClient(), tmp_path, "--model", f"script:{script}") as (
        conn,
        _,
    ):
        newer = await conn.initialize(protocol_version=PROTOCOL_VERSION + 5)
        same = await conn.initialize(protocol_version=PROTOCOL_VERSION)
    assert newer.protocol_version == same.protocol_version == PROTOCOL_VERSION
    capabilities = same.agent_capabilities
    assert capabilities is not None and capabilities.load_session
    assert capabilities.prompt_capabilities is not None
    assert capabilities.prompt_capabilities.embedded_context
    assert same.agent_info is not None and same.agent_info.name == "treadle"


@pytest.mark.parametrize(
    ("capabilities", "said"),
    [
        ({"elicitation": {"form": {}}}, "booked for Ada, 2 seats"),
        ({}, "not booked: decline"),
    ],
    ids=["an editor that shows forms", "an editor that declared none"],
)
async def test_a_servers_question_goes_to_an_editor_that_shows_forms(
    tmp_path: Path, workspace: Path, capabilities: dict[str, Any], said: str
) -> None:
    server = Path(__file__).parents[2] / "adapters" / "mcp" / "mcp_test_server.py"
    ask = {"name": "mcp__from_editor__ask", "arguments": {}}
    script = write_script(tmp_path, {"tool_calls": [ask]}, saying("asked"))
    client = RecordingClient(form={"name": "Ada", "seats": 2})
    can = ClientCapabilities.model_validate(capabilities)
    flags = ("--model", f"script:{script}", "--approval", "auto")
    async with treadle_acp(client, tmp_path, *flags, capabilities=can) as (conn, _):
        editors = McpServerStdio(
            name="from editor", command=sys.executable, args=[str(server), "stdio"], env=[]
        )
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[editors])
        reply = await conn.prompt(session_id=session.session_id, prompt=[text_block("book")])
    assert reply.stop_reason == "end_turn"
    on_call = [u for u in client.updates if getattr(u, "tool_call_id", "") == "call_1"]
    assert said in on_call[-1].content[-1].content.text, on_call
    if capabilities:
        ((message, mode),) = client.elicited
        assert message == "MCP server from_editor asks: Who books?"
        assert set(mode.requested_schema.properties) == {"name", "seats"}
    else:
        assert client.elicited == []
