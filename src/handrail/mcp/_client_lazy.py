"""A server as its tools know it: listed live, or from the cache and started on first call.

`ListedServer` is the `ToolServer` of every imported tool. Its tools were built from a
`Listing`: the server's own (`live`), or a cached one, in which case the server has not been
started. The first call of one of its tools then starts it and lists its tools before that call
goes out, so no call is sent on the strength of a stale list:

* the new list is written to the cache (the next session is built from it);
* a tool the server no longer lists ends its calls as TOOL_NOT_FOUND, saying it was removed;
* a tool whose input schema changed is given the new schema (its later calls are validated
  against it by the pipeline), and every call of it is checked against the new schema before
  it goes out; arguments that do not fit end as INVALID_ARGS with the new parameters shown;
* a tool whose annotations now claim less (no longer read-only or idempotent, now destructive
  or open-world) is refused for the rest of the session: the runtime decided whether to ask on
  the old claims, and its plan for the tool stays as it was;
* tools added since are logged; the next session lists them.

Concurrent first calls share one start and one list. A start or list that fails ends the call
with text for the model, and the next call tries again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from .. import ErrorCode, ToolContext, ToolFailure, ToolResult
from .._i18n import render
from ..validation import InvalidArguments, format_issues
from ._client_connection import RemoteServer, describe
from ._client_messages import say
from ._client_tool import McpTool
from ._tool_cache import ListedTool, Listing

if TYPE_CHECKING:
    import mcp_types

__all__ = ["ListedServer", "list_server"]

logger = logging.getLogger("handrail.mcp")

_MAX_PAGES = 100
_SCHEMA_CHARS = 4000
# The claims that let a call run with less care: lost (first three) or gained (last two).
_KEPT_CLAIMS = ("read_only", "concurrency_safe", "idempotent")
_NEW_RISKS = ("destructive", "open_world")

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "removed": (
            "MCP server `{server}` no longer offers `{tool}`: this session's tool list came "
            "from a cache, and the server has removed the tool since. Do not call it again; "
            "use another tool or tell the user. The next session lists the server's tools as "
            "they are now."
        ),
        "schema_changed": (
            "MCP server `{server}` changed the parameters of `{tool}` since this session's "
            "tool list was cached, and these arguments do not fit the new ones, so the call "
            "was not sent. Its parameters are now: {schema}"
        ),
        "weaker": (
            "MCP server `{server}` changed `{tool}` since this session's tool list was cached: "
            "its annotations were {before} and are now {after}. The call was not sent, because "
            "it was checked as the tool was before; the tool cannot be used in this session. "
            "Tell the user; the next session lists it as it is now."
        ),
        "unusable": (
            "MCP server `{server}` changed `{tool}` since this session's tool list was cached, "
            "and it cannot be called as it is now: {detail}. Do not call it again in this "
            "session."
        ),
        "list_failed": (
            "MCP server `{server}` started but did not list its tools: {detail}. Its tools "
            "cannot run right now; tell the user, or try again later."
        ),
        "list_timeout": "no tool list within {seconds:g} seconds",
    },
    "zh": {
        "removed": (
            "MCP 服务器 `{server}` 已不再提供 `{tool}`：本会话的工具列表来自缓存，"
            "而服务器此后删除了该工具。请不要再调用它；请改用其他工具或告知用户。"
            "下次会话会列出服务器当前的工具。"
        ),
        "schema_changed": (
            "自本会话的工具列表缓存以来，MCP 服务器 `{server}` 修改了 `{tool}` 的参数，"
            "这些参数不符合新的定义，因此调用未发送。它现在的参数是：{schema}"
        ),
        "weaker": (
            "自本会话的工具列表缓存以来，MCP 服务器 `{server}` 修改了 `{tool}`：它的注解原为 "
            "{before}，现为 {after}。调用未发送，因为它是按之前的工具检查的；"
            "本会话中无法使用该工具。请告知用户；下次会话会按现在的样子列出它。"
        ),
        "unusable": (
            "自本会话的工具列表缓存以来，MCP 服务器 `{server}` 修改了 `{tool}`，"
            "按现在的定义无法调用它：{detail}。本会话中请不要再调用它。"
        ),
        "list_failed": (
            "MCP 服务器 `{server}` 已启动，但没有列出它的工具：{detail}。它的工具暂时无法运行；"
            "请告知用户，或稍后再试。"
        ),
        "list_timeout": "{seconds:g} 秒内没有返回工具列表",
    },
}


def _say(locale: str, key: str, /, **values: object) -> str:
    return render(CATALOG, locale, key, **values)


async def list_server(server: RemoteServer) -> Listing:
    """Start `server` if need be and list its tools (all pages), with the cache hint it sent."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    conn = await server.connection()
    client = conn.require_client()
    tools: list[mcp_types.Tool] = []
    ttls: list[int] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        # The SDK fills in ttlMs=0 when a page has none: only one on the wire counts, and
        # only in the protocol that defines it.
        if "ttl_ms" in page.model_fields_set:
            ttls.append(page.ttl_ms)
        cursor = page.next_cursor
        if cursor is None:
            break
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    return Listing(
        tools=tuple(
            ListedTool.from_wire(t.model_dump(by_alias=True, exclude_none=True, mode="json"))
            for t in tools
        ),
        instructions=server.instructions,
        listed_at=time.time(),
        ttl_ms=min(ttls) if modern and ttls else None,
    )


class _Unlisted(Exception):
    """The server could not be started (`started` False) or did not list its tools."""

    def __init__(self, *, started: bool, detail: str = "", seconds: float | None = None) -> None:
        super().__init__(detail)
        self.started = started
        self.detail = detail
        self.seconds = seconds
        """Set when the list did not come within this many seconds."""


class ListedServer:
    """The `ToolServer` of a server's tools, and the list they were built from (module doc).

    Args:
        remote: The server's connection.
        listing: The list its tools are built from.
        live: True when `listing` is the server's own from this session (nothing to check).
        list_timeout: Seconds the server has to list its tools once started.
        relisted: Called with the server's own list once it is fetched (writes the cache).
        rebuild: The tool a listed tool makes now, or why it makes none.
    """

    def __init__(
        self,
        remote: RemoteServer,
        listing: Listing,
        *,
        live: bool,
        list_timeout: float,
        relisted: Callable[[Listing], Awaitable[None]],
        rebuild: Callable[[ListedServer, ListedTool], McpTool | str],
    ) -> None:
        self.remote = remote
        self.listing = listing
        self.live = live
        """True once `listing` is the server's own from this session."""
        self._list_timeout = list_timeout
        self._relisted = relisted
        self._rebuild = rebuild
        self._tools: dict[str, McpTool] = {}
        self._refused: dict[str, tuple[ErrorCode, str, Mapping[str, object]]] = {}
        self._reschemed: set[str] = set()
        self._listing_task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        """The server's name, as configured."""
        return self.remote.name

    @property
    def prefix(self) -> str:
        """The part of its tools' names that stands for it."""
        return self.remote.prefix

    def adopt(self, tools: list[McpTool]) -> None:
        """Record the tools built from `listing` (to check and update after a relist)."""
        self._tools.update({t.remote_name: t for t in tools})

    def serving(self, ctx: ToolContext) -> AbstractContextManager[None]:
        """While `ctx`'s call runs, the server's own requests are answered on its behalf."""
        return self.remote.serving(ctx)

    async def call(self, tool: McpTool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call `tool`; first, if its list came from the cache, start and list the server."""
        if not self.live:
            await self._relist(ctx.locale)
        self._check(tool, args, ctx.locale)
        return await self.remote.call(tool, args, ctx)

    def _check(self, tool: McpTool, args: dict[str, Any], locale: str) -> None:
        refused = self._refused.get(tool.remote_name)
        if refused is not None:
            code, key, values = refused
            raise ToolFailure(
                _say(locale, key, server=self.name, tool=tool.name, **values), code=code
            )
        if tool.remote_name not in self._reschemed:
            return
        # The pipeline may have validated these arguments before the new schema arrived.
        try:
            tool.validator.validate(args, locale)
        except InvalidArguments as exc:
            schema = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
            if len(schema) > _SCHEMA_CHARS:
                schema = schema[:_SCHEMA_CHARS] + "…"
            intro = _say(locale, "schema_changed", server=self.name, tool=tool.name, schema=schema)
            text = f"{intro}\n{format_issues(tool.name, exc.issues, locale)}"
            raise ToolFailure(text, code=ErrorCode.INVALID_ARGS) from exc

    async def _relist(self, locale: str) -> None:
        loop = asyncio.get_running_loop()
        task = self._listing_task
        if task is None or task.get_loop() is not loop:
            task = self._listing_task = loop.create_task(self._fetch())
            task.add_done_callback(self._fetched)
        try:
            # Shielded: a cancelled caller must not abort the list other callers wait for.
            await asyncio.shield(task)
        except _Unlisted as exc:
            if not exc.started:
                text = say(locale, "start_failed", server=self.name, detail=exc.detail)
                raise ToolFailure(text) from exc
            detail = exc.detail
            if exc.seconds is not None:
                detail = _say(locale, "list_timeout", seconds=exc.seconds)
            raise ToolFailure(_say(locale, "list_failed", server=self.name, detail=detail)) from exc

    def _fetched(self, task: asyncio.Task[None]) -> None:
        failed = task.cancelled() or task.exception() is not None  # retrieved: callers may be gone
        if failed and self._listing_task is task:
            self._listing_task = None  # the next call tries again

    async def _fetch(self) -> None:
        try:
            await self.remote.connection()
        except Exception as exc:
            raise _Unlisted(started=False, detail=describe(exc).rstrip(".")) from exc
        try:
            listing = await asyncio.wait_for(list_server(self.remote), self._list_timeout)
        except TimeoutError as exc:
            raise _Unlisted(started=True, seconds=self._list_timeout) from exc
        except Exception as exc:
            raise _Unlisted(started=True, detail=describe(exc)) from exc
        self._apply(listing)
        self.listing = listing
        self.live = True
        await self._relisted(listing)

    def _apply(self, listing: Listing) -> None:
        """Bring the tools in line with the server's own list (module doc)."""
        before = {t.name: t for t in self.listing.tools}
        now = {t.name: t for t in listing.tools}
        twice = {t.name for t in listing.tools if sum(u.name == t.name for u in listing.tools) > 1}
        for name, tool in self._tools.items():
            old, new = before[name], now.get(name)
            if name in twice:  # which one would a call reach? neither claim is trusted
                self._refused[name] = (
                    ErrorCode.EXECUTION_ERROR,
                    "unusable",
                    {"detail": "the server now lists a tool of this name twice"},
                )
                continue
            if new is None:
                self._refused[name] = (ErrorCode.TOOL_NOT_FOUND, "removed", {})
                continue
            if new.wire == old.wire:
                continue
            fresh = self._rebuild(self, new)
            if isinstance(fresh, str):
                self._refused[name] = (ErrorCode.EXECUTION_ERROR, "unusable", {"detail": fresh})
                continue
            if any(
                getattr(tool, f) is True and getattr(fresh, f) is not True for f in _KEPT_CLAIMS
            ) or any(
                getattr(tool, f) is not True and getattr(fresh, f) is True for f in _NEW_RISKS
            ):
                claims = {
                    "before": json.dumps(dict(old.annotations), sort_keys=True),
                    "after": json.dumps(dict(new.annotations), sort_keys=True),
                }
                self._refused[name] = (ErrorCode.EXECUTION_ERROR, "weaker", claims)
                continue
            if new.input_schema != old.input_schema:
                # The pipeline reads the validator on every call: the next one is checked
                # against the new schema before it gets here.
                tool.validator = fresh.validator
                self._reschemed.add(name)
            tool.output_schema, tool.output_check = fresh.output_schema, fresh.output_check
            tool.task_required = fresh.task_required
        removed = sorted(before.keys() - now.keys())
        added = sorted(now.keys() - before.keys())
        changed = sorted(n for n in before.keys() & now.keys() if before[n].wire != now[n].wire)
        if removed or added or changed:
            logger.info(
                "MCP server %r lists differently from its cached tool list (removed: %s; "
                "changed: %s; added: %s); the cache is updated for the next session",
                self.name,
                ", ".join(removed) or "-",
                ", ".join(changed) or "-",
                ", ".join(added) or "-",
            )
