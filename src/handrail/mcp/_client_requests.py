"""What an MCP server may ask of handrail as its client: elicitation, sampling and roots.

The client declares all three capabilities, so servers list the tools that need them. Each
answer follows handrail's rules, not the server's:

* **Elicitation** (form mode, and URL mode for http(s) pages only) goes to the person
  behind the call the server is serving, as an `Elicitation` through that call's approver
  (`ctx.ask`): the terminal asks the fields, a headless run declines, `serve` passes it on
  to its own client. A form's answer has the schema's defaults filled in for what the
  person left out and is checked against the schema before it is sent. A question asked
  while none of the server's calls runs is declined: handrail asks a person only on behalf
  of a call.
* **Sampling** is answered by the session's model (`Session.sampler`, set by `Agent`) after
  the person allowed it (a `Confirmation`, topic `sampling`, naming the server; "always"
  holds for the session). No sampler, nobody to ask, or a "no": the server gets an error
  saying which. Text messages only; the model answers without tools.
* **Roots** are the session's read and write roots, as `file://` URIs: those of the latest
  call, else the project root. When a call arrives with other roots, every connected server
  is told (`notifications/roots/list_changed`).

Which call a server's request belongs to: the oldest of that server's calls still running
(MCP does not link the two on every transport), when they are all one session's; while calls
of several sessions run, the request is declined rather than put to the wrong person. The
server's text is untrusted: front ends show it spelled out, never obeyed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import warnings
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from .. import (
    Confirmation,
    Elicitation,
    Sampler,
    SamplingMessage,
    SamplingRequest,
    SamplingResult,
    ToolContext,
)

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.client import Client
    from mcp.client.session import ClientRequestContext

__all__ = ["ServerRequests"]

logger = logging.getLogger("handrail.mcp")

_SAMPLING_ALLOWED = "mcp.sampling.allowed"
"""`Session.data` key: the servers the person let use the model for the rest of the session."""
_MAX_SAMPLING_TOKENS = 32_000
"""A server cannot ask for more output than this in one sampling request."""


class ServerRequests:
    """The answers one server gets to its requests, and the calls they are asked for."""

    def __init__(self, server: str, root: Path, client: Callable[[], Client | None]) -> None:
        self.server = server
        self._client = client
        self._calls: list[tuple[ToolContext, contextvars.Context]] = []
        self.roots: tuple[Path, ...] = (root,)
        """What `roots/list` answers: the latest call's read and write roots."""
        self._notifying: set[asyncio.Task[None]] = set()

    # -- the calls being served ---------------------------------------------------------------

    @contextlib.contextmanager
    def serving(self, ctx: ToolContext) -> Generator[None]:
        """While a call runs, the server's questions go to its approver; its roots are served.

        Entered in the call's own task: its context is what a sampler runs in (`serve`'s reads
        the request of the call from it).
        """
        entry = (ctx, contextvars.copy_context())
        self._calls.append(entry)
        roots = _roots_of(ctx)
        if roots != self.roots:
            self.roots = roots
            self._announce_roots()
        try:
            yield
        finally:
            self._calls.remove(entry)

    def _current(self) -> tuple[ToolContext, contextvars.Context] | None:
        """The call a request of the server belongs to, or None when it cannot be told.

        The oldest running call, when every running call is one session's (one person, one
        model); calls of several sessions (two clients of `serve`, two agents sharing the
        servers) could be anyone's, and a question must never reach another session's person
        or model.
        """
        if not self._calls:
            return None
        first = self._calls[0][0].session
        if any(c.session is not first for c, _ in self._calls[1:]):
            logger.warning(
                "MCP server %r asked something while calls of several sessions ran; "
                "declined, as it cannot be told whose call it belongs to",
                self.server,
            )
            return None
        return self._calls[0]

    def _announce_roots(self) -> None:
        client = self._client()
        if client is None:
            return  # not started: it reads the roots when it asks
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(_notify_roots(self.server, client))
        self._notifying.add(task)
        task.add_done_callback(self._notifying.discard)

    # -- the SDK's callbacks ------------------------------------------------------------------

    async def list_roots(self, context: ClientRequestContext) -> mcp_types.ListRootsResult:
        """`roots/list`: the session's roots."""
        from mcp_types import ListRootsResult, Root

        return ListRootsResult(
            roots=[Root(uri=cast(Any, p.as_uri()), name=p.name or str(p)) for p in self.roots]
        )

    async def elicit(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        """`elicitation/create`: the person behind the current call answers, or it is declined."""
        from mcp_types import ElicitRequestURLParams, ElicitResult

        current = self._current()
        if current is None:
            logger.warning(
                "MCP server %r asked the user something outside any one session's call; declined",
                self.server,
            )
            return ElicitResult(action="decline")
        ctx = current[0]
        if isinstance(params, ElicitRequestURLParams):
            if urlsplit(params.url).scheme.lower() not in ("https", "http"):
                # A page is all URL mode may ask for: never a file, a script or an app link.
                logger.warning(
                    "MCP server %r asked the user to open a URL that is not a web page; declined",
                    self.server,
                )
                return ElicitResult(action="decline")
            question = Elicitation(
                reason=f"The MCP server `{self.server}` asks you to open a page: {params.message}",
                server=self.server,
                message=params.message,
                url=params.url,
                elicitation_id=params.elicitation_id or "",
            )
        else:
            schema = dict(params.requested_schema)
            question = Elicitation(
                reason=f"The MCP server `{self.server}` asks: {params.message}",
                server=self.server,
                message=params.message,
                schema=schema,
            )
        answer = await ctx.ask(question)
        if answer.kind == "deny":
            if ctx.approver is None:  # a host with no approver (a framework's): say so here
                logger.warning(
                    "MCP server %r asked the user something during %s; nobody could answer "
                    "here, so it was declined (%s)",
                    self.server,
                    ctx.tool_name,
                    answer.reason,
                )
            return ElicitResult(action="decline")
        if question.schema is None:
            return ElicitResult(action="accept")
        values = filled(question.schema, answer.values or {})
        problem = form_problem(question.schema, values)
        if problem is not None:
            logger.warning(
                "the answer to MCP server %r's question does not fit its form (%s); declined",
                self.server,
                problem,
            )
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=cast(Any, values))

    async def sample(
        self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        """`sampling/createMessage`: the session's model answers, once the person allowed it."""
        from mcp_types import INVALID_REQUEST, CreateMessageResult, ErrorData, TextContent

        def refuse(message: str) -> ErrorData:
            logger.info("sampling request of MCP server %r refused: %s", self.server, message)
            return ErrorData(code=INVALID_REQUEST, message=message)

        current = self._current()
        if current is None:
            return refuse(
                "handrail answers sampling requests only while one of your tools runs, for "
                "one session at a time"
            )
        ctx, call_context = current
        sampler = ctx.session.sampler
        if sampler is None:
            return refuse(
                "this handrail session has no model to answer sampling requests (it is not "
                "running an agent)"
            )
        messages = _sampling_messages(params)
        if messages is None:
            return refuse("handrail answers sampling requests with text messages only")
        request = SamplingRequest(
            requester=f"MCP server `{self.server}`",
            messages=messages,
            system=params.system_prompt or "",
            max_tokens=max(1, min(params.max_tokens, _MAX_SAMPLING_TOKENS)),
        )
        allowed = cast(set[str], ctx.session.data.setdefault(_SAMPLING_ALLOWED, set[str]()))
        if self.server not in allowed:
            answer = await ctx.ask(
                Confirmation(
                    reason=sampling_question(request),
                    topic="sampling",
                    subject=self.server,
                    always=f"let MCP server `{self.server}` use the model for this session",
                )
            )
            if answer.kind == "deny":
                return refuse(f"the user did not let this server use the model ({answer.reason})")
            if answer.kind == "allow_always":
                allowed.add(self.server)
        try:
            # In the call's context, not the connection's: the sampler may read the call's
            # (serve's: the MCP request the call came from).
            result = await asyncio.get_running_loop().create_task(
                _sampled(sampler, request), context=call_context
            )
        except Exception as exc:
            return refuse(f"the model could not answer: {exc}")
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=result.text),
            model=result.model,
            stop_reason=result.stop_reason,
        )


async def _sampled(sampler: Sampler, request: SamplingRequest) -> SamplingResult:
    return await sampler(request)


async def _notify_roots(server: str, client: Client) -> None:
    from mcp.shared.exceptions import MCPDeprecationWarning

    try:
        # Deprecated with roots in 2026-07-28; servers of the earlier revisions still ask.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = client.session.send_roots_list_changed()  # pyright: ignore[reportDeprecated]
        await sending
    except Exception as exc:  # a server gone away: it reads the roots when it comes back
        logger.debug("roots change not sent to MCP server %r: %s", server, exc)


def _roots_of(ctx: ToolContext) -> tuple[Path, ...]:
    seen: dict[Path, None] = {}
    for p in (*ctx.write_roots, *ctx.read_roots):
        seen.setdefault(p, None)
    return tuple(seen) or (ctx.cwd,)


def _sampling_messages(
    params: mcp_types.CreateMessageRequestParams,
) -> tuple[SamplingMessage, ...] | None:
    from mcp_types import TextContent

    out: list[SamplingMessage] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        texts: list[str] = []
        for block in blocks:
            if not isinstance(block, TextContent):
                return None
            texts.append(block.text)
        out.append(SamplingMessage(role=message.role, text="\n".join(texts)))
    return tuple(out) if out else None


def sampling_question(request: SamplingRequest) -> str:
    """What the person reads before a server may use the model."""
    last = request.messages[-1].text if request.messages else ""
    excerpt = last if len(last) <= 300 else last[:300] + "…"
    system = (
        f" with its own system prompt ({len(request.system)} characters)" if request.system else ""
    )
    return (
        f"The {request.requester} asks to use the model (up to {request.max_tokens} tokens, "
        f"counted in this session's usage){system}. Its last message: {excerpt}"
    )


# -- forms ----------------------------------------------------------------------------------------


def filled(schema: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` with each property the answer left out set to the schema's `default`."""
    out = dict(values)
    properties = cast(Mapping[str, Any], schema.get("properties") or {})
    for name, prop in properties.items():
        if name not in out and isinstance(prop, Mapping) and "default" in prop:
            out[name] = cast(Mapping[str, Any], prop)["default"]
    return out


def form_problem(schema: Mapping[str, Any], values: Mapping[str, Any]) -> str | None:
    """Why `values` do not fit the form's schema, or None when they do."""
    import jsonschema_rs

    try:
        # offline: a `$ref` in a server's form never fetches a URL or reads a file.
        validator = jsonschema_rs.validator_for(dict(schema), offline=True)
    except Exception as exc:  # a server's broken schema: nothing can fit it
        return f"the form's schema is not valid: {exc}"
    for error in validator.iter_errors(dict(values)):
        where = "/".join(str(p) for p in error.instance_path) or "the answer"
        return f"{where}: {error.message}"
    return None
