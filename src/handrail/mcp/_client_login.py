"""Signing in to an MCP server ahead of a session, and signing out (`handrail mcp login/logout`).

`login` drops the server's stored tokens (its client registration, and the authorization
server the sign-in is bound to, are kept: `_client_auth_code`), starts the server
with a person to ask (`_client_auth.signing_in`) and lists its tools: a server that needs
authorization asks for it on the way, the browser is shown the URL, and the loopback redirect
is waited for, at most `timeout` seconds. Sessions then use the stored sign-in (and refresh
it) without asking anyone. `logout` deletes the server's token file, binding included: the
next `login` signs in at whichever authorization server the server names then.

Neither reaches past the server's own entry: the token file is keyed by its URL and client.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._client import McpTools
from ._client_auth_redirect import Browser
from ._client_auth_store import token_file
from ._config import McpServerConfig

__all__ = ["LoginError", "LoginResult", "login", "logout"]

_HANDSHAKE = 30.0
"""Seconds on top of the person's time for the server to answer the handshake and list."""


class LoginError(Exception):
    """The sign-in could not be done; the message says why (one line)."""


@dataclass(frozen=True, slots=True)
class LoginResult:
    """What `login` did."""

    signed_in: bool
    """True when a sign-in is now stored (False: the server did not ask for one)."""
    tools: int
    """How many tools the server listed once signed in."""
    path: Path
    """The token file."""


async def login(
    config: McpServerConfig, *, browser: Browser, root: Path, timeout: float
) -> LoginResult:
    """Sign in to the HTTP server `config` through `browser`, within `timeout` seconds.

    Raises:
        LoginError: Not an HTTP server, one signed in to by a header, or the sign-in failed.
    """
    from ._client_auth_sign_in import signing_in

    name = config.name
    if config.url is None:
        raise LoginError(f"MCP server {name!r} is not an HTTP server: there is nothing to sign in")
    if any(k.lower() == "authorization" for k in config.headers):
        raise LoginError(
            f"MCP server {name!r} sends the Authorization header of its entry in mcp.json; "
            "remove that header to sign in with OAuth instead"
        )
    store = token_file(config)
    store.forget_tokens()
    with signing_in(browser, timeout=timeout):
        mcp = McpTools([config], root=root, token_budget=None, startup_timeout=timeout + _HANDSHAKE)
        try:
            await mcp.start()
        finally:
            await mcp.aclose()
    failure = mcp.failures.get(name)
    if failure is not None:
        raise LoginError(f"could not sign in to MCP server {name!r}: {failure}")
    return LoginResult(
        signed_in=store.read().get("tokens") is not None, tools=len(mcp.tools), path=store.path
    )


def logout(config: McpServerConfig) -> Path | None:
    """Forget the sign-in to `config`'s server; the file removed, or None when there was none."""
    if config.url is None:
        return None
    store = token_file(config)
    return store.path if store.delete() else None
