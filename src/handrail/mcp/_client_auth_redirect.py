"""The loopback redirect of a browser sign-in: a one-shot HTTP listener on 127.0.0.1.

The authorization server sends the person's browser back to
`http://127.0.0.1:<port>/callback?code=...&state=...` (RFC 8252 §7.3, a native app's loopback
redirect); this listener takes that one request and hands its parameters to the sign-in.

Invariants:

* It listens on 127.0.0.1 only, from before the browser is opened until the redirect came or
  the wait ended, and never longer.
* Only `GET <path>` carrying the `state` of this sign-in counts: another local program that
  guesses the port cannot end the sign-in or slip in a code of its own.
* Every connection is bounded (a request line and headers of sane size, read within
  `_READ_TIMEOUT` seconds), so a client that connects and says nothing holds nothing.

Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

__all__ = ["Browser", "LoopbackRedirect", "Redirect"]

Browser = Callable[[str], Awaitable[None]]
"""Shows the person an authorization URL (opens a browser, prints it...) and returns."""

_READ_TIMEOUT = 10.0
_MAX_HEADERS = 100


@dataclass(frozen=True, slots=True)
class Redirect:
    """What the browser was sent back with: a code, or the authorization server's error."""

    code: str | None
    state: str | None
    iss: str | None
    error: str | None = None
    error_description: str | None = None


class LoopbackRedirect:
    """Listen on `127.0.0.1:port` (0: a free port) for the redirect to `path`.

    Use as `async with LoopbackRedirect(port) as listener:`, then `expect(state)` before the
    browser is opened and `await listener.wait(timeout)`.
    """

    def __init__(self, port: int = 0, path: str = "/callback") -> None:
        self.port = port
        self.path = path
        self._state: str | None = None
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[Redirect] | None = None

    @property
    def uri(self) -> str:
        """The redirect URI this listener answers."""
        return f"http://127.0.0.1:{self.port}{self.path}"

    def expect(self, state: str | None) -> None:
        """Count only a redirect that carries `state` (the one in the authorization URL)."""
        self._state = state

    async def __aenter__(self) -> LoopbackRedirect:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop listening (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_READ_TIMEOUT):
                    await server.wait_closed()

    async def wait(self, timeout: float) -> Redirect:
        """The redirect, once it came. Raises TimeoutError after `timeout` seconds."""
        assert self._result is not None, "use the listener as an async context manager"
        async with asyncio.timeout(timeout):
            return await asyncio.shield(self._result)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_TIMEOUT):
                line = await reader.readline()
                for _ in range(_MAX_HEADERS):
                    if await reader.readline() in (b"\r\n", b"\n", b""):
                        break
            status, page = self._answer(line.decode("latin-1"))
            body = (
                "<!doctype html><meta charset=utf-8><title>handrail</title>"
                f"<p style='font-family:sans-serif'>{html.escape(page)}</p>"
            ).encode()
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            writer.write(head + body)
            await writer.drain()
        except (TimeoutError, ValueError, ConnectionError):
            pass  # a client that misbehaves gets nothing; the sign-in waits on
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _answer(self, request_line: str) -> tuple[str, str]:
        """The status and the page for one request, recording the redirect it carries."""
        method, _, rest = request_line.partition(" ")
        parts = urlsplit(rest.rpartition(" ")[0] or rest)
        if method != "GET" or parts.path != self.path:
            return "404 Not Found", "Not found."
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if "code" not in query and "error" not in query:
            return "400 Bad Request", "This is not a sign-in redirect."
        if query.get("state") != self._state:
            return "400 Bad Request", "This sign-in link is not the one handrail is waiting for."
        result = self._result
        if result is None or result.done():
            return "409 Conflict", "This sign-in is already finished; you can close this tab."
        found = Redirect(
            code=query.get("code"),
            state=query.get("state"),
            iss=query.get("iss"),
            error=query.get("error"),
            error_description=query.get("error_description"),
        )
        result.set_result(found)
        if found.error is not None:
            return "200 OK", f"Sign-in was not completed ({found.error}). You can close this tab."
        return "200 OK", "Signed in to the MCP server. You can close this tab."
