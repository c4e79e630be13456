"""What a served call's tools ask of `serve`'s own client, beyond a yes or no.

* An MCP server behind a served call (an imported `mcp__*` tool) asks its user something: the
  `Elicitation` is passed on to `serve`'s client as an elicitation of the same mode, with the
  same form (its schema) or page, the message prefixed with the server and the tool that ask.
  The client's answer comes back as the values filled in (`Approval.reply`), a yes to a page,
  or a no.
* A served tool (or a server behind it) wants a completion: each served session's
  `Session.sampler` asks `serve`'s client for one (`sampling/createMessage`, tied to the
  request of the call that runs), when that client declared sampling; otherwise it says so.

Both need a session-based connection that can send requests back to the client; a stateless
request cannot (it has no back-channel while a tool runs).
"""

from __future__ import annotations

import contextvars
import warnings
from typing import Any, cast

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning

from .. import Approval, Elicitation, SamplingRequest, SamplingResult
from .._i18n import render
from ..errors import HandrailError

__all__ = ["CATALOG", "REQUEST", "ask_client", "client_sampler"]

Ctx = ServerRequestContext[Any, Any]

REQUEST: contextvars.ContextVar[Ctx | None] = contextvars.ContextVar(
    "handrail_mcp_request", default=None
)
"""The MCP request whose call is running: what the served session's sampler answers through."""

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "server_asks": "The MCP server `{server}` asks, through handrail's tool `{tool}`:",
        "no_sampling": (
            "the MCP client that called handrail did not declare sampling, so no model can answer"
        ),
        "no_channel": "this request cannot reach the MCP client's model (no back-channel)",
        "not_text": "the MCP client's model did not answer with text",
    },
    "zh": {
        "server_asks": "MCP 服务器 `{server}` 通过 handrail 的工具 `{tool}` 提问:",
        "no_sampling": "调用 handrail 的 MCP 客户端没有声明 sampling,因此没有模型可以回答",
        "no_channel": "这个请求无法到达 MCP 客户端的模型(没有回传通道)",
        "not_text": "MCP 客户端的模型没有用文字回答",
    },
}


def _say(locale: str, key: str, /, **values: object) -> str:
    return render(CATALOG, locale, key, **values)


async def ask_client(ctx: Ctx, question: Elicitation, locale: str) -> Approval | None:
    """Pass `question` on to the client of `ctx`; None when it cannot take this mode.

    The caller treats None as "nobody could be asked".
    """
    caps = ctx.session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is None or not ctx.session.can_send_request:
        return None
    head = _say(locale, "server_asks", server=question.server, tool=question.tool_name or "?")
    message = f"{head}\n{question.message}"
    if question.url is not None:
        if elicitation.url is None:
            return None
        answer = await ctx.session.elicit_url(
            message,
            question.url,
            question.elicitation_id or "",
            related_request_id=ctx.request_id,
        )
        return Approval.allow_once() if answer.action == "accept" else _refused(answer.action)
    # 2025-06-18 clients declare `elicitation: {}`, which means form mode.
    if elicitation.form is None and elicitation.url is not None:
        return None
    answer = await ctx.session.elicit_form(
        message, dict(question.schema or {}), related_request_id=ctx.request_id
    )
    if answer.action != "accept":
        return _refused(answer.action)
    return Approval.reply(dict(answer.content or {}))


def _refused(action: str) -> Approval:
    return Approval.deny(f"the user answered {action} in the MCP client")


def client_sampler(locale: str) -> Any:
    """A `Sampler` that asks the client of the running call's request (see `REQUEST`)."""

    async def sample(request: SamplingRequest) -> SamplingResult:
        ctx = REQUEST.get()
        if ctx is None or not ctx.session.can_send_request:
            raise HandrailError(_say(locale, "no_channel"))
        caps = ctx.session.client_capabilities
        if caps is None or caps.sampling is None:
            raise HandrailError(_say(locale, "no_sampling"))
        messages = [
            types.SamplingMessage(role=m.role, content=types.TextContent(type="text", text=m.text))
            for m in request.messages
        ]
        # Deprecated with sampling in 2026-07-28; the session-based clients still answer it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            asking = ctx.session.create_message(  # pyright: ignore[reportDeprecated]
                messages,
                max_tokens=request.max_tokens,
                system_prompt=request.system or None,
                related_request_id=ctx.request_id,
            )
        result = await asking
        content = result.content
        if not isinstance(content, types.TextContent):
            raise HandrailError(_say(locale, "not_text"))
        stop = result.stop_reason if result.stop_reason in ("maxTokens", "stopSequence") else None
        return SamplingResult(
            text=content.text,
            model=result.model,
            stop_reason=cast(Any, stop or "endTurn"),
        )

    return sample
