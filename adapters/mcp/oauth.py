"""Signing in to an MCP server over HTTP with OAuth, on the SDK's client
(``mcp.client.auth.OAuthClientProvider``: discovery of the authorization server from
the resource's metadata, dynamic registration or a configured ``client_id``, PKCE,
refreshing).

``treadle mcp login NAME`` runs the whole flow: a loopback address on 127.0.0.1
receives the redirect, the browser is opened on the authorization address (or the
address printed). The tokens are kept in ``mcp-auth/NAME.json`` in the state folder,
readable only by the user, and refreshed before they expire. In a session nobody
signs in: a server that needs it fails with the one line that says which login to
run. Tokens never reach a command's environment: they live in this file and in the
connection's headers only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import urllib.parse
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from treadle.adapters.mcp.config import McpServerConfig

EARLY = 60.0
"""Seconds before a token's end that it is refreshed."""
LOGIN_TIMEOUT = 300.0
"""How long ``treadle mcp login`` waits for the browser to come back."""

Browser = Callable[[str], Awaitable[None]]
Secrets = Callable[[Sequence[str]], None]
"""Hears the values of tokens as they are stored (the redactor's ``add``)."""


class SignInNeeded(Exception):
    """The server wants a sign-in nobody can give now; the message says what to run."""

    def __init__(self, name: str, why: str = "needs you to sign in") -> None:
        super().__init__(f"it {why}: run treadle mcp login {name}")


def token_path(auth_dir: str, name: str) -> Path:
    return Path(auth_dir) / f"{name}.json"


class TokenFile:
    """The SDK's ``TokenStorage`` in one JSON file of mode 0600: the tokens, when they
    expire, and the client's registration. ``on_tokens`` hears each token stored (one
    refreshed mid-session too) before it is kept or used."""

    def __init__(self, path: Path, on_tokens: Secrets | None = None) -> None:
        self.path = path
        self._on_tokens = on_tokens

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = self.path.with_suffix(".partial")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            json.dump(data, out)
        os.chmod(partial, 0o600)
        os.replace(partial, self.path)

    @property
    def expires_at(self) -> float | None:
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        tokens = self._read().get("tokens")
        return OAuthToken.model_validate(tokens) if isinstance(tokens, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        if self._on_tokens is not None:
            self._on_tokens([t for t in (tokens.access_token, tokens.refresh_token) if t])
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        self._write(data)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        info = self._read().get("client")
        return OAuthClientInformationFull.model_validate(info) if isinstance(info, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    def forget_client(self) -> None:
        data = self._read()
        if data.pop("client", None) is not None:
            self._write(data)


class _Provider(OAuthClientProvider):
    """The SDK's provider, which also knows when stored tokens expire: it refreshes
    them a minute before, instead of waiting for a 401 (which asks for a sign-in).
    A 401 on a token it holds (the server revoked it, or a clock is off) refreshes it
    once, and only then asks for the sign-in."""

    def __init__(self, *args: Any, tokens: TokenFile, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tokens = tokens
        self._refreshed_on_401 = False

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                refusal = outgoing is request and response.status_code == 401
                if outgoing is request and not refusal:
                    self._refreshed_on_401 = False  # taken: a later 401 may refresh again
                if refusal and not self._refreshed_on_401 and self.context.can_refresh_token():
                    self._refreshed_on_401 = True  # once: a refreshed token refused asks to sign in
                    await flow.aclose()
                    self.context.token_expiry_time = 1.0  # long past: the flow refreshes first
                    request.headers.pop("Authorization", None)
                    flow = super()._auth_flow(request)
                    outgoing = await flow.__anext__()
                    continue
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return

    async def _initialize(self) -> None:
        await super()._initialize()
        expires = self._tokens.expires_at
        if expires is not None:
            self.context.token_expiry_time = expires - EARLY


def _metadata(config: McpServerConfig, redirect: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name="treadle",
        redirect_uris=[redirect],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def _configured_client(config: McpServerConfig, redirect: str) -> OAuthClientInformationFull:
    return OAuthClientInformationFull(
        client_id=config.client_id,
        redirect_uris=[redirect],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def session_auth(
    config: McpServerConfig, auth_dir: str, on_tokens: Secrets | None = None
) -> httpx2.Auth:
    """The auth of a session's connection: the stored tokens, refreshed (each new one
    told to ``on_tokens``, the redactor); a sign-in it would need ends the connection
    with :class:`SignInNeeded`."""
    tokens = TokenFile(token_path(auth_dir, config.name), on_tokens)

    async def nobody(url: str) -> None:
        raise SignInNeeded(config.name)

    async def never() -> AuthorizationCodeResult:
        raise SignInNeeded(config.name)

    return _Provider(
        config.url,
        _metadata(config, "http://127.0.0.1/callback"),
        tokens,
        redirect_handler=nobody,
        callback_handler=never,
        tokens=tokens,
    )


async def login(config: McpServerConfig, auth_dir: str, browser: Browser) -> None:
    """Sign in: the browser (``browser`` is handed the address) comes back to a
    loopback address with the code, which is traded for tokens kept in the file."""
    received: asyncio.Future[AuthorizationCodeResult] = asyncio.get_running_loop().create_future()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            line = (await reader.readline()).decode("latin-1")
            while (await reader.readline()).strip():
                pass
            query = urllib.parse.urlsplit(line.split(" ")[1]).query if " " in line else ""
            params = dict(urllib.parse.parse_qsl(query))
            done = "code" in params
            body = b"Signed in; you may close this page." if done else b"No code was given."
            writer.write(
                b"HTTP/1.1 "
                + (b"200 OK" if done else b"400 Bad Request")
                + b"\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            await writer.drain()
            if done and not received.done():
                received.set_result(
                    AuthorizationCodeResult(
                        code=params["code"], state=params.get("state"), iss=params.get("iss")
                    )
                )
        writer.close()

    loopback = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = loopback.sockets[0].getsockname()[1]
    redirect = f"http://127.0.0.1:{port}/callback"
    tokens = TokenFile(token_path(auth_dir, config.name))
    tokens.forget_client()  # registered for another loopback port
    if config.client_id:
        await tokens.set_client_info(_configured_client(config, redirect))

    async def callback() -> AuthorizationCodeResult:
        return await asyncio.wait_for(received, LOGIN_TIMEOUT)

    provider = _Provider(
        config.url,
        _metadata(config, redirect),
        tokens,
        redirect_handler=browser,
        callback_handler=callback,
        tokens=tokens,
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "treadle", "version": "login"},
        },
    }
    try:
        async with httpx2.AsyncClient(auth=provider, timeout=LOGIN_TIMEOUT) as client:
            response = await client.post(
                config.url,
                json=initialize,
                headers={"Accept": "application/json, text/event-stream"},
            )
            if response.status_code >= 400:
                raise SignInNeeded(config.name, f"answered HTTP {response.status_code}")
    finally:
        loopback.close()
        await loopback.wait_closed()


def logout(config: McpServerConfig, auth_dir: str) -> bool:
    """Forget the server's tokens (and registration); whether there were any."""
    path = token_path(auth_dir, config.name)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
