"""The connections to MCP servers: one per server, started on demand and again after a stop.

A connection is entered and left by its own background task (anyio cancel scopes must be left
by the task that entered them) and shared by concurrent calls. A server that stops, or a call
it refuses, becomes a `ToolFailure` with text for the model; the next call starts the server
again. The `mcp` SDK is imported inside the functions that need it, never at import time.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from .. import ErrorCode, ToolContext, ToolFailure, ToolResult
from .._version import __version__
from ._client_auth_sign_in import carried
from ._client_messages import say
from ._client_requests import ServerRequests
from ._client_results import to_result
from ._client_tool import McpTool
from ._config import McpServerConfig

if TYPE_CHECKING:
    import anyio
    import mcp_types
    from mcp.client.client import Client
    from mcp.shared.message import SessionMessage

__all__ = ["Connection", "RemoteServer", "StartError", "describe"]

logger = logging.getLogger("handrail.mcp")

_MAX_PAGES = 100
_CLOSE_GRACE = 10.0
DEFAULT_HEALTH_TIMEOUT = 5.0
"""Seconds a server has to answer a request after one of its calls timed out or was cancelled."""


def describe(exc: BaseException) -> str:
    """One line for an exception (the first leaf of an exception group)."""
    leaf: BaseException = exc
    for _ in range(100):  # groups nest; a bound keeps a pathological one from looping
        grouped = issubclass(type(leaf), BaseExceptionGroup)
        inner = cast(Sequence[BaseException], getattr(leaf, "exceptions", ()) if grouped else ())
        if not inner:
            break
        leaf = inner[0]
    message = getattr(leaf, "message", None)
    text = message if isinstance(message, str) and message else str(leaf)
    if isinstance(leaf, StartError) or type(leaf).__name__ == "MCPError":
        return text  # our own words, or the server's error message: no class name to add
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


class StartError(Exception):
    """A server did not come up; the message says why."""


class RemoteServer:
    """One configured server: its live connection, started on demand and again after a stop."""

    def __init__(
        self,
        config: McpServerConfig,
        prefix: str,
        root: Path,
        startup_timeout: float,
        health_timeout: float = DEFAULT_HEALTH_TIMEOUT,
        call_timeout: float | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.prefix = prefix
        self.cwd = (root / config.cwd).resolve() if config.cwd else root
        self.startup_timeout = startup_timeout
        self.health_timeout = health_timeout
        self.call_timeout = call_timeout
        """Seconds one call may take once the server is up (starting it is bounded apart)."""
        self.instructions: str | None = None
        self.restarts = 0
        """How often a connection that stopped answering was dropped (restarted on next call)."""
        self._checking: set[asyncio.Task[None]] = set()
        self._conn: Connection | None = None
        self._starting: asyncio.Task[Connection] | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self.requests = ServerRequests(self.name, root, self._live_client)
        """The answers to the server's own requests (elicitation, sampling, roots)."""

    def _live_client(self) -> Client | None:
        conn = self._conn
        return conn.client if conn is not None and not conn.ended else None

    def serving(self, ctx: ToolContext) -> AbstractContextManager[None]:
        """While `ctx`'s call runs, the server's questions are put to its person."""
        return self.requests.serving(ctx)

    async def connection(self) -> Connection:
        """The live connection; a stopped one is replaced (concurrent callers share a start)."""
        loop = asyncio.get_running_loop()
        conn = self._conn
        if conn is not None and not conn.ended and conn.loop is loop:
            return conn
        if conn is not None:
            self._conn = None
            self._retire(conn)
        starting = self._starting
        if starting is None or starting.get_loop() is not loop:
            # In a context of its own: the connection outlives the call that starts it.
            starting = self._starting = loop.create_task(self._start(), context=carried())
            starting.add_done_callback(self._started)
        # Shielded: a caller that is cancelled must not abort a start other callers wait for.
        return await asyncio.shield(starting)

    async def _start(self) -> Connection:
        conn = Connection(self)
        try:
            await conn.open(self.startup_timeout)
        except BaseException:
            self._retire(conn)
            raise
        self._conn = conn
        self.instructions = conn.instructions
        return conn

    def _started(self, task: asyncio.Task[Connection]) -> None:
        if self._starting is task:
            self._starting = None
        if not task.cancelled():
            task.exception()  # retrieved here: every caller may have gone

    def _retire(self, conn: Connection) -> None:
        if self._conn is conn:
            self._conn = None
        loop = asyncio.get_running_loop()
        if conn.loop is not loop:
            # Its task lives on another (probably finished) event loop and cannot be awaited
            # here; the server sees its stdin close when that loop's process ends.
            logger.warning("MCP server %r was opened on another event loop", self.name)
            return
        closing = loop.create_task(conn.close())
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists (all pages)."""
        conn = await self.connection()
        client = conn.require_client()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call(self, tool: McpTool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call `tool` on the server; every outcome is a `ToolResult` (or a `ToolFailure`)."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED
        from pydantic import ValidationError

        loc = ctx.locale
        try:
            conn = await self.connection()
        except Exception as exc:
            detail = describe(exc).rstrip(".")
            raise ToolFailure(say(loc, "start_failed", server=self.name, detail=detail)) from exc
        client = conn.require_client()
        finished = False

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if finished:  # a late notification must not report on a call that has ended
                return
            if not message:
                message = (
                    say(loc, "step", progress=progress, total=total)
                    if total
                    else say(loc, "step_open", progress=progress)
                )
            ctx.progress(message, progress=progress, total=total)

        try:
            async with asyncio.timeout(self.call_timeout):
                if tool.task_required:  # create, poll, fetch; cancelled on the server with us
                    from ._client_tasks import run_task

                    result = await run_task(
                        client, tool, args, ctx, server=self.name, time_limit=self.call_timeout
                    )
                else:
                    result = await client.call_tool(
                        tool.remote_name, args, progress_callback=on_progress
                    )
        except TimeoutError as exc:
            self._check_later(conn)
            seconds = self.call_timeout or 0
            text = say(loc, "timeout", server=self.name, tool=tool.name, seconds=seconds)
            raise ToolFailure(text, code=ErrorCode.TIMEOUT) from exc
        except asyncio.CancelledError:
            # A timeout or a cancel: the server may be hung as a whole, not just slow at this
            # call. Check in the background (this task is being cancelled).
            self._check_later(conn)
            raise
        except Exception as exc:
            closed = isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED
            if closed or conn.ended:
                self._retire(conn)
                raise ToolFailure(self._stopped_text(conn, tool, loc)) from exc
            if isinstance(exc, MCPError):
                text = say(loc, "refused", server=self.name, tool=tool.name, detail=exc.message)
                raise ToolFailure(text) from exc
            if isinstance(exc, ValidationError):
                first = str(exc).splitlines()[0]
                text = say(loc, "bad_result", server=self.name, tool=tool.name, detail=first)
                raise ToolFailure(text) from exc
            if isinstance(exc, RuntimeError) and "structured content" in str(exc):
                # The SDK checks structured content against the listed output schema itself.
                first = str(exc).splitlines()[0].split(": ", 1)[-1]
                text = say(loc, "bad_structured", server=self.name, tool=tool.name, detail=first)
                raise ToolFailure(text) from exc
            raise
        finally:
            finished = True
        return to_result(
            result, name=tool.name, server=self.name, remote_name=tool.remote_name, locale=loc
        )

    def _check_later(self, conn: Connection) -> None:
        if conn.ended or conn.loop is not asyncio.get_running_loop():
            return
        task = conn.loop.create_task(self._check(conn), name=f"mcp-health-{self.name}")
        self._checking.add(task)
        task.add_done_callback(self._checking.discard)

    async def _check(self, conn: Connection) -> None:
        """Ask the server something; one that does not answer in time is dropped.

        The next call starts it again; other servers are not affected.
        """
        client = conn.client
        if client is None or conn.ended:
            return
        try:
            # Listing tools, not a ping: ping is gone from the 2026-07-28 protocol.
            await asyncio.wait_for(client.list_tools(), self.health_timeout)
            return
        except Exception as exc:  # a timeout, a closed stream: either way it is not answering
            reason = describe(exc) if not isinstance(exc, TimeoutError) else "no answer"
        logger.warning(
            "MCP server %r stopped answering (%s) after a call was cancelled or timed out; "
            "it is stopped and will be started again on the next call",
            self.name,
            reason,
        )
        self.restarts += 1
        self._retire(conn)

    def _stopped_text(self, conn: Connection, tool: McpTool, locale: str) -> str:
        detail = say(locale, "connection_closed")
        tail = conn.stderr_tail()
        if tail:
            detail += say(locale, "and") + say(locale, "stderr", text=tail)
        return say(locale, "stopped", server=self.name, detail=detail, tool=tool.name)

    async def close(self) -> None:
        """Stop the server (a start under way is let finish, then stopped)."""
        starting = self._starting
        if starting is not None and starting.get_loop() is asyncio.get_running_loop():
            await asyncio.wait({starting})
        conn, self._conn = self._conn, None
        if conn is not None:
            if conn.loop is asyncio.get_running_loop():
                await conn.close()
            else:
                self._retire(conn)
        for task in list(self._checking):
            task.cancel()
        for _ in range(3):  # closes retired while this one waited
            if not self._closing:
                break
            await asyncio.wait(set(self._closing))


class Connection:
    """One connection to one server, entered and left by its own background task."""

    def __init__(self, server: RemoteServer) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.client: Client | None = None
        self.instructions: str | None = None
        self.ended = False
        """True once the server's stream ended or the owner task finished."""
        self._stop = asyncio.Event()
        self._scope: anyio.CancelScope | None = None
        self._errlog: IO[str] | None = None
        self._task: asyncio.Task[None] | None = None

    def require_client(self) -> Client:
        """The connected client (a bug if called before `open` succeeded)."""
        if self.client is None:
            raise StartError("the connection is not open")
        return self.client

    async def open(self, timeout: float) -> None:
        """Start the owner task and wait until the session is initialised."""
        ready: asyncio.Future[None] = self.loop.create_future()
        ready.add_done_callback(_retrieve)
        self._task = self.loop.create_task(self._own(ready), name=f"mcp-{self.server.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            raise StartError(
                f"it did not complete the MCP handshake within {timeout:g} seconds"
            ) from None

    async def _own(self, ready: asyncio.Future[None]) -> None:
        import anyio
        from mcp.client.client import Client
        from mcp_types import Implementation

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                asks = self.server.requests
                client = Client(
                    self._transport(),
                    cache=None,
                    client_info=Implementation(name="handrail", version=__version__),
                    elicitation_callback=asks.elicit,
                    sampling_callback=asks.sample,
                    list_roots_callback=asks.list_roots,
                )
                async with client:
                    self.client = client
                    self.instructions = client.instructions
                    if not ready.done():
                        ready.set_result(None)
                    await self._stop.wait()
        except Exception as exc:
            if not ready.done():
                detail = describe(exc)
                tail = self.stderr_tail()
                ready.set_exception(StartError(f"{detail} (stderr: {tail})" if tail else detail))
            else:
                logger.debug("MCP server %r connection ended: %s", self.server.name, exc)
        finally:
            self.ended = True
            if not ready.done():
                ready.set_exception(StartError("it stopped while starting"))

    def _transport(self) -> AbstractAsyncContextManager[Any]:
        config = self.server.config
        if config.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # The server's stderr goes to a private file: it must not mix with a terminal UI,
            # and its last lines explain a crash.
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=self.server.cwd,
            )
            return _watched(stdio_client(params, errlog=self._errlog), self._stream_ended)
        assert config.url is not None
        return _watched(_http_transport(config), self._stream_ended)

    def _stream_ended(self) -> None:
        self.ended = True

    def stderr_tail(self, limit: int = 400) -> str:
        """The last lines the server wrote to stderr (stdio servers), on one line."""
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            fd = log.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, 4096, max(0, size - 4096))
        except OSError:
            return ""
        lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
        text = " | ".join([line for line in lines if line][-3:])
        return text[-limit:]

    async def close(self) -> None:
        """Leave the session and stop the server; a stuck shutdown is cancelled after a grace."""
        self._stop.set()
        task = self._task
        if self.client is None and self._scope is not None:
            self._scope.cancel()  # still starting (a hung handshake): nothing to leave politely
        if task is not None and not task.done():
            done, _ = await asyncio.wait({task}, timeout=_CLOSE_GRACE)
            if not done and self._scope is not None:
                self._scope.cancel()
                await asyncio.wait({task}, timeout=_CLOSE_GRACE)
        if self._errlog is not None:
            self._errlog.close()


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


@asynccontextmanager
async def _http_transport(config: McpServerConfig) -> AsyncGenerator[Any]:
    """Streamable HTTP with the server's headers and OAuth (`_client_auth`).

    A handshake refused for want of authorization ends as a `StartError` in words.
    """
    from mcp.client.streamable_http import streamable_http_client

    from ._client_auth import authorization_failure, http_client

    assert config.url is not None
    async with http_client(config) as http:
        async with streamable_http_client(config.url, http_client=http) as streams:
            try:
                yield streams
            except Exception as exc:
                clause = authorization_failure(exc)
                if clause is None:
                    raise
                raise StartError(clause) from exc


@asynccontextmanager
async def _watched(
    inner: AbstractAsyncContextManager[Any], on_end: Callable[[], None]
) -> AsyncGenerator[Any]:
    """The transport, with a read stream that reports its end (the server stopped)."""
    async with inner as (read, write):
        yield _WatchedReadStream(read, on_end), write


class _WatchedReadStream:
    """A read stream that calls `on_end` when the server's side ends, before anyone waits on it.

    The dispatcher wakes pending calls with CONNECTION_CLOSED after the stream ends, so by then
    the connection is already marked ended and the next call starts a new server.
    """

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item (the dispatcher looks for it)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next message from the server."""
        import anyio

        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the underlying stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
