"""The MCP client: the tools of configured MCP servers, as handrail tools.

```python
from handrail import Registry, Runtime
from handrail.builtin import coding_tools
from handrail.mcp import McpTools

async with McpTools.from_config(root) as mcp:  # lists their tools: cached, or started
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
* Nothing waits forever: a call has the server's `timeout` (default `call_timeout`, 600 s),
  counted from the request (a server's start-up has `startup_timeout` of its own), and ends
  as TIMEOUT; after a timed-out or cancelled call the server must answer a ping within
  `health_timeout` seconds, or it is stopped (logged, counted in `restarts`) and started
  again on its next call. Other servers' tools are not affected.
* The `mcp` SDK (about 0.9 s to import) is imported on the first start, never by
  `import handrail.mcp`.

* Results keep every content block: text stays text; images, audio, embedded resources and
  resource links become `ContentPart`s in order, `structuredContent` becomes `structured`
  (checked against the tool's `outputSchema`). Tools that require MCP tasks run as tasks
  (`_client_tasks`: created, polled at the server's interval, fetched, cancelled on the server
  when the call is); tools where tasks are optional are called directly.

* Lazy servers (the default): a server's tool list is cached in handrail's private state
  folder, keyed by a hash of its configuration (`_tool_cache`). `start()` builds the tools of a
  server whose cached list is fresh (the server's `ttlMs`, else 24 hours) without starting it;
  the first call of one of its tools starts it and lists its tools before that call goes out
  (`_client_lazy`: a removed tool, a changed schema or weaker annotations are caught there).
  A missing, stale or unreadable cache, or a changed configuration, starts the server at
  `start()` as before; `lazy=False` starts every server and never reads or writes the cache,
  `refresh=True` starts every server and rewrites its cache.

Modules import one way: `_client` -> `_client_lazy` (servers listed from the cache) ->
`_client_connection` (connections, calls) ->
`_client_results` (MCP results as `ToolResult`s) and `_client_tool` (the tool class, which
knows its server only through the `ToolServer` protocol).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import logging
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from .. import Registry, Session
from ..errors import ConfigurationError
from ..validation import OutputSchema
from ._client_connection import DEFAULT_HEALTH_TIMEOUT, RemoteServer, describe
from ._client_lazy import ListedServer, list_server
from ._client_tool import McpTool
from ._config import McpServerConfig, load_mcp_config, user_mcp_config_path
from ._tool_cache import ListedTool, Listing, ToolCache, config_key

__all__ = ["DEFAULT_TOKEN_BUDGET", "McpTools", "load_mcp_tools"]

logger = logging.getLogger("handrail.mcp")

DEFAULT_TOKEN_BUDGET = 20_000
"""Tokens the MCP tools may take in the tool list before they are all deferred (a tenth of a
200k-token context)."""
CHARS_PER_TOKEN = 4
"""The estimate: JSON tool definitions run at about four characters per token."""
DEFAULT_STARTUP_TIMEOUT = 30.0
"""Seconds a server has to start and list its tools."""
DEFAULT_CALL_TIMEOUT = 600.0
"""Seconds one call may take when the server's config sets no `timeout`: a hung server must
not hold a call (and the agent waiting on it) forever."""
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def _require_sdk(*, now: bool = True) -> None:
    """Import the SDK (`now`), or only check that it is installed (a start from the cache)."""
    try:
        if now:
            import mcp.client.client  # noqa: F401  # pyright: ignore[reportUnusedImport]
        elif importlib.util.find_spec("mcp") is None:
            raise ImportError("No module named 'mcp'")
    except ImportError as exc:
        raise ImportError(
            'MCP servers need the official MCP SDK: pip install "handrail[mcp]"'
        ) from exc


class McpTools:
    """The tools of a set of MCP servers, and the servers' connections.

    Build one from the config files (`from_config`) or from `McpServerConfig`s; `start()` (or
    `async with`) lists every server's tools into `tools`: from the cache for a server whose
    cached list is fresh (started on the first call of one of its tools), else by starting it.
    Call `aclose()` when done (or `close_with(session)`); a later call starts its server again.

    Args:
        servers: The servers, by name or as a list.
        root: The project root: the default working directory of stdio servers, and the base of
            a relative `cwd`. Default: the current directory.
        token_budget: Tokens the tool definitions may take before all MCP tools are deferred
            (None: never defer; 0: always).
        startup_timeout: Seconds a server has to start and list its tools.
        call_timeout: Seconds a call may take when the server's config sets no `timeout`; a
            call past it is TIMEOUT, and a server that then does not answer a ping within
            `health_timeout` seconds is stopped and started again on its next call.
        lazy: Take the tools of a server whose cached list is fresh from the cache and start
            it on first use (False: start every server and keep no cache).
        refresh: Start every server now and rewrite its cached list (with `lazy`).
    """

    def __init__(
        self,
        servers: Mapping[str, McpServerConfig] | Iterable[McpServerConfig],
        *,
        root: str | Path | None = None,
        token_budget: int | None = DEFAULT_TOKEN_BUDGET,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        health_timeout: float = DEFAULT_HEALTH_TIMEOUT,
        lazy: bool = True,
        refresh: bool = False,
    ) -> None:
        configs = (
            list(cast(Mapping[str, McpServerConfig], servers).values())
            if isinstance(servers, Mapping)
            else list(servers)
        )
        if token_budget is not None and token_budget < 0:
            raise ConfigurationError("token_budget must be >= 0 (or None to never defer)")
        if startup_timeout <= 0 or call_timeout <= 0 or health_timeout <= 0:
            raise ConfigurationError("MCP timeouts must be positive seconds")
        self.call_timeout = call_timeout
        self.root = Path(root if root is not None else Path.cwd()).resolve()
        self.token_budget = token_budget
        self.startup_timeout = startup_timeout
        self._servers: dict[str, RemoteServer] = {}
        prefixes: dict[str, str] = {}
        for config in configs:
            prefix = server_prefix(config.name)
            if prefix in prefixes:
                raise ConfigurationError(
                    f"MCP servers {prefixes[prefix]!r} and {config.name!r} both make tool names "
                    f"start with mcp__{prefix}__; rename one of them"
                )
            prefixes[prefix] = config.name
            self._servers[config.name] = RemoteServer(
                config,
                prefix,
                self.root,
                startup_timeout,
                health_timeout,
                call_timeout=config.timeout or call_timeout,
            )
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
        self.lazy = lazy
        """Whether servers with a fresh cached tool list start only when first called."""
        self.cached: set[str] = set()
        """The servers whose tools came from the cache (filled by `start`): not started by it."""
        self._cache = ToolCache() if lazy else None
        self._refresh = refresh
        self._started = False

    @classmethod
    def from_config(
        cls,
        root: str | Path,
        *,
        user_path: Path | None = None,
        token_budget: int | None = DEFAULT_TOKEN_BUDGET,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        lazy: bool = True,
    ) -> McpTools:
        """The servers of `<root>/.handrail/mcp.json` and the user's `mcp.json` (not started).

        No server configured is logged as a warning naming the files looked at.

        Raises:
            ConfigurationError: `root` is not a folder, or a config file is malformed (the
                message names the file).
        """
        folder = Path(root)
        if not folder.is_dir():
            what = "does not exist" if not folder.exists() else "is not a folder"
            raise ConfigurationError(f"MCP project folder {folder} {what}")
        servers = load_mcp_config(root, user_path=user_path)
        if not servers:
            files = [user_path or user_mcp_config_path(), folder / ".handrail" / "mcp.json"]
            logger.warning(
                "no MCP servers configured: looked at %s",
                " and ".join(
                    f"{f} ({'no server to start in it' if f.is_file() else 'not found'})"
                    for f in files
                ),
            )
        return cls(
            servers,
            root=root,
            token_budget=token_budget,
            startup_timeout=startup_timeout,
            lazy=lazy,
        )

    @property
    def servers(self) -> tuple[str, ...]:
        """The configured server names."""
        return tuple(self._servers)

    @property
    def restarts(self) -> dict[str, int]:
        """Per server, how often it stopped answering after a timed-out call and was dropped."""
        return {name: s.restarts for name, s in self._servers.items()}

    async def start(self) -> list[McpTool]:
        """List every server's tools (once; later calls return `tools`).

        A server whose cached list is fresh is not started (it is in `cached`); the others are
        started and listed, and their lists cached. A server that cannot be started is recorded
        in `failures` and logged; it does not stop the others.
        """
        if self._started:
            return self.tools
        servers = list(self._servers.values())
        cached = {s.name: found for s in servers if (found := self._cached(s)) is not None}
        to_start = [s for s in servers if s.name not in cached]
        _require_sdk(now=bool(to_start))
        started = await asyncio.gather(*(self._list(s) for s in to_start))
        listings: dict[str, Listing | str] = {**cached}
        listings.update({s.name: found for s, found in zip(to_start, started, strict=True)})
        await self._store([(s, found) for s, found in zip(to_start, started, strict=True)])
        tools: list[McpTool] = []
        for server in servers:
            listing = listings[server.name]
            if isinstance(listing, str):
                self.failures[server.name] = listing
                logger.warning("MCP server %r did not start: %s", server.name, listing)
                continue
            if listing.instructions:
                self.instructions[server.name] = listing.instructions
            gate = ListedServer(
                server,
                listing,
                live=server.name not in cached,
                list_timeout=self.startup_timeout,
                relisted=partial(self._relisted, server),
                rebuild=self._rebuild,
            )
            built = self._build(gate, listing.tools)
            gate.adopt(built)
            tools.extend(built)
        self.cached = set(cached)
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

    def _cached(self, server: RemoteServer) -> Listing | None:
        """The server's cached list when it may stand in for the server's own."""
        if self._cache is None or self._refresh:
            return None
        found = self._cache.load(config_key(server.config, server.cwd))
        return found if found is not None and found.fresh(time.time()) else None

    async def _store(self, listed: Sequence[tuple[RemoteServer, Listing | str]]) -> None:
        cache = self._cache
        if cache is None:
            return
        writes = [
            (config_key(s.config, s.cwd), s.name, found)
            for s, found in listed
            if not isinstance(found, str)
        ]
        if writes:  # fsynced files: off the event loop
            await asyncio.to_thread(lambda: [cache.store(*w) for w in writes])

    async def _relisted(self, server: RemoteServer, listing: Listing) -> None:
        await self._store([(server, listing)])

    def _rebuild(self, gate: ListedServer, listed: ListedTool) -> McpTool | str:
        """The tool `listed` makes now, or why it makes none (a relist of a cached server)."""
        built = self._build(gate, [listed])
        if built:
            return built[0]
        return self.skipped.get(f"{gate.name}/{listed.name}", "it cannot be imported")

    async def _list(self, server: RemoteServer) -> Listing | str:
        try:
            await server.connection()  # bounded by the handshake timeout
            return await asyncio.wait_for(list_server(server), self.startup_timeout)
        except TimeoutError:
            await server.close()
            return f"no tool list within {self.startup_timeout:g} seconds"
        except Exception as exc:
            await server.close()
            return describe(exc)

    def _build(self, server: ListedServer, listing: Sequence[ListedTool]) -> list[McpTool]:
        used: set[str] = set()
        seen: set[str] = set()
        out: list[McpTool] = []
        for remote in listing:
            key = f"{server.name}/{remote.name}"
            if remote.name in seen:
                # Which of the two would a call reach? Neither claim can be trusted over the
                # other, so only the first listed is kept.
                self.skipped[key] = "the server lists a tool of this name twice"
                logger.warning("skipped MCP tool %s: listed twice", key)
                continue
            seen.add(remote.name)
            execution = remote.execution
            name = tool_name(server.prefix, remote.name, used)
            annotations = dict(remote.annotations)
            try:
                t = McpTool(
                    name=name,
                    server=server,
                    remote_name=remote.name,
                    description=remote.description or remote.title or "",
                    parameters=remote.input_schema,
                    annotations=annotations,
                    title=remote.title,
                    timeout=None,  # the server bounds the call itself, not its start-up
                    output_schema=_output_schema(key, remote.output_schema),
                    task_required=execution is not None and execution.task_support == "required",
                )
            except ConfigurationError as exc:
                self.skipped[key] = str(exc)
                logger.warning("skipped MCP tool %s: %s", key, exc)
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
    lazy: bool = True,
) -> McpTools:
    """Read the MCP config of `root` (and the user's) and list the servers' tools.

    Servers whose cached tool list is fresh start on first use (`lazy`); the others start now.

    ```python
    mcp = await load_mcp_tools(root)
    registry = Registry(coding_tools(project_dir=root), imported=mcp.tools)
    ...
    await mcp.aclose()
    ```

    No server configured is logged as a warning naming the files looked at.

    Raises:
        ConfigurationError: `root` is not a folder, or a config file is malformed.
        ImportError: The `mcp` SDK is not installed (`pip install "handrail[mcp]"`).
    """
    tools = McpTools.from_config(
        root,
        user_path=user_path,
        token_budget=token_budget,
        startup_timeout=startup_timeout,
        lazy=lazy,
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


def _output_schema(key: str, schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The tool's output schema, or None when it cannot be compiled.

    The tool stays usable; its structured content is then passed on unchecked.
    """
    if not schema:
        return None
    try:
        OutputSchema(schema)
    except ConfigurationError as exc:
        logger.warning("MCP tool %s: output schema ignored: %s", key, exc)
        return None
    return schema


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def _cost(tool: McpTool) -> int:
    definition = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return len(json.dumps(definition, ensure_ascii=False, separators=(",", ":")))
