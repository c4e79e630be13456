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
* Nothing waits forever: a call has the server's `timeout` (default `call_timeout`, 600 s),
  counted from the request (a server's start-up has `startup_timeout` of its own), and ends
  as TIMEOUT; after a timed-out or cancelled call the server must answer a ping within
  `health_timeout` seconds, or it is stopped (logged, counted in `restarts`) and started
  again on its next call. Other servers' tools are not affected.
* The `mcp` SDK (about 0.9 s to import) is imported on the first start, never by
  `import handrail.mcp`.

* Results keep every content block: text stays text; images, audio, embedded resources and
  resource links become `ContentPart`s in order, `structuredContent` becomes `structured`
  (checked against the tool's `outputSchema`). Tools that require MCP tasks are left out with
  the reason in `skipped`; tools where tasks are optional are called directly.

Modules import one way: `_client` -> `_client_connection` (connections, calls) ->
`_client_results` (MCP results as `ToolResult`s) and `_client_tool` (the tool class, which
knows its server only through the `ToolServer` protocol).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from .. import Registry, Session
from ..errors import ConfigurationError
from ..validation import OutputSchema
from ._client_connection import DEFAULT_HEALTH_TIMEOUT, RemoteServer, describe
from ._client_tool import McpTool
from ._config import McpServerConfig, load_mcp_config

if TYPE_CHECKING:
    import mcp_types

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
TASKS_REQUIRED = (
    "it requires MCP tasks (execution.taskSupport is required); handrail calls tools directly, "
    "so it is not listed"
)
"""Why a tool that only runs as an MCP task is left out (`McpTools.skipped`)."""


def _require_sdk() -> None:
    try:
        import mcp.client.client  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError as exc:
        raise ImportError(
            'MCP servers need the official MCP SDK: pip install "handrail[mcp]"'
        ) from exc


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
        call_timeout: Seconds a call may take when the server's config sets no `timeout`; a
            call past it is TIMEOUT, and a server that then does not answer a ping within
            `health_timeout` seconds is stopped and started again on its next call.
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
        """Tools left out (`server/tool`), with the reason (an invalid input schema, or the
        tool runs only as an MCP task)."""
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

    @property
    def restarts(self) -> dict[str, int]:
        """Per server, how often it stopped answering after a timed-out call and was dropped."""
        return {name: s.restarts for name, s in self._servers.items()}

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

    async def _list(self, server: RemoteServer) -> list[mcp_types.Tool] | str:
        try:
            await server.connection()  # bounded by the handshake timeout
            return await asyncio.wait_for(server.list_tools(), self.startup_timeout)
        except TimeoutError:
            await server.close()
            return f"no tool list within {self.startup_timeout:g} seconds"
        except Exception as exc:
            await server.close()
            return describe(exc)

    def _build(self, server: RemoteServer, listing: Sequence[mcp_types.Tool]) -> list[McpTool]:
        used: set[str] = set()
        out: list[McpTool] = []
        for remote in listing:
            key = f"{server.name}/{remote.name}"
            execution = remote.execution
            if execution is not None and execution.task_support == "required":
                # Listing a tool no call can reach would only teach the model to fail.
                self.skipped[key] = TASKS_REQUIRED
                logger.warning("skipped MCP tool %s: %s", key, TASKS_REQUIRED)
                continue
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
                    timeout=None,  # the server bounds the call itself, not its start-up
                    output_schema=_output_schema(key, remote.output_schema),
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
