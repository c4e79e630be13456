"""The MCP server behind `handrail serve`, on the official SDK's low-level `Server`.

Imported only when a server starts (the SDK costs most of a second to import). Every call goes
through `Runtime.call`; this module adds what MCP needs around it:

- one handrail `Session` per MCP session (the SDK's per-client `Connection`), closed with it,
  so read-before-edit state and background jobs never leak between clients;
- an "ask" decision becomes an elicitation request when the client can answer one, else the
  configured fallback (deny with a clear reason by default);
- a client's `notifications/cancelled` becomes `Runtime.cancel`, and the request waits until the
  call has really stopped (its processes gone) before it is dropped;
- progress events go out as `notifications/progress` when the request carried a token;
- the server's mode is the widest any session reaches (`ModeCeilingPolicy`): a client may
  enter plan mode, never leave for a mode wider than the server's;
- every session keeps checkpoints (the runtime's, one log per handrail `Session`); with
  `offer_restore`, `list_checkpoints` and `restore_checkpoint` are listed after the registry's
  tools and answered here (`_server_restore.py`): a restore always asks the session's client.

Over HTTP (`run_http`) every request passes `HttpGuard` first (Host, Origin, bearer token), so
a refused request reaches no session, tool or approval; an elicitation answer is a request
like any other, so only the token holder on the session that was asked can give it.

The server speaks the session-based MCP versions (2024-11-05 to 2025-11-25: the initialize
handshake, `Mcp-Session-Id`, SSE), as above. A 2026-07-28 request is refused with
UNSUPPORTED_PROTOCOL_VERSION naming them, and the SDK's client falls back to the handshake by
itself: a session is what holds the files the model read, which editing needs. Over HTTP with
`stateless` (`run_http`), a 2026-07-28 client is served statelessly instead
(`_server_stateless.py`): `server/discover`, every request on its own with a handrail `Session`
of its own, a call's approval asked as an `InputRequiredResult` whose signed `requestState` any
replica holding the same token or `state_secret` accepts, and `tools/list` carrying a cache
hint (`ttlMs`, `cacheScope`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import mcp_types as types
import uvicorn
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.caching import CacheHint
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from .. import (
    Approval,
    ApprovalRequest,
    Approver,
    Confirmation,
    Elicitation,
    ProgressEvent,
    Question,
    Runtime,
    Session,
    Tool,
    ToolResult,
)
from .._version import __version__
from ._http_access import HttpSecurity, access_rules, host_port
from ._http_guard import HttpGuard
from ._http_listen import bind_sockets, close_all
from ._http_token import publish_token, withdraw_token
from ._mode_ceiling import ModeCeilingPolicy
from ._server_passthrough import REQUEST, ask_client, client_sampler
from ._server_payloads import (
    CHECKPOINT_TOOLS,
    ProgressNumbers,
    approval_message,
    call_result,
    deferred_note,
    fallback_reason,
    progress_text,
    say,
    tool_entry,
)
from ._server_restore import Ask, CheckpointTools
from ._server_state import RequestStates, call_digest
from ._server_stateless import (
    APPROVAL_KEY,
    Answer,
    StatelessAsker,
    input_required,
    not_remembered,
    state_refused,
    stateless_instructions,
    unavailable,
)
from ._stdio import pipe_stdio

logger = logging.getLogger("handrail.mcp")

AskFallback = Literal["deny", "allow"]
Ctx = ServerRequestContext[Any, Any]

_SESSION_KEY = "handrail.session"
_PROGRESS_BUFFER = 64
"""Progress events queued per call before new ones are dropped (progress is advisory)."""
_CANCEL_POLL = 0.01
"""Seconds between attempts to cancel a call that has not reached its run stage yet."""
_EMPTY_FORM: dict[str, Any] = {"type": "object", "properties": {}}
"""An approval asks a yes/no question: the client's accept / decline is the whole answer."""
_LIST_TTL_MS = 600_000
"""How long a stateless client may reuse a `tools/list` answer (`ttlMs`). A stateless list is
the same for every request (no session activates or hides a tool), so it changes only when
the server is restarted with another configuration; ten minutes bounds how long a client
keeps a list the operator has changed. `private`: it is behind the bearer token."""


class _Server(Server[Any]):
    """The SDK server, advertising `tools.listChanged` on every transport.

    The HTTP session manager builds its initialize answer from `create_initialization_options()`
    with no arguments, so the default has to say it.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


async def _handshake_only(ctx: Ctx, call_next: CallNext) -> HandlerResult:
    """Refuse 2026-07-28 (stateless) requests, naming the session-based versions served (stdio).

    Such a request names its version in its own `_meta` envelope: on a connection that has had
    no handshake that is the only place it is said, and it must be refused before the SDK's
    "not initialized" check answers with a bare INVALID_PARAMS.
    """
    meta: object = (ctx.params or {}).get("_meta")
    envelope = (
        cast(Mapping[str, object], meta).get(types.PROTOCOL_VERSION_META_KEY)
        if isinstance(meta, Mapping)
        else None
    )
    requested = envelope if envelope in MODERN_PROTOCOL_VERSIONS else ctx.protocol_version
    if ctx.request_id is not None and ctx.method != "initialize" and _modern(requested):
        raise MCPError(
            code=types.UNSUPPORTED_PROTOCOL_VERSION,
            message=(
                "handrail serve keeps per-session state (files read, approvals), so it speaks "
                "the session-based MCP versions; connect with the initialize handshake (an "
                "HTTP server started with --stateless also serves this version)"
            ),
            data={"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": requested},
        )
    return await call_next(ctx)


def _modern(version: object) -> bool:
    return isinstance(version, str) and version in MODERN_PROTOCOL_VERSIONS


def _stateless(ctx: Ctx) -> bool:
    """A 2026-07-28 request: self-contained, no session behind it (HTTP only, see `run_http`)."""
    return _modern(ctx.protocol_version)


def _complete(ctx: Ctx, result: dict[str, Any]) -> dict[str, Any]:
    """A final result: 2026-07-28 results say so (`resultType`), older ones have no such field."""
    return {**result, "resultType": "complete"} if _stateless(ctx) else result


def _connection(ctx: Ctx) -> Connection:
    # SDK 2.3 gives request handlers no public path to the per-client Connection (its richer
    # `Context.connection` is not built by the runner yet); the session proxy holds it.
    return ctx.session._connection  # pyright: ignore[reportPrivateUsage]


def _progress_token(params: Mapping[str, Any] | None) -> object:
    meta: object = (params or {}).get("_meta")
    if not isinstance(meta, Mapping):
        return None
    return cast(Mapping[str, object], meta).get("progressToken")


def _offer(send: MemoryObjectSendStream[ProgressEvent], event: ProgressEvent) -> None:
    try:
        send.send_nowait(event)
    except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # a full queue or a finished call: progress is advisory


class McpApp:
    """Serves one `Runtime` to any number of MCP sessions.

    Args:
        runtime: The runtime every call goes through; its default session is a template (mode)
            for the per-client sessions.
        ceiling: The runtime's policy: the server's own, bounded by its mode.
        ask_fallback: What an "ask" decision becomes when the client cannot answer an
            elicitation: `deny` (with a reason naming the allow rule to add) or `allow`.
        offer_restore: List `list_checkpoints` and `restore_checkpoint` (the runtime must keep
            checkpoints).
        states: Makes and checks the `requestState` of stateless approvals (default: under a
            key of this process only).
    """

    def __init__(
        self,
        runtime: Runtime,
        ceiling: ModeCeilingPolicy,
        *,
        ask_fallback: AskFallback = "deny",
        offer_restore: bool = False,
        states: RequestStates | None = None,
    ) -> None:
        self.rt = runtime
        self.ask_fallback: AskFallback = ask_fallback
        self.states = states or RequestStates.for_server(token=None, secret=None)
        """The signed states of stateless approvals (`_server_state.py`)."""
        self.checkpoint_tools = CheckpointTools(runtime) if offer_restore else None
        """The checkpoint tools, when offered."""
        self.ceiling = ceiling
        """The server's policy, bounded by its mode (the runtime's policy, set by `serve`)."""
        self.sessions: dict[int, Session] = {}
        """Open sessions, by `id()` (a Session is a mutable, unhashable dataclass)."""
        self._entries: dict[int, tuple[Tool, dict[str, Any]]] = {}
        self._sinks: dict[
            str, tuple[asyncio.AbstractEventLoop, MemoryObjectSendStream[ProgressEvent]]
        ] = {}
        self._ids = itertools.count(1)
        notes = runtime.usage_notes(provider="mcp")
        registry = runtime.registry
        deferred = [t.name for t in registry.deferred_tools() if registry.available(t, "mcp")]
        if deferred:
            # A client's model sees only the listed tools; this is how it learns what
            # tool_search can load.
            note = deferred_note(deferred, runtime.locale)
            notes = f"{notes}\n\n{note}" if notes else note
        self.server = _Server(
            "handrail",
            version=__version__,
            title="handrail",
            description="Coding tools with validation, permissions and an OS sandbox.",
            instructions=notes or None,
            cache_hints={"tools/list": CacheHint(ttl_ms=_LIST_TTL_MS, scope="private")},
        )
        self.server.add_request_handler("tools/list", types.PaginatedRequestParams, self.list_tools)
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        self.server.add_request_handler("server/discover", types.RequestParams, self.discover)
        # The SDK checks a stateless call's `Mcp-Param-*` headers against the tool's schema;
        # without this it would run a whole `tools/list` (a session) before every call.
        self.server.get_tool_input_schema = self._input_schema
        runtime.on_progress = self._on_progress

    # -- sessions ----------------------------------------------------------------------------

    def session(self, ctx: Ctx) -> Session:
        """The handrail session of the request's MCP session, created on its first request."""
        conn = _connection(ctx)
        state: dict[str, Any] = conn.state
        found = state.get(_SESSION_KEY)
        if isinstance(found, Session):
            return found
        session = Session(mode=self.rt.session.mode, sampler=client_sampler(self.rt.locale))
        state[_SESSION_KEY] = session
        self.sessions[id(session)] = session

        async def close() -> None:
            self.sessions.pop(id(session), None)
            await session.aclose()

        # Unwound when the MCP session ends (stdio EOF, HTTP DELETE, idle timeout, shutdown).
        conn.exit_stack.push_async_callback(close)
        return session

    async def aclose(self) -> None:
        """End every session still open (the server is stopping)."""
        while self.sessions:
            _, session = self.sessions.popitem()
            await session.aclose()
        await self.rt.aclose()

    # -- handlers ----------------------------------------------------------------------------

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams) -> HandlerResult:
        """`tools/list`: the tools this session sees now, in the registry's stable order."""
        session = self.session(ctx)
        tools = [self._entry(t) for t in self.rt.tools(provider="mcp", session=session)]
        # Checkpoints belong to a session: a stateless client has none to list or restore.
        if self.checkpoint_tools is not None and not _stateless(ctx):
            tools.extend(self.checkpoint_tools.entries())
        return _complete(ctx, {"tools": tools})

    def _entry(self, tool: Tool) -> dict[str, Any]:
        cached = self._entries.get(id(tool))
        if cached is None or cached[0] is not tool:  # an id can be reused after a registry change
            cached = self._entries[id(tool)] = (tool, tool_entry(tool))
        return cached[1]

    def _input_schema(self, name: str) -> Any | None:
        """A tool's input schema by name or alias (None: unknown, or not offered over MCP)."""
        registry = self.rt.registry
        tool = registry.get(name)
        if tool is None or not registry.available(tool, "mcp"):
            return None
        return self._entry(tool).get("inputSchema")

    async def discover(self, ctx: Ctx, params: types.RequestParams) -> HandlerResult:
        """`server/discover` (2026-07-28): the SDK's answer, with stateless instructions.

        The instructions add what a stateless client does not get (`stateless_instructions`).
        """
        return types.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS),
            capabilities=self.server.get_capabilities(protocol_version=ctx.protocol_version),
            instructions=stateless_instructions(self.server.instructions, self.rt.locale),
        )

    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> HandlerResult:
        """`tools/call`: one call through the whole pipeline; every outcome is a result."""
        session = self.session(ctx)
        if self.checkpoint_tools is not None and params.name in CHECKPOINT_TOOLS:
            if _stateless(ctx):
                return _complete(ctx, call_result(unavailable(params.name, self.rt.locale)))
            ask = self._asker(ctx) if self._can_elicit(ctx) else None
            return await self.checkpoint_tools.call(
                params.name, params.arguments or {}, session, ask
            )
        if _stateless(ctx):
            return await self._call_stateless(ctx, session, params)
        before = (session.mode, len(session.activated))
        result = await self._call(ctx, session, params.name, params.arguments or {})
        bounded = self.ceiling.bound(session.mode)
        if bounded is not session.mode:  # decided as `bounded` already; now listed so too
            logger.warning("%s left the session in %s mode: reset", params.name, session.mode)
            session.mode = bounded
        if (session.mode, len(session.activated)) != before:
            # Plan mode or tool_search changed what this session sees.
            await _connection(ctx).send_tool_list_changed()
        return call_result(result)

    async def _call_stateless(
        self, ctx: Ctx, session: Session, params: types.CallToolRequestParams
    ) -> HandlerResult:
        """A 2026-07-28 `tools/call`, in a session of its own request.

        Its approval, when it asks, goes to the client as an `InputRequiredResult`; the retry
        brings the answer and the signed state (`_server_stateless.py`).
        """
        name, arguments, loc = params.name, params.arguments or {}, self.rt.locale
        call_id = self._new_call_id()
        bound = call_digest(name, arguments)
        answer: Answer | None = None
        if params.request_state is not None:
            opened = self.states.open(params.request_state, bound)
            if isinstance(opened, str):
                logger.warning("refused the requestState of a call of %s: %s", name, opened)
                ttl = self.states.ttl
                return _complete(ctx, state_refused(opened, name, locale=loc, ttl=ttl))
            action = getattr((params.input_responses or {}).get(APPROVAL_KEY), "action", None)
            if action in ("accept", "decline", "cancel"):
                answer = Answer(question=opened.question, action=action)
        registry = self.rt.registry
        tool = registry.get(name)
        if tool is not None and tool.deferred and registry.available(tool, "mcp"):
            # tool_search's activation lasted its own request: a call activates its tool.
            if tool.name not in session.activated:
                session.activated.append(tool.name)
        asker = StatelessAsker(
            call_id=call_id,
            locale=loc,
            can_ask=self._can_ask(ctx),
            fallback=self.ask_fallback,
            answer=answer,
        )
        result = await self._call(ctx, session, name, arguments, call_id=call_id, approver=asker)
        if asker.asked is not None:  # denied before its run stage: nothing ran
            return input_required(asker.message, self.states.seal(bound, asker.question))
        return _complete(ctx, call_result(not_remembered(result, loc)))

    # -- one call ----------------------------------------------------------------------------

    def _new_call_id(self) -> str:
        return f"mcp-{next(self._ids)}"

    async def _call(
        self,
        ctx: Ctx,
        session: Session,
        name: str,
        arguments: Mapping[str, Any],
        *,
        call_id: str | None = None,
        approver: Approver | None = None,
    ) -> ToolResult:
        call_id = call_id or self._new_call_id()
        if _progress_token(ctx.params) is None:
            return await self._call_and_approve(ctx, session, name, arguments, call_id, approver)
        send, receive = anyio.create_memory_object_stream[ProgressEvent](_PROGRESS_BUFFER)
        self._sinks[call_id] = (asyncio.get_running_loop(), send)
        result: ToolResult | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._forward, ctx, receive)
            try:
                result = await self._call_and_approve(
                    ctx, session, name, arguments, call_id, approver
                )
            finally:
                self._sinks.pop(call_id, None)
                send.close()  # the forwarder sends what is queued, then ends
        assert result is not None
        return result

    async def _call_and_approve(
        self,
        ctx: Ctx,
        session: Session,
        name: str,
        arguments: Mapping[str, Any],
        call_id: str,
        approver: Approver | None,
    ) -> ToolResult:
        rt = self.rt

        async def ask(question: Question) -> Approval:
            return await self._ask(ctx, question)

        # The call's own approver: its approval, and whatever its tool asks while it runs (a
        # sub-agent's calls, a tool's confirmation), are put to this call's client (over its
        # session; a stateless request brings its own).
        answers = approver or ask
        REQUEST.set(ctx)  # the call's task inherits it: its sampling goes to this client
        return await self._until_stopped(
            call_id,
            lambda: rt.call(name, arguments, call_id=call_id, session=session, approver=answers),
        )

    async def _until_stopped(
        self, call_id: str, start: Callable[[], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Run a call shielded from the request's cancel scope; a cancel becomes `rt.cancel`.

        Cancelling the request's scope directly would abandon the tool half-way (its cleanup
        cut short by the next checkpoint); `Runtime.cancel` stops it the way the runtime stops
        any call, and we wait for that, so the tool's processes are gone when the request ends.
        The call runs as its own task, so the common case costs no task group.
        """
        task = asyncio.ensure_future(start())
        try:
            return await asyncio.shield(task)
        except BaseException:
            with anyio.CancelScope(shield=True):
                reason = say(self.rt.locale, "cancelled")
                # Before its run stage (or its approver's question) a call cannot be cancelled
                # yet: try until it reaches one or ends (a refusal, a validation error). No
                # event marks that moment, hence the poll.
                while not task.done() and not self.rt.cancel(call_id, reason):  # noqa: ASYNC110
                    await anyio.sleep(_CANCEL_POLL)
                with contextlib.suppress(BaseException):
                    await task
            raise

    async def _ask(self, ctx: Ctx, request: Question, message: str | None = None) -> Approval:
        """Put a question to the client's user (elicitation), or apply the fallback.

        `message` is what the user reads (default: the question's own text).
        """
        loc = self.rt.locale
        name = request.tool_name if isinstance(request, ApprovalRequest | Confirmation) else ""
        if isinstance(request, Elicitation):  # a server behind a served call asks its user
            try:
                passed = await ask_client(ctx, request, loc)
            except Exception as exc:  # the client answered with an error, or went away
                logger.warning("elicitation of MCP server %r failed: %s", request.server, exc)
                passed = None
            return passed if passed is not None else Approval.deny(fallback_reason(request, loc))
        if not self._can_elicit(ctx):
            # The operator's blanket "allow" is for calls; a tool's own question ("overwrite
            # a file changed by hand?") is not a call, and with nobody to ask it is a no.
            if self.ask_fallback == "allow" and isinstance(request, ApprovalRequest):
                return Approval.allow_once()
            source = request.source if isinstance(request, ApprovalRequest) else "mode"
            return Approval.deny(fallback_reason(request, loc), source=source)
        try:
            answer = await ctx.session.elicit_form(
                message or approval_message(request, loc),
                _EMPTY_FORM,
                related_request_id=ctx.request_id,
            )
        except Exception as exc:  # the client answered with an error, or went away
            logger.warning("elicitation for %s failed: %s", name, exc)
            detail = str(exc) or type(exc).__name__
            return Approval.deny(say(loc, "ask_failed", name=name, detail=detail))
        if answer.action == "accept":
            return Approval.allow_once()
        key = "declined" if answer.action == "decline" else "dismissed"
        return Approval.deny(say(loc, key, name=name))

    def _asker(self, ctx: Ctx) -> Ask:
        """Asks this request's client, with the message given (a restore's own question)."""

        async def ask(question: Question, message: str) -> Approval:
            return await self._ask(ctx, question, message)

        return ask

    @classmethod
    def _can_elicit(cls, ctx: Ctx) -> bool:
        return ctx.session.can_send_request and cls._can_ask(ctx)

    @staticmethod
    def _can_ask(ctx: Ctx) -> bool:
        """The client declared form elicitation (in its session, or in this request's `_meta`)."""
        caps = ctx.session.client_capabilities
        if caps is None or caps.elicitation is None:
            return False
        # 2025-06-18 clients declare `elicitation: {}`, which means form mode.
        return caps.elicitation.form is not None or caps.elicitation.url is None

    # -- progress ----------------------------------------------------------------------------

    def _on_progress(self, event: ProgressEvent) -> None:
        sink = self._sinks.get(event.call_id)
        if sink is None:
            return
        loop, send = sink
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            _offer(send, event)
        else:  # a sync tool reporting from its worker thread
            loop.call_soon_threadsafe(_offer, send, event)

    async def _forward(self, ctx: Ctx, receive: MemoryObjectReceiveStream[ProgressEvent]) -> None:
        numbers = ProgressNumbers()  # the tool's own progress and total, never going back
        async with receive:
            async for event in receive:
                progress, total = numbers.next(event)
                try:
                    await ctx.session.report_progress(progress, total, progress_text(event))
                except Exception as exc:  # the client went away: stop forwarding
                    logger.debug("progress not delivered: %s", exc)
                    return


def _sessions_only(server: Server[Any]) -> None:
    """Refuse the stateless era: the SDK's clients then fall back to the handshake."""
    if _handshake_only not in server.middleware:
        server.middleware.append(_handshake_only)


async def run_stdio(app: McpApp, ready: Callable[[str], None] | None) -> None:
    """Serve one client over stdin/stdout until it closes stdin."""
    server = app.server
    async with pipe_stdio() as wire:
        # Our pipes when fds 0/1 are pipes (no thread per message), else the SDK's own.
        streams: tuple[Any, ...] = wire if wire is not None else ()
        async with stdio_server(*streams) as (read_stream, write_stream):
            # One stdio client keeps its session.
            _sessions_only(server)
            async with server.lifespan(server) as state:
                if ready is not None:
                    ready("stdio")
                # serve_loop, not Server.run: the dual-era loop would lock onto the stateless era
                # when a client opens with a `server/discover` probe.
                await serve_loop(
                    server,
                    read_stream,
                    write_stream,
                    lifespan_state=state,
                    init_options=server.create_initialization_options(),
                )


class _Uvicorn(uvicorn.Server):
    """uvicorn on sockets bound beforehand, reporting its URL once listening.

    `stopped` runs once it has shut down, before uvicorn re-raises a captured SIGTERM (which
    would end the process before any `finally` of the caller ran).
    """

    def __init__(
        self,
        config: uvicorn.Config,
        ready: Callable[[str], None] | None,
        url: str,
        stopped: Callable[[], None],
    ) -> None:
        super().__init__(config)
        self._ready = ready
        self._url = url
        self._stopped = stopped

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self._ready is not None and self.started:
            self._ready(self._url)

    async def shutdown(self, sockets: Any = None) -> None:
        try:
            await super().shutdown(sockets=sockets)
        finally:
            self._stopped()


async def run_http(
    app: McpApp,
    host: str,
    port: int,
    ready: Callable[[str], None] | None,
    security: HttpSecurity,
    *,
    stateless: bool = False,
) -> None:
    """Serve streamable HTTP on host:port (`/mcp`) until the process is stopped.

    `stateless`: 2026-07-28 clients are served statelessly too; otherwise they are refused
    and fall back to a session, as over stdio.

    The sockets are bound first (a busy port is a `ConfigurationError`), then the Host and
    Origin rules follow the real port, a generated token is published in its file, and every
    request passes `HttpGuard` before the SDK's app.
    """
    if not stateless:
        _sessions_only(app.server)
    sockets = bind_sockets(host, port)
    published: Path | None = None

    def withdraw() -> None:
        if published is not None and security.token is not None:
            withdraw_token(published, security.token)

    try:
        port = sockets[0].getsockname()[1]
        rules = access_rules(host, port, security)
        # Host and Origin are checked by HttpGuard for every bind; the SDK's own check covers
        # three loopback binds only, and could not accept a wildcard bind's own addresses.
        sdk = app.server.streamable_http_app(
            host=host,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        guarded = HttpGuard(sdk, rules=rules, token=security.token)
        config = uvicorn.Config(
            guarded,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        if security.publish_token and security.token is not None:
            published = publish_token(port, security.token)
        url = f"http://{host_port(host, port)}/mcp"
        await _Uvicorn(config, ready, url, withdraw).serve(sockets=sockets)
    finally:
        withdraw()
        close_all(sockets)
