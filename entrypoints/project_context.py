"""``treadle mcp`` and ``treadle context``: what a session brings in besides the built-in
tools — the MCP servers' tools, and the project's instructions.

``treadle mcp`` starts every configured server as a session would, lists each with
whether it started and its tools, and stops them; it exits 1 when an enabled server
failed. ``treadle context`` lists the instruction files a session would read.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import tempfile
from typing import TextIO

from treadle.adapters.instructions import FILE_NAMES, InstructionFile, ProjectInstructions
from treadle.adapters.mcp.servers import ServerStatus
from treadle.adapters.mcp.tool import McpTool
from treadle.domain.values.text import one_line
from treadle.entrypoints.config import USAGE_ERROR, AppConfig, flag_values, load_config
from treadle.entrypoints.config_rules import mcp_server_configs
from treadle.entrypoints.container import Container, end_session
from treadle.entrypoints.hooks import hook_lines
from treadle.entrypoints.injector import providers
from treadle.entrypoints.paths import project_config_path, user_config_path
from treadle.entrypoints.wiring import mcp_auth_dir
from treadle.entrypoints.workflows import command_and_agent_lines, skill_lines

log = logging.getLogger(__name__)

DESCRIPTION_WIDTH = 72


def _container(args: argparse.Namespace, session_dir: str = "") -> tuple[AppConfig, Container]:
    app = load_config(flags=flag_values(args), environ=os.environ)
    container = Container()
    container.app.override(providers.Object(app))
    container.session_dir.override(providers.Object(session_dir))
    return app, container


async def show_mcp_servers(args: argparse.Namespace, out: TextIO) -> int:
    with tempfile.TemporaryDirectory(prefix="treadle-mcp-") as logs:
        app, container = _container(args, logs)
        servers = container.mcp_servers()
        if servers is None:
            user, project = user_config_path(os.environ), project_config_path(app.workspace)
            print(
                f"No MCP servers configured: add [mcp_servers.NAME] tables to {user} or {project}.",
                file=out,
            )
            return 0

        try:
            await servers.start()
            statuses = servers.statuses()
        finally:
            await end_session(container)
        # What a server said, its URL and its arguments may hold the secrets of its
        # table (or any other): redacted as a session's warning line is.
        redact = container.redactor().redact
    for status in statuses:
        for line in status_lines(status):
            print(redact(line), file=out)
    return 1 if any(status.state == "failed" for status in statuses) else 0


async def mcp_sign_in(args: argparse.Namespace, out: TextIO) -> int:
    """``treadle mcp login NAME``: sign in to a server over HTTP with OAuth (the browser
    opened, or the address printed); ``logout NAME`` forgets its tokens."""
    app = load_config(flags=flag_values(args), environ=os.environ)
    configs = {config.name: config for config in mcp_server_configs(app)}
    config = configs.get(args.name or "")
    if config is None:
        known = ", ".join(configs) or "none"
        print(
            f"treadle: no MCP server {args.name or '(none named)'}; the servers: {known}",
            file=sys.stderr,
        )
        return USAGE_ERROR
    if config.transport != "http" or not config.oauth:
        print(
            f"treadle: MCP server {config.name} does not sign in with OAuth "
            "(it needs url and oauth = true)",
            file=sys.stderr,
        )
        return USAGE_ERROR
    from treadle.adapters.mcp import oauth

    auth_dir = mcp_auth_dir()
    if args.action == "logout":
        forgot = oauth.logout(config, auth_dir)
        said = "signed out of" if forgot else "was not signed in to"
        print(f"treadle {said} MCP server {config.name}", file=out)
        return 0

    async def browse(url: str) -> None:
        print(f"Open this address to sign in to {config.name}:\n  {url}", file=out, flush=True)
        # The browser command may wait for its window: off the event loop.
        await asyncio.to_thread(_open_browser, url)

    try:
        await oauth.login(config, auth_dir, browse)
    except Exception as error:  # the server's or the browser's fault: one line, and the log
        log.warning("sign-in to MCP server %s failed", config.name, exc_info=True)
        why = one_line(str(error) or type(error).__name__, 200)
        print(f"treadle: cannot sign in to MCP server {config.name}: {why}", file=sys.stderr)
        return 1
    print(
        f"Signed in to MCP server {config.name}; the tokens are in "
        f"{oauth.token_path(auth_dir, config.name)}",
        file=out,
    )
    return 0


def _open_browser(url: str) -> None:
    import webbrowser

    with contextlib.suppress(Exception):
        webbrowser.open(url)


def status_lines(status: ServerStatus) -> list[str]:
    """A server's line (its name, how it is reached, how it went), then its tools."""
    config = status.config
    lines = [f"{config.name}  {status.state}  ({config.transport}: {config.where})"]
    if status.state != "started":
        return [*lines, f"  {status.detail}"]
    lines[0] += f"  {status.detail}"
    offers = [f"prompts: {' '.join(status.prompts)}"] if status.prompts else []
    offers += ["resources: through mcp_resource"] if status.resources else []
    lines += [f"  {offer}" for offer in offers]
    if not status.tools:
        return [*lines, "  (no tools)"]
    width = max(len(tool.spec.name) for tool in status.tools)
    for tool in status.tools:
        about = tool.listed.description.strip().splitlines()[0] if tool.listed.description else ""
        if len(about) > DESCRIPTION_WIDTH:
            about = about[: DESCRIPTION_WIDTH - 1] + "…"
        lines.append(f"  {tool.spec.name:<{width}}  {_approval(tool):<9}  {about}".rstrip())
    return lines


def _approval(tool: McpTool) -> str:
    """How the approval policy treats it: the server says it only reads, the
    configuration allows it, or it asks (and read-only refuses it)."""
    if tool.listed.read_only:
        return "read-only"
    return "allowed" if tool.access == "read" else "asks"


def show_context(args: argparse.Namespace, out: TextIO) -> int:
    app, container = _container(args)
    for line in context_lines(container.instructions(), app):
        print(line, file=out)
    found = container.workflows()
    for line in ["", *skill_lines(found, app.context_window), *command_and_agent_lines(found)]:
        print(line, file=out)
    for line in ["", *hook_lines(container.hook_setup())]:
        print(line, file=out)
    return 0


def context_lines(found: ProjectInstructions, app: AppConfig) -> list[str]:
    """The project root, each file read with its size, and what is sent."""
    if not app.project_instructions:
        origin = app.origin("project_instructions")
        return [f"Project instructions are off (project_instructions = false, from {origin})."]
    lines = [f"project root: {found.root}", f"limit:        {found.limit:,} bytes", ""]
    if not found.files:
        return [*lines, f"No {' or '.join(FILE_NAMES)} in your folder or the project's."]
    width = max(len(f"{file.size:,}") for file in found.files)
    for file in found.files:
        notes = "; ".join(_notes(file))
        lines.append(
            f"  {file.size:>{width},} bytes  {file.path}" + (f"  ({notes})" if notes else "")
        )
    lines += ["", f"sent after the system prompt: {len(found.text.encode()):,} bytes"]
    if found.left_out:
        lines.append(f"left out by the limit: {found.left_out:,} bytes")
    return lines


def _notes(file: InstructionFile) -> list[str]:
    notes = ["yours"] if file.from_user else []
    if file.stands_in:
        notes.append("stands in for AGENTS.md")
    if file.problem:
        notes.append(f"cannot be read: {file.problem}")
    elif file.included < file.size:
        notes.append(f"{file.size - file.included:,} bytes left out")
    return notes
