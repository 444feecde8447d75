"""Signing in to an OAuth-protected MCP server on 127.0.0.1 (built with the SDK's
server-side auth) with a scripted browser: login, a call with the tokens, a token
that expires and is refreshed, a revoked one that says which login to run; the token
file is the user's alone, and its value is in no command's environment or log."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import httpx2
import pytest

from tests.adapters.mcp.oauth_server import oauth_server
from tests.adapters.mcp.support import tool_context
from tests.processes import run_treadle, treadle_env
from treadle.adapters.mcp.config import McpServerConfig, stored_tokens
from treadle.adapters.mcp.oauth import login, logout, token_path
from treadle.adapters.mcp.servers import McpServers
from treadle.adapters.process.environment import child_environment
from treadle.adapters.secrets.redact import REDACTED, Redactor
from treadle.domain.values.events import TurnEvent
from treadle.domain.values.tools import ToolResult
from treadle.entrypoints.trust import trust_folder

pytestmark = [pytest.mark.slow, pytest.mark.asyncio]


async def scripted_browser(url: str) -> None:
    """A person who consents at once: the authorize address is followed, redirects and
    all, to treadle's loopback address."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=10) as browser:
        page = await browser.get(url)
        assert page.status_code == 200, page.text


async def started(config: McpServerConfig, auth_dir: Path, folder: Path) -> McpServers:
    servers = McpServers([config], workspace=str(folder), auth_dir=str(auth_dir))
    notices: list[TurnEvent] = []
    await servers.start(notices.append)
    servers.notices = notices  # type: ignore[attr-defined]
    return servers


async def test_login_a_call_a_refresh_and_a_revoked_token(tmp_path: Path) -> None:
    auth_dir = tmp_path / "state" / "mcp-auth"
    with oauth_server() as (url, authority):
        config = McpServerConfig("secure", url=url, oauth=True)

        # Before a login, the server says which one to run.
        servers = await started(config, auth_dir, tmp_path)
        await servers.close()
        (failed,) = servers.notices  # type: ignore[attr-defined]
        assert "run treadle mcp login secure" in failed.text

        await login(config, str(auth_dir), scripted_browser)
        assert authority.grants == ["authorization_code"] and authority.clients  # registered
        path = token_path(str(auth_dir), "secure")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        token = json.loads(path.read_text())["tokens"]["access_token"]
        assert token in authority.access

        servers = await started(config, auth_dir, tmp_path)
        try:
            tools = {tool.spec.name: tool for tool in servers.tools()}
            answer = await tools["mcp__secure__echo"].run({"text": "hi"}, tool_context(tmp_path))
            assert isinstance(answer, ToolResult) and answer.text == "echo: hi"
            # The token is nowhere a command could read it.
            assert token not in json.dumps(
                child_environment(os.environ, passthrough=(), extra={}, run_id="t")
            )
        finally:
            await servers.close()

        # A token about to expire is refreshed before it is used.
        data = json.loads(path.read_text())
        data["expires_at"] = 0
        path.write_text(json.dumps(data))
        servers = await started(config, auth_dir, tmp_path)
        await servers.close()
        assert authority.grants == ["authorization_code", "refresh_token"]
        assert json.loads(path.read_text())["tokens"]["access_token"] != token
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

        # An access token the server no longer takes: refreshed once, on its 401.
        authority.access.clear()
        servers = await started(config, auth_dir, tmp_path)
        try:
            assert servers.notices == []  # type: ignore[attr-defined]
            assert authority.grants[-1] == "refresh_token" and len(authority.grants) == 3
        finally:
            await servers.close()

        # Revoked altogether: one line that says which login to run.
        authority.revoke_all()
        servers = await started(config, auth_dir, tmp_path)
        await servers.close()
        (failed,) = servers.notices  # type: ignore[attr-defined]
        assert failed.kind == "mcp_server_failed"
        assert failed.text == (
            "MCP server secure did not start: it needs you to sign in: run treadle mcp "
            "login secure. Its tools are not available."
        )

        assert logout(config, str(auth_dir)) and not path.exists()


async def test_tokens_refreshed_mid_session_are_redacted(tmp_path: Path) -> None:
    auth_dir = tmp_path / "state" / "mcp-auth"
    with oauth_server() as (url, authority):
        config = McpServerConfig("secure", url=url, oauth=True)
        await login(config, str(auth_dir), scripted_browser)
        path = token_path(str(auth_dir), "secure")
        data = json.loads(path.read_text())
        data["expires_at"] = 0  # refreshed as the server starts, after the redactor is made
        path.write_text(json.dumps(data))
        redactor = Redactor(stored_tokens(str(auth_dir), "secure"))  # as a session starts
        servers = McpServers(
            [config], workspace=str(tmp_path), auth_dir=str(auth_dir), redactor=redactor
        )
        notices: list[TurnEvent] = []
        await servers.start(notices.append)
        try:
            assert notices == [] and authority.grants[-1] == "refresh_token"
            first = json.loads(path.read_text())["tokens"]
            assert first["access_token"] != data["tokens"]["access_token"]
            for value in (first["access_token"], first["refresh_token"]):
                assert redactor.redact(f"token={value}") == f"token={REDACTED}"

            # The server stops taking it mid-session: the call's 401 refreshes it.
            authority.access.clear()
            (tool,) = servers.tools()
            answer = await tool.run({"text": "hi"}, tool_context(tmp_path))
            assert isinstance(answer, ToolResult) and answer.text == "echo: hi"
            second = json.loads(path.read_text())["tokens"]
            assert second["access_token"] != first["access_token"]
            assert redactor.redact(second["access_token"]) == REDACTED
        finally:
            await servers.close()


async def test_a_server_that_refuses_a_refreshed_token_asks_for_a_login(tmp_path: Path) -> None:
    auth_dir = tmp_path / "state" / "mcp-auth"
    with oauth_server() as (url, authority):
        config = McpServerConfig("secure", url=url, oauth=True)
        await login(config, str(auth_dir), scripted_browser)
        authority.refuse_access = True  # a 401 for every token, the refreshed one too
        async with asyncio.timeout(60):
            servers = await started(config, auth_dir, tmp_path)
            await servers.close()
        assert authority.grants == ["authorization_code", "refresh_token"]  # refreshed once
        (failed,) = servers.notices  # type: ignore[attr-defined]
        assert "run treadle mcp login secure" in failed.text


BROWSER = """\
import sys, httpx2
page = httpx2.get(sys.argv[1], follow_redirects=True, timeout=10)
sys.exit(0 if page.status_code == 200 else 1)
"""


async def test_treadle_mcp_login_and_logout(tmp_path: Path) -> None:
    (tmp_path / "browser.py").write_text(BROWSER)
    with oauth_server() as (url, authority):
        (tmp_path / ".treadle.toml").write_text(
            f'[mcp_servers.secure]\nurl = "{url}"\noauth = true\n'
        )
        trust_folder(str(tmp_path), {"TREADLE_CONFIG_DIR": str(tmp_path / "config")})
        env = treadle_env(tmp_path, BROWSER=f"{sys.executable} {tmp_path / 'browser.py'} %s")
        # The SDK's server answers on a thread of this process: the child must not wait
        # on this event loop, so it is run off it.
        import asyncio

        signed = await asyncio.to_thread(
            run_treadle, "mcp", "login", "secure", cwd=tmp_path, env=env
        )
        assert signed.returncode == 0, signed.stderr
        assert "Open this address to sign in to secure:" in signed.stdout
        path = tmp_path / "state" / "mcp-auth" / "secure.json"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        listed = await asyncio.to_thread(run_treadle, "mcp", cwd=tmp_path, env=env)
        assert listed.returncode == 0, listed.stdout + listed.stderr
        assert "mcp__secure__echo" in listed.stdout
        assert authority.grants == ["authorization_code"]
        token = json.loads(path.read_text())["tokens"]["access_token"]
        assert token not in listed.stdout + listed.stderr
        # A turn that calls the server's tool: the token is in no transcript or log.
        script = {
            "responses": [
                {"tool_calls": [{"name": "mcp__secure__echo", "arguments": {"text": "hi"}}]},
                {"text": "Done."},
            ]
        }
        (tmp_path / "script.json").write_text(json.dumps(script))
        turn = await asyncio.to_thread(
            run_treadle,
            "--model",
            f"script:{tmp_path / 'script.json'}",
            "--json",
            "go",
            cwd=tmp_path,
            env={**env, "TREADLE_LOG": "debug"},
        )
        assert turn.returncode == 0, turn.stderr
        assert '"status": "ok' in turn.stdout and token not in turn.stdout + turn.stderr
        kept = [p for p in (tmp_path / "state" / "sessions").rglob("*") if p.is_file()]
        assert any("echo: hi" in p.read_text(errors="replace") for p in kept)  # the transcript
        assert any(p.name == "treadle.log" for p in kept)
        for path_kept in kept:
            assert token not in path_kept.read_text(errors="replace"), path_kept
        out = await asyncio.to_thread(run_treadle, "mcp", "logout", "secure", cwd=tmp_path, env=env)
        assert out.stdout.strip() == "treadle signed out of MCP server secure"
        assert not path.exists()
        unknown = await asyncio.to_thread(
            run_treadle, "mcp", "login", "nope", cwd=tmp_path, env=env
        )
        assert unknown.returncode == 2
        assert unknown.stderr.strip() == "treadle: no MCP server nope; the servers: secure"
