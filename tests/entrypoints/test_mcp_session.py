"""MCP servers in a session of the command line: started with it, their tools offered
(to sub-agents too), failures reported once, secrets redacted, and nothing of theirs
left running after the turn or after a ``kill -9`` of treadle."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adapters.mcp.support import SERVER
from tests.processes import (
    gone_within,
    is_running,
    run_treadle,
    treadle_env,
    until,
    wait_for_pid,
    write_script,
)
from treadle.entrypoints.commands import run_subcommand
from treadle.entrypoints.config import trust_folder

pytestmark = pytest.mark.slow

SECRET = "sk-test-mcp-0123456789abcdefghij"


def configure(folder: Path, *tables: str) -> None:
    (folder / ".treadle.toml").write_text("\n".join(tables))
    # A project's servers start only in a folder the user trusts (issue 15).
    trust_folder(str(folder), {"TREADLE_CONFIG_DIR": str(folder / "config")})


def server_table(folder: Path, name: str = "test", *options: str) -> str:
    args = [str(SERVER), "stdio", "--pid-file", str(folder / f"{name}.pid")]
    args += ["--log", str(folder / f"{name}.events"), *options]
    return (
        f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
    )


def events(output: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.splitlines()]


def test_a_turn_uses_the_servers_tools_and_leaves_nothing_running(tmp_path: Path) -> None:
    configure(
        tmp_path, server_table(tmp_path), server_table(tmp_path, "broken", "--exit-at-once", "2")
    )
    script = {
        "responses": [
            {"tool_calls": [{"name": "mcp__test__echo", "arguments": {"text": SECRET}}]},
            {"tool_calls": [{"name": "mcp__test__spawn_child", "arguments": {}}]},
            {"tool_calls": [{"name": "agent", "arguments": {"task": "echo for me"}}]},
            {"text": "Done."},
        ],
        "agents": {
            "echo for me": [
                {"tool_calls": [{"name": "mcp__test__echo", "arguments": {"text": "sub"}}]},
                {"text": "Echoed."},
            ]
        },
    }
    (tmp_path / "script.json").write_text(json.dumps(script))
    env = treadle_env(tmp_path, MY_SERVICE_TOKEN=SECRET)
    result = run_treadle(
        "--model", f"script:{tmp_path / 'script.json'}", "--json", "go", cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    records = events(result.stdout)
    notices = [r for r in records if r["type"] == "notice"]
    assert [n["kind"] for n in notices] == ["mcp_server_failed"]
    assert "MCP server broken did not start: exited with code 2" in str(notices[0]["text"])
    finished = [
        (r["agent"], r["call"]["name"], r["is_error"])  # type: ignore[index]
        for r in records
        if r["type"] == "tool_finished"
    ]
    assert finished == [
        ("", "mcp__test__echo", False),
        ("", "mcp__test__spawn_child", False),
        ("agent-1", "mcp__test__echo", False),
        ("", "agent", False),
    ]
    # The secret went to the server and came back: neither the screen nor the
    # transcript shows it.
    assert SECRET not in result.stdout and "[redacted]" in result.stdout
    transcripts = list((tmp_path / "state").rglob("transcript.jsonl"))
    assert transcripts and all(SECRET not in path.read_text() for path in transcripts)
    server = wait_for_pid(tmp_path / "test.pid")
    child = next(
        int(line.split()[1])
        for line in (tmp_path / "test.events").read_text().splitlines()
        if line.startswith("child ")
    )
    assert not is_running(server) and not is_running(child), "an MCP server outlived its turn"


def start_hanging_turn(folder: Path, *calls: str) -> subprocess.Popen[str]:
    """A headless turn whose MCP server runs ``calls``, then one that hangs: once the
    server says it hangs."""
    configure(folder, "tool_timeout = 300", server_table(folder))
    steps = [{"tool_calls": [{"name": f"mcp__test__{name}", "arguments": {}}]} for name in calls]
    script = write_script(folder, *steps, {"tool_calls": [{"name": "mcp__test__hang"}]})
    treadle = subprocess.Popen(
        [sys.executable, "-m", "treadle", "--model", f"script:{script}", "--print", "go"],
        cwd=folder,
        env=treadle_env(folder),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = folder / "test.events"
    if not until(lambda: log.exists() and "hang started" in log.read_text(), 30):
        treadle.kill()
        raise AssertionError(f"the MCP call never started: {treadle.communicate()}")
    return treadle


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_servers_die_with_treadle_even_when_it_is_killed_with_sigkill(tmp_path: Path) -> None:
    treadle = start_hanging_turn(tmp_path, "spawn_child")
    pids: list[int] = []
    try:
        log = (tmp_path / "test.events").read_text().splitlines()
        child = next(int(line.split()[1]) for line in log if line.startswith("child "))
        pids = [wait_for_pid(tmp_path / "test.pid"), child]
        assert all(is_running(pid) for pid in pids)
        treadle.send_signal(signal.SIGKILL)
        treadle.wait(timeout=10)
        assert all(gone_within(pid, 10) for pid in pids), "an MCP server outlived treadle"
    finally:
        treadle.kill()
        treadle.communicate()
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_a_stopped_turn_cancels_the_call_with_the_protocols_notification(tmp_path: Path) -> None:
    """SIGINT pauses a headless turn as Esc does in a terminal: the running MCP call is
    cancelled (the server hears it), and the server goes with the session."""
    treadle = start_hanging_turn(tmp_path)
    try:
        server = wait_for_pid(tmp_path / "test.pid")
        treadle.send_signal(signal.SIGINT)
        out, err = treadle.communicate(timeout=30)
    finally:
        treadle.kill()
    log = tmp_path / "test.events"
    assert treadle.returncode == 130, err
    assert "Turn paused" in out
    seen = log.read_text()
    assert "hang cancelled" in seen and "'reason': 'caller cancelled'" in seen
    assert not is_running(server)


@pytest.mark.parametrize("flag", ["--json", "--print"])
def test_a_server_stopped_after_a_calls_deadline_is_said_before_the_outcome(
    tmp_path: Path, flag: str
) -> None:
    """A server that ignores its call (``wedge`` blocks it, so it cannot answer the ping
    after the deadline either) is stopped while the session closes: its notice comes
    before the outcome, which stays the last line."""
    configure(tmp_path, "tool_timeout = 1", server_table(tmp_path))
    script = write_script(
        tmp_path, {"tool_calls": [{"name": "mcp__test__wedge", "arguments": {}}]}, {"text": "Done."}
    )
    result = run_treadle(
        "--model", f"script:{script}", flag, "go", cwd=tmp_path, env=treadle_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    said = "MCP server test stopped: it stopped answering after a call timed out"
    if flag == "--json":
        records = [json.loads(line) for line in lines]
        [notice] = [r for r in records if r["type"] == "notice"]
        assert said in str(notice["text"])
        assert [r["type"] for r in records[-2:]] == ["notice", "turn_ended"]
        assert records[-1]["line"] == "Turn finished"
    else:
        assert lines[-3].startswith(f"warning: {said}")
        assert lines[-1] == "Turn finished"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """In-process runs of a subcommand, in ``tmp_path`` with no user configuration."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TREADLE_CONFIG_DIR", str(tmp_path / "config"))
    return tmp_path


def test_treadle_mcp_lists_the_servers_whether_each_started_and_their_tools(here: Path) -> None:
    tmp_path = here
    configure(
        tmp_path,
        'mcp_allowed = ["mcp__test__spawn_child"]',
        server_table(tmp_path),
        server_table(tmp_path, "broken", "--exit-at-once", "2"),
        '[mcp_servers.off]\ncommand = "never-run"\nenabled = false\n',
    )
    out = io.StringIO()
    assert run_subcommand(["mcp"], out) == 1  # a server failed
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"test  started  (stdio: {sys.executable} {SERVER} stdio")
    assert "treadle-test 1.0, MCP 2025-11-25, in " in lines[0]  # the protocol it speaks
    tools = {line.split()[0]: line.split()[1] for line in lines if line.startswith("  mcp__")}
    assert tools["mcp__test__echo"] == "read-only"
    assert tools["mcp__test__fail"] == "asks"
    assert tools["mcp__test__spawn_child"] == "allowed"
    broken = lines.index(next(line for line in lines if line.startswith("broken  failed")))
    assert "exited with code 2 before answering initialize" in lines[broken + 1]
    assert "off  disabled  (stdio: never-run)" in lines
    assert not is_running(wait_for_pid(tmp_path / "test.pid"))


def test_treadle_mcp_redacts_secrets_as_a_session_does(here: Path) -> None:
    # A server that dies saying the secret of its `env` table, and a URL with a password:
    # a session's warning line shows neither, and neither may `treadle mcp`.
    says = "import os, sys; print('bad token ' + os.environ['SERVICE_TOKEN'], file=sys.stderr)"
    configure(
        here,
        f"[mcp_servers.leaky]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = ['-c', {json.dumps(says + '; sys.exit(2)')}]\n"
        'env = { SERVICE_TOKEN = "env-secret-abcdef123456" }\n',
        '[mcp_servers.docs]\nurl = "http://bob:url-passw0rd-xyz@127.0.0.1:1/mcp"\n',
    )
    out = io.StringIO()
    assert run_subcommand(["mcp"], out) == 1
    shown = out.getvalue()
    assert "bad token [redacted]" in shown
    assert "http://bob:[redacted]@127.0.0.1:1/mcp" in shown
    assert "env-secret-abcdef123456" not in shown and "url-passw0rd-xyz" not in shown


def test_treadle_mcp_without_servers_says_how_to_add_one(here: Path) -> None:
    out = io.StringIO()
    assert run_subcommand(["mcp"], out) == 0
    assert out.getvalue().startswith("No MCP servers configured: add [mcp_servers.NAME] tables")


def test_a_session_without_an_enabled_server_never_imports_the_sdk(tmp_path: Path) -> None:
    configure(tmp_path, '[mcp_servers.off]\ncommand = "never-run"\nenabled = false\n')
    script = write_script(tmp_path, {"text": "Hello."})
    command = ["-X", "importtime", "-m", "treadle", "--model", f"script:{script}", "--print", "hi"]
    result = subprocess.run(
        [sys.executable, *command],
        cwd=tmp_path,
        env=treadle_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    imported = {
        line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines() if "|" in line
    }
    assert "treadle.adapters.mcp.servers" in imported  # the check sees treadle's own
    assert not {name for name in imported if name.split(".")[0] in ("mcp", "mcp_types", "httpx2")}


def test_a_bad_server_table_stops_treadle_with_the_file_and_the_key(tmp_path: Path) -> None:
    configure(tmp_path, '[mcp_servers.test]\ncommand = "x"\nargs = "--no-list"\n')
    result = run_treadle("--print", "hi", cwd=tmp_path, env=treadle_env(tmp_path))
    assert result.returncode == 2
    assert result.stderr == (
        f"treadle: {tmp_path / '.treadle.toml'}: mcp_servers.test.args: "
        'must be a list of strings, not "--no-list"\n'
    )


def test_secrets_in_a_servers_table_are_redacted_like_the_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from treadle.entrypoints.config import AppConfig
    from treadle.entrypoints.container import build_redactor

    monkeypatch.setenv("DOCS_AUTH", "docs-bearer-token-123456")
    servers = {
        "local": {
            "command": "x",
            "env": {"SERVICE_API_KEY": "env-secret-abcdef", "TZ": "Europe/Paris"},
        },
        "docs": {
            "url": "https://docs.test/mcp",
            "headers": {"Authorization": "Bearer header-token-987654", "X-Team": "core-team"},
            "bearer_token_env": "DOCS_AUTH",
        },
    }
    redact = build_redactor(AppConfig(mcp_servers=servers)).redact
    shown = redact(
        "env-secret-abcdef header-token-987654 docs-bearer-token-123456 Europe/Paris core-team"
    )
    assert shown == "[redacted] [redacted] [redacted] Europe/Paris core-team"
