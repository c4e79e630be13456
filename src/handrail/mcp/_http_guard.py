"""The ASGI middleware in front of the MCP SDK's HTTP app: Host, Origin, then the bearer token.

Every HTTP request is checked before the SDK sees a byte of it, so a refused request never
reaches a session, a tool or an approval:

1. `Host` must name this server (`AccessRules`), else 421: a DNS-rebinding page sends its own
   name;
2. `Origin`, when present, must be allowed, else 403: another site's page in a browser;
3. `Authorization: Bearer <token>` must carry the server's token, else 401 with
   `WWW-Authenticate: Bearer`. Compared in constant time; a token in the URL is never read.

A CORS preflight from an allowed origin (a browser-based MCP client) is answered without the
token, as browsers never send credentials in one; it reaches no MCP code either. Lifespan
events pass through; websockets are refused.
"""

from __future__ import annotations

import hmac
import json
import logging

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from ._http_access import AccessRules

__all__ = ["MESSAGES", "HttpGuard"]

logger = logging.getLogger("handrail.mcp")

MESSAGES = {
    "no_token": (
        "Unauthorized: this handrail server needs the header `Authorization: Bearer <token>`. "
        "`handrail serve` prints the token when it starts and keeps it in its token file while "
        "it runs; a token in the URL is not accepted."
    ),
    "bad_token": (
        "Unauthorized: the bearer token is not this server's. Use the token `handrail serve` "
        "printed when it started (also in its token file while it runs)."
    ),
    "bad_host": (
        "Misdirected request: this server does not answer to the host name {host}. Connect "
        "with the address it listens on, or ask its operator to allow the name "
        "(handrail serve --allow-host NAME)."
    ),
    "bad_origin": (
        "Forbidden: requests from the web origin {origin} are not allowed. Its operator can "
        "allow a trusted origin with handrail serve --allow-origin URL."
    ),
}
"""What a refused client reads (the `message` of a JSON-RPC error body)."""

_CORS_HEADERS = (
    "authorization",
    "content-type",
    "accept",
    "last-event-id",
    "mcp-session-id",
    "mcp-protocol-version",
)
_CHECKED = (b"host", b"origin", b"authorization", b"access-control-request-method")
_Refusal = tuple[int, str, list[tuple[bytes, bytes]]]
"""HTTP status, message, extra response headers."""
_SHOWN = 200
"""Characters of a refused Host or Origin value quoted back."""


def _quoted(raw: bytes) -> str:
    return json.dumps(raw[:_SHOWN].decode("latin-1"))


class HttpGuard:
    """Checks Host, Origin and the bearer token of every request before `app` sees it.

    Args:
        app: The MCP SDK's ASGI app.
        rules: The Host and Origin values accepted.
        token: The bearer token every request must carry; None checks none (`--no-auth`).
    """

    def __init__(self, app: ASGIApp, *, rules: AccessRules, token: str | None) -> None:
        self.rules = rules
        self.inner = app
        self._token = token.encode("ascii") if token is not None else None
        self.app: ASGIApp = CORSMiddleware(
            app,
            allow_origins=sorted(rules.origins),
            allow_origin_regex=None,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=list(_CORS_HEADERS),
            expose_headers=["mcp-session-id", "www-authenticate"],
            max_age=600,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.inner(scope, receive, send)
            return
        if kind != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        refusal, browser = self._check(scope)
        if refusal is None:
            # Only a browser's request (it carries Origin) needs the CORS layer.
            await (self.app if browser else self.inner)(scope, receive, send)
            return
        status, message, extra = refusal
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
        data = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
            *extra,
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    def _check(self, scope: Scope) -> tuple[_Refusal | None, bool]:
        """(None if the request may pass, else why not; whether it came from a browser)."""
        found: dict[bytes, list[bytes]] = {name: [] for name in _CHECKED}
        for key, value in scope["headers"]:
            values = found.get(key.lower())  # lowercase per ASGI; lowered anyway: fail closed
            if values is not None:
                values.append(value)
        hosts, origins = found[b"host"], found[b"origin"]
        server = scope.get("server")
        local = str(server[0]) if server else None
        host = hosts[0].decode("latin-1").strip().lower() if len(hosts) == 1 else ""
        if not host or not self.rules.host_ok(host, local):
            shown = _quoted(hosts[0]) if hosts else "(none)"
            logger.info("refused a request for the host name %s", shown)
            return (421, MESSAGES["bad_host"].format(host=shown), []), bool(origins)
        if origins and (
            len(origins) > 1 or not self.rules.origin_ok(origins[0].decode("latin-1"), local)
        ):
            shown = _quoted(origins[0])
            logger.info("refused a request from the origin %s", shown)
            return (403, MESSAGES["bad_origin"].format(origin=shown), []), True
        if self._token is None:
            return None, bool(origins)
        if scope["method"] == "OPTIONS" and origins and found[b"access-control-request-method"]:
            return None, True  # a CORS preflight: answered by the CORS layer, never by MCP code
        # A browser client of an allowed origin may read why it was refused.
        cors = [(b"access-control-allow-origin", origins[0])] if origins else []
        given = found[b"authorization"]
        scheme, _, credential = given[0].partition(b" ") if len(given) == 1 else (b"", b"", b"")
        if scheme.lower() != b"bearer" or not credential.strip():
            challenge = b'Bearer realm="handrail"'
            return (401, MESSAGES["no_token"], [(b"www-authenticate", challenge), *cors]), True
        if not hmac.compare_digest(credential.strip(), self._token):
            challenge = b'Bearer realm="handrail", error="invalid_token"'
            return (401, MESSAGES["bad_token"], [(b"www-authenticate", challenge), *cors]), True
        return None, bool(origins)
