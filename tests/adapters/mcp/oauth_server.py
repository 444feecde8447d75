"""An OAuth-protected MCP server on 127.0.0.1, built with the SDK's server-side auth:
an authorization server that registers clients dynamically and consents at once (the
authorize endpoint redirects straight to the client's loopback address with a code),
and an ``echo`` tool behind its bearer tokens. It runs on a thread of the test's
process, so a test can expire or revoke its tokens and see which grants it made."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


@dataclass
class Authority:
    """The authorization server's memory, which the test reads and changes."""

    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    grants: list[str] = field(default_factory=list)
    """Each token it issued, by grant: ``authorization_code`` or ``refresh_token``."""
    lifetime: int = 3600
    refuse_access: bool = False
    """Take no access token at all, even one just refreshed (a resource that will not)."""

    def revoke_all(self) -> None:
        self.access.clear()
        self.refresh.clear()

    # The provider protocol ----------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=str(client.client_id),
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(str(client.client_id), authorization_code.scopes, "authorization_code")

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(str(client.client_id), scopes or refresh_token.scopes, "refresh_token")

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = None if self.refuse_access else self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], grant: str) -> OAuthToken:
        access, refresh = f"at-{secrets.token_hex(12)}", f"rt-{secrets.token_hex(12)}"
        expires = int(time.time()) + self.lifetime
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        self.grants.append(grant)
        return OAuthToken(
            access_token=access,
            expires_in=self.lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


@contextlib.contextmanager
def oauth_server() -> Iterator[tuple[str, Authority]]:
    """The server's MCP address (``http://127.0.0.1:PORT/mcp``) and its authority,
    while it runs on a thread of its own."""
    import uvicorn

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(16)
    base = f"http://127.0.0.1:{listening.getsockname()[1]}"
    authority = Authority()
    server = MCPServer(
        "oauth-test",
        auth_server_provider=authority,  # type: ignore[arg-type]
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Says it back."""
        return f"echo: {text}"

    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    running = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(running.serve(sockets=[listening])), daemon=True
    )
    thread.start()
    try:
        for _ in range(500):
            if running.started:
                break
            time.sleep(0.01)
        yield f"{base}/mcp", authority
    finally:
        running.should_exit = True
        thread.join(10)
        listening.close()
