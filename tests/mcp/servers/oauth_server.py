"""An MCP server behind OAuth for the client's sign-in tests, built from the SDK's own parts.

`python oauth_server.py` serves streamable HTTP on 127.0.0.1 (a free port, printed as
`PORT <n>` on stdout once listening); `--json` answers each request with one JSON body, sent
only when the request is done, instead of an event stream. `/mcp` needs a bearer token; the SDK's authorization
server routes in the same process issue them (metadata, dynamic registration, `/authorize`,
`/token`, protected resource metadata). `/authorize` approves at once, like a person who
always says yes, and redirects to the client's loopback URI with a code.

Tools: `whoami` (how many sign-ins and refreshes the server saw, and which access token this
call came with, by number), `revoke_all` (drop every token, as a revocation at the
authorization server would) and `meet` (read-only: waits, at most `MEET_WAIT` seconds, for a
second call of it to be running at the same time, and says whether one was).
"""

from __future__ import annotations

import secrets
import socket
import sys
import time
from collections import Counter
from typing import Any

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
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
from mcp_types import ToolAnnotations

LIFETIME = 3600
"""Seconds an access token lives (as told to the client)."""
MEET_WAIT = 10.0


class Provider:
    """An authorization server in memory that approves every request."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.numbers: dict[str, int] = {}
        self.counts: Counter[str] = Counter()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
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
        self.counts["sign_ins"] += 1
        return self._issue(client.client_id or "", authorization_code.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.counts["refreshes"] += 1
        return self._issue(client.client_id or "", scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        self.numbers[access] = len(self.numbers) + 1
        return OAuthToken(
            access_token=access,
            expires_in=LIFETIME,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


def main() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider()
    server = MCPServer(
        "handrail-oauth-test",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # pyright: ignore[reportArgumentType]
            resource_server_url=f"{base}/mcp",  # pyright: ignore[reportArgumentType]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Which sign-in this call came with."""
        token = get_access_token()
        number = provider.numbers.get(token.token, 0) if token is not None else 0
        c = provider.counts
        return f"token #{number}; sign-ins {c['sign_ins']}; refreshes {c['refreshes']}"

    meeting: dict[str, Any] = {"running": 0, "met": None}

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def meet() -> str:
        """Wait for another call of this tool to be running at the same time."""
        if meeting["met"] is None:
            meeting["met"] = anyio.Event()
        met: anyio.Event = meeting["met"]
        meeting["running"] += 1
        if meeting["running"] >= 2:
            met.set()
        with anyio.move_on_after(MEET_WAIT):
            await met.wait()
        return "met" if met.is_set() else "alone"

    @server.tool()
    def revoke_all() -> str:
        """Drop every token."""
        provider.access.clear()
        provider.refresh.clear()
        return "revoked"

    app: Any = server.streamable_http_app(host="127.0.0.1", json_response="--json" in sys.argv)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
