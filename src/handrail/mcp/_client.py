"""The MCP client: the tools of configured MCP servers, as handrail tools.

```python
from handrail import Registry, Runtime
from handrail.builtin import coding_tools
from handrail.mcp import McpTools

async with McpTools.from_config(root) as mcp:        # starts the servers, lists their tools
    registry = Registry(coding_tools(project_dir=root), imported=mcp.tools)
    rt = Runtime(registry, root=root)
    await rt.call("mcp__github__search_issues", {"query": "crash"})
```

Invariants:

* A server's tool `t` becomes `mcp__<server>__<t>`, sanitised to `[A-Za-z0-9_-]{1,64}` (a
  shortened name ends in a hash of the original); the original name is used on the wire.
* Arguments are checked against the tool's own JSON Schema by handrail's JSON Schema track before
  the server sees them. Annotations map to flags: readOnlyHint -> read-only and
  concurrency-safe, destructiveHint -> destructive (MCP's default: true), idempotentHint ->
  idempotent, openWorldHint -> `McpTool.open_world`. They are the server's claims: a read-only
  claim lets a call run without asking in the default mode, like any read-only tool.
* When the tools' names, descriptions and schemas together would cost more than `token_budget`
  tokens (about 4 characters per token; default 20,000, a tenth of a 200k context) every MCP
  tool is deferred: the model finds them through tool_search.
* One connection per server, shared by concurrent calls, owned by a background task (anyio
  cancel scopes must be left by the task that entered them). A server that stops gives
  EXECUTION_ERROR results, never an exception, and is started again on the next call; a call
  cancelled in handrail sends the MCP cancel notification; MCP progress reaches `ctx.progress`.
* The `mcp` SDK (about 0.9 s to import) is imported on the first start, never by
  `import handrail.mcp`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import re
import tempfile
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, cast

from .. import ErrorCode, JsonSchemaTool, Registry, Session, ToolContext, ToolFailure, ToolResult
from .._version import __version__
from ..errors import ConfigurationError
from ._client_messages import say
from ._config import McpServerConfig, load_mcp_config

if TYPE_CHECKING:
    import anyio
    import mcp_types
    from mcp.client.client import Client
    from mcp.shared.message import SessionMessage

__all__ = ["DEFAULT_TOKEN_BUDGET", "McpTool", "McpTools", "load_mcp_tools"]

logger = logging.getLogger("handrail.mcp")

DEFAULT_TOKEN_BUDGET = 20_000
"""Tokens the MCP tools may take in the tool list before they are all deferred (a tenth of a
200k-token context)."""
CHARS_PER_TOKEN = 4
"""The estimate: JSON tool definitions run at about four characters per token."""
DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds a server has to start and list its tools."""
_MAX_PAGES = 100
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_CLOSE_GRACE = 10.0


def _require_sdk() -> None:
    try:
        import mcp.client.client  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError as exc:
        raise ImportError(
            'MCP servers need the official MCP SDK: pip install "handrail[mcp]"'
        ) from exc


class McpTool(JsonSchemaTool):
    """A tool of an MCP server; calls go over that server's shared connection."""

    def __init__(
        self,
        *,
        name: str,
        server: _Server,
        remote_name: str,
        description: str,
        parameters: Mapping[str, Any],
        annotations: Mapping[str, Any],
        title: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.server = server.name
        """The name of the server (as configured) this tool belongs to."""
        self.remote_name = remote_name
        """The tool's own name on the server, used on the wire."""
        self.title = title
        """The human-readable title the server gave, if any."""
        self.annotations: Mapping[str, Any] = dict(annotations)
        """The server's annotations as sent (`readOnlyHint`, `destructiveHint`, ...)."""
        self.open_world = annotations.get("openWorldHint") is not False
        """The tool may reach beyond a closed domain (the web, other systems); MCP's default."""
        self._server = server
        read_only = annotations.get("readOnlyHint") is True
        super().__init__(
            name=name,
            description=description,
            parameters=parameters,
            handler=self._call,
            read_only=read_only,
            concurrency_safe=read_only,
            destructive=not read_only and annotations.get("destructiveHint") is not False,
            idempotent=read_only or annotations.get("idempotentHint") is True,
            timeout=timeout,
        )

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._server.call(self, args, ctx)


class McpTools:
    """The tools of a set of MCP servers, and the servers' connections.

    Build one from the config files (`from_config`) or from `McpServerConfig`s; `start()` (or
    `async with`) connects to every server and lists its tools into `tools`. Call `aclose()`
    when done (or `close_with(session)`); a later call starts its server again.

    Args:
        servers: The servers, by name or as a list.
        root: The project root: the default working directory of stdio servers, and the base of
            a relative `cwd`. Default: the current directory.
        token_budget: Tokens the tool definitions may take before all MCP tools are deferred
            (None: never defer; 0: always).
        startup_timeout: Seconds a server has to start and list its tools.
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig] | Iterable[McpServerConfig],
        *,
        root: str | Path | None = None,
        token_budget: int | None = DEFAULT_TOKEN_BUDGET,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> None:
        configs = (
            list(cast(Mapping[str, McpServerConfig], servers).values())
            if isinstance(servers, Mapping)
            else list(servers)
        )
        if token_budget is not None and token_budget < 0:
            raise ConfigurationError("token_budget must be >= 0 (or None to never defer)")
        if startup_timeout <= 0:
            raise ConfigurationError("startup_timeout must be positive seconds")
        self.root = Path(root if root is not None else Path.cwd()).resolve()
        self.token_budget = token_budget
        self.startup_timeout = startup_timeout
        self._servers: dict[str, _Server] = {}
        prefixes: dict[str, str] = {}
        for config in configs:
            prefix = server_prefix(config.name)
            if prefix in prefixes:
                raise ConfigurationError(
                    f"MCP servers {prefixes[prefix]!r} and {config.name!r} both make tool names "
                    f"start with mcp__{prefix}__; rename one of them"
                )
            prefixes[prefix] = config.name
            self._servers[config.name] = _Server(config, prefix, self.root, startup_timeout)
        self.tools: list[McpTool] = []
        """The imported tools, sorted by name (filled by `start`)."""
        self.failures: dict[str, str] = {}
        """Servers that could not be started or listed, with the reason; they have no tools."""
        self.skipped: dict[str, str] = {}
        """Tools left out (`server/tool`), with the reason (an invalid input schema)."""
        self.instructions: dict[str, str] = {}
        """Each server's `instructions`, for the host's system prompt."""
        self.estimated_tokens = 0
        """The estimated size of all the tools' definitions, in tokens."""
        self.deferred = False
        """True when the tools were deferred for going over the token budget."""
        self._started = False

    @classmethod
    def from_config(
        cls,
        root: str | Path,
        *,
        user_path: Path | None = None,
        token_budget: int | None = DEFAULT_TOKEN_BUDGET,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> McpTools:
        """The servers of `<root>/.handrail/mcp.json` and the user's `mcp.json` (not started).

        Raises:
            ConfigurationError: A config file is malformed (the message names the file).
        """
        servers = load_mcp_config(root, user_path=user_path)
        return cls(servers, root=root, token_budget=token_budget, startup_timeout=startup_timeout)

    @property
    def servers(self) -> tuple[str, ...]:
        """The configured server names."""
        return tuple(self._servers)

    async def start(self) -> list[McpTool]:
        """Connect to every server and list its tools (once; later calls return `tools`).

        A server that cannot be started is recorded in `failures` and logged; it does not stop
        the others.
        """
        if self._started:
            return self.tools
        _require_sdk()
        servers = list(self._servers.values())
        listings = await asyncio.gather(*(self._list(s) for s in servers))
        tools: list[McpTool] = []
        for server, listing in zip(servers, listings, strict=True):
            if isinstance(listing, str):
                self.failures[server.name] = listing
                logger.warning("MCP server %r did not start: %s", server.name, listing)
                continue
            if server.instructions:
                self.instructions[server.name] = server.instructions
            tools.extend(self._build(server, listing))
        tools.sort(key=lambda t: t.name)
        chars = sum(_cost(t) for t in tools)
        self.estimated_tokens = math.ceil(chars / CHARS_PER_TOKEN)
        self.deferred = bool(tools) and (
            self.token_budget is not None and self.estimated_tokens > self.token_budget
        )
        for t in tools:
            t.deferred = self.deferred
        self.tools = tools
        self._started = True
        return tools

    async def _list(self, server: _Server) -> list[mcp_types.Tool] | str:
        try:
            await server.connection()  # bounded by the handshake timeout
            return await asyncio.wait_for(server.list_tools(), self.startup_timeout)
        except TimeoutError:
            await server.close()
            return f"no tool list within {self.startup_timeout:g} seconds"
        except Exception as exc:
            await server.close()
            return describe(exc)

    def _build(self, server: _Server, listing: Sequence[mcp_types.Tool]) -> list[McpTool]:
        used: set[str] = set()
        out: list[McpTool] = []
        for remote in listing:
            name = tool_name(server.prefix, remote.name, used)
            annotations = (
                remote.annotations.model_dump(by_alias=True, exclude_none=True)
                if remote.annotations is not None
                else {}
            )
            try:
                t = McpTool(
                    name=name,
                    server=server,
                    remote_name=remote.name,
                    description=remote.description or remote.title or "",
                    parameters=remote.input_schema,
                    annotations=annotations,
                    title=remote.title,
                    timeout=server.config.timeout,
                )
            except ConfigurationError as exc:
                self.skipped[f"{server.name}/{remote.name}"] = str(exc)
                logger.warning("skipped MCP tool %s/%s: %s", server.name, remote.name, exc)
                continue
            used.add(name)
            out.append(t)
        return out

    def registry(self) -> Registry:
        """A registry of the imported tools, to merge after the local ones."""
        return Registry(imported=self.tools)

    def close_with(self, session: Session) -> None:
        """Close the connections when `session` ends (`Runtime.aclose`, `Session.aclose`)."""
        session.on_close(self.aclose)

    async def aclose(self) -> None:
        """Stop every server and close every connection. Safe to call twice."""
        await asyncio.gather(*(s.close() for s in self._servers.values()))

    async def __aenter__(self) -> McpTools:
        try:
            await self.start()
        except BaseException:  # cancelled half-way: the servers already up must not linger
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


async def load_mcp_tools(
    root: str | Path,
    *,
    user_path: Path | None = None,
    token_budget: int | None = DEFAULT_TOKEN_BUDGET,
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
) -> McpTools:
    """Read the MCP config of `root` (and the user's), start the servers and list their tools.

    ```python
    mcp = await load_mcp_tools(root)
    registry = Registry(coding_tools(project_dir=root), imported=mcp.tools)
    ...
    await mcp.aclose()
    ```

    Raises:
        ConfigurationError: A config file is malformed.
        ImportError: The `mcp` SDK is not installed (`pip install "handrail[mcp]"`).
    """
    tools = McpTools.from_config(
        root, user_path=user_path, token_budget=token_budget, startup_timeout=startup_timeout
    )
    return await tools.__aenter__()


# -- names and sizes ---------------------------------------------------------------------------


def server_prefix(name: str) -> str:
    """The part of tool names that stands for a server: `[A-Za-z0-9_-]`, no `__` inside."""
    clean = re.sub(r"_{2,}", "_", _INVALID.sub("_", name)).strip("_")
    return clean or "server_" + _digest(name)


def tool_name(prefix: str, remote: str, used: set[str]) -> str:
    """`mcp__<prefix>__<remote>` made valid, at most 64 characters, and unique in `used`."""
    name = f"mcp__{prefix}__{_INVALID.sub('_', remote) or 'tool'}"
    if len(name) > 64 or name in used:
        name = f"{name[:57]}_{_digest(remote)}"
    return name


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def _cost(tool: McpTool) -> int:
    definition = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return len(json.dumps(definition, ensure_ascii=False, separators=(",", ":")))


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
    if isinstance(leaf, _StartError):
        return text
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


class _StartError(Exception):
    """A server did not come up; the message says why."""


# -- servers and connections -------------------------------------------------------------------


class _Server:
    """One configured server: its live connection, started on demand and again after a stop."""

    def __init__(
        self, config: McpServerConfig, prefix: str, root: Path, startup_timeout: float
    ) -> None:
        self.config = config
        self.name = config.name
        self.prefix = prefix
        self.cwd = (root / config.cwd).resolve() if config.cwd else root
        self.startup_timeout = startup_timeout
        self.instructions: str | None = None
        self._conn: _Connection | None = None
        self._starting: asyncio.Task[_Connection] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    async def connection(self) -> _Connection:
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
            starting = self._starting = loop.create_task(self._start())
            starting.add_done_callback(self._started)
        # Shielded: a caller that is cancelled must not abort a start other callers wait for.
        return await asyncio.shield(starting)

    async def _start(self) -> _Connection:
        conn = _Connection(self)
        try:
            await conn.open(self.startup_timeout)
        except BaseException:
            self._retire(conn)
            raise
        self._conn = conn
        self.instructions = conn.instructions
        return conn

    def _started(self, task: asyncio.Task[_Connection]) -> None:
        if self._starting is task:
            self._starting = None
        if not task.cancelled():
            task.exception()  # retrieved here: every caller may have gone

    def _retire(self, conn: _Connection) -> None:
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
            result = await client.call_tool(tool.remote_name, args, progress_callback=on_progress)
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
            raise
        finally:
            finished = True
        return to_result(result, tool, loc)

    def _stopped_text(self, conn: _Connection, tool: McpTool, locale: str) -> str:
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
        for _ in range(3):  # closes retired while this one waited
            if not self._closing:
                break
            await asyncio.wait(set(self._closing))


class _Connection:
    """One connection to one server, entered and left by its own background task."""

    def __init__(self, server: _Server) -> None:
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
            raise _StartError("the connection is not open")
        return self.client

    async def open(self, timeout: float) -> None:
        """Start the owner task and wait until the session is initialised."""
        ready: asyncio.Future[None] = self.loop.create_future()
        ready.add_done_callback(_retrieve)
        self._task = self.loop.create_task(self._own(ready), name=f"mcp-{self.server.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            raise _StartError(
                f"it did not complete the MCP handshake within {timeout:g} seconds"
            ) from None

    async def _own(self, ready: asyncio.Future[None]) -> None:
        import anyio
        from mcp.client.client import Client
        from mcp_types import Implementation

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                client = Client(
                    self._transport(),
                    cache=None,
                    client_info=Implementation(name="handrail", version=__version__),
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
                ready.set_exception(_StartError(f"{detail} (stderr: {tail})" if tail else detail))
            else:
                logger.debug("MCP server %r connection ended: %s", self.server.name, exc)
        finally:
            self.ended = True
            if not ready.done():
                ready.set_exception(_StartError("it stopped while starting"))

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
        return _watched(_http_transport(config.url, dict(config.headers)), self._stream_ended)

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
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncGenerator[Any]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers or None) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


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


# -- results -----------------------------------------------------------------------------------


def to_result(result: mcp_types.CallToolResult, tool: McpTool, locale: str) -> ToolResult:
    """An MCP result as a ToolResult: text joined, other content summarised a line each."""
    text = content_text(result.content, locale)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, indent=2)
    metadata: dict[str, Any] = {"mcp_server": tool.server, "mcp_tool": tool.remote_name}
    if result.structured_content is not None:
        metadata["structured_content"] = result.structured_content
    if result.is_error:
        return ToolResult.failure(
            ErrorCode.EXECUTION_ERROR,
            text or say(locale, "no_details", tool=tool.name),
            summary=f"{tool.name}: {ErrorCode.EXECUTION_ERROR.value}",
            metadata=metadata,
        )
    return ToolResult.success(text, metadata=metadata)


def content_text(blocks: Sequence[mcp_types.ContentBlock], locale: str) -> str:
    """MCP content as text: text blocks as they are, anything else as a one-line summary."""
    from mcp_types import (
        AudioContent,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    lines: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            lines.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            key = "image" if isinstance(block, ImageContent) else "audio"
            size = say(locale, "bytes", n=_decoded_size(block.data))
            lines.append(say(locale, key, mime=block.mime_type, size=size))
        elif isinstance(block, ResourceLink):
            lines.append(say(locale, "link", name=block.name, uri=block.uri))
        else:  # an embedded resource: the union above is exhaustive
            res = block.resource
            mime = res.mime_type or "?"
            if isinstance(res, TextResourceContents):
                chars = len(res.text)
                lines.append(say(locale, "resource_text", uri=res.uri, mime=mime, chars=chars))
            else:
                size = say(locale, "bytes", n=_decoded_size(res.blob))
                lines.append(say(locale, "resource_blob", uri=res.uri, mime=mime, size=size))
    return "\n".join(lines)


def _decoded_size(data: str) -> int:
    return len(data.rstrip("=")) * 3 // 4
