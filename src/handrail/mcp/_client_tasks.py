"""Calls of tools that run only as MCP tasks (protocol 2025-11-25): create, follow, fetch.

One call (`run_task`):

1. `tools/call` with `params.task`, whose ttl outlives the call's time limit. A server that
   answers with a plain result ran the tool directly; that result is the answer.
2. `tasks/get` at once (a short task is often done by then), then every `pollInterval` the
   server suggests, clamped to [`MIN_POLL`, `MAX_POLL`] seconds (`DEFAULT_POLL` when it
   suggests none). Each new status or status message becomes `ctx.progress`.
3. `input_required`: `tasks/result` is sent, and polling goes on while it waits. The server
   asks its questions (elicitation, sampling) through the connection's callbacks meanwhile,
   and answers `tasks/result` once the task ends (the spec has it block until then).
4. `completed`: the `tasks/result` payload, a `CallToolResult` the caller shapes like any
   other. `failed`: the task's own result when the server keeps one (marked as an error), else
   a `ToolFailure` with the server's status message. `cancelled` by the server: a
   `ToolFailure`.
5. Cancelled in handrail (its time limit, `rt.cancel`): `tasks/cancel` goes out from a task
   of its own (the cancelled one must not be re-cancelled mid-send), is waited for at most
   `CANCEL_GRACE` seconds, and the cancellation goes on.

Invariants: every wait is bounded, by the caller's time limit (`RemoteServer.call`) or by
`CANCEL_GRACE`; a `tasks/result` still pending when the call ends is cancelled and awaited.
The optional `notifications/tasks/status` is not listened for: the SDK drops notifications its
core does not define unless an extension binds them when the client is built, and polling
sees the same statuses.
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any

from .. import ToolContext, ToolFailure
from .._i18n import render

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.client import Client
    from mcp.shared.dispatcher import CallOptions

    from ._client_tool import McpTool

__all__ = ["CANCEL_GRACE", "DEFAULT_POLL", "MAX_POLL", "MIN_POLL", "poll_delay", "run_task"]

logger = logging.getLogger("handrail.mcp")

DEFAULT_POLL = 1.0
"""Seconds between polls when the server suggests no `pollInterval`."""
MIN_POLL = 0.05
"""The shortest poll interval: a server asking for less still gets at most 20 polls a second."""
MAX_POLL = 5.0
"""The longest poll interval: a task that ends is noticed within this many seconds."""
CANCEL_GRACE = 5.0
"""Seconds `tasks/cancel` may take before the call ends without its answer."""
TTL_MARGIN = 60.0
"""Seconds the server is asked to keep a task past the call's time limit."""

_ENDED = frozenset({"completed", "failed", "cancelled"})
# A tasks/cancel still under way when its call was cancelled twice: kept until it ends.
_cancelling: set[asyncio.Task[None]] = set()

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "failed": (
            "MCP server `{server}` ran `{tool}` as a task, and the task failed: {detail}. "
            "Check the arguments and try again, or tell the user."
        ),
        "cancelled": (
            "MCP server `{server}` cancelled the task running `{tool}` (handrail did not): "
            "{detail}. Try again later, or tell the user."
        ),
        "other_task": (
            "MCP server `{server}` answered about another task ({detail}) while running "
            "`{tool}` as a task, so its answer was not used. Try again later, or tell the user."
        ),
        "no_reason": "it gave no reason",
        "working": "working",
        "input_required": "waiting for input",
    },
    "zh": {
        "failed": (
            "MCP 服务器 `{server}` 以任务方式运行 `{tool}`，任务失败：{detail}。"
            "请检查参数后重试，或告知用户。"
        ),
        "cancelled": (
            "MCP 服务器 `{server}` 取消了运行 `{tool}` 的任务（不是 handrail 取消的）：{detail}。"
            "请稍后再试，或告知用户。"
        ),
        "other_task": (
            "MCP 服务器 `{server}` 在以任务方式运行 `{tool}` 时回答了另一个任务（{detail}），"
            "因此没有采用它的回答。请稍后再试，或告知用户。"
        ),
        "no_reason": "它没有给出原因",
        "working": "进行中",
        "input_required": "等待输入",
    },
}


def poll_delay(suggested_ms: int | None) -> float:
    """Seconds until the next `tasks/get`, from the server's `pollInterval` (milliseconds)."""
    if suggested_ms is None:
        return DEFAULT_POLL
    return min(max(suggested_ms / 1000, MIN_POLL), MAX_POLL)


async def run_task(
    client: Client,
    tool: McpTool,
    args: dict[str, Any],
    ctx: ToolContext,
    *,
    server: str,
    time_limit: float | None,
) -> mcp_types.CallToolResult:
    """Run `tool` on `server` as an MCP task and return its result.

    Raises:
        ToolFailure: The task failed or the server cancelled it (text for the model).
        MCPError: The server refused a request (the caller words it).
    """
    from mcp_types import CallToolResult

    run = _TaskRun(client, tool, ctx, server)
    ttl = None if time_limit is None else math.ceil((time_limit + TTL_MARGIN) * 1000)
    created = await run.create(args, ttl)
    if isinstance(created, CallToolResult):  # the server ran the tool directly
        if not created.is_error:
            await client.session.validate_tool_result(tool.remote_name, created)
        return created
    try:
        return await run.follow(created.task)
    except asyncio.CancelledError:
        await run.cancel(created.task.task_id)
        raise


class _TaskRun:
    """One task-augmented call: its requests, and the progress it has reported."""

    def __init__(self, client: Client, tool: McpTool, ctx: ToolContext, server: str) -> None:
        self.client = client
        self.tool = tool
        self.ctx = ctx
        self.server = server
        self._shown: tuple[str, str | None] | None = None

    async def create(
        self, args: dict[str, Any], ttl: int | None
    ) -> mcp_types.CreateTaskResult | mcp_types.CallToolResult:
        """Send the task-augmented `tools/call`; its task, or the result of a direct run."""
        from mcp_types import (
            CallToolRequest,
            CallToolRequestParams,
            CallToolResult,
            CreateTaskResult,
            TaskMetadata,
        )

        params = CallToolRequestParams(
            name=self.tool.remote_name, arguments=args, task=TaskMetadata(ttl=ttl)
        )
        data = CallToolRequest(params=params).model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        session = self.client.session
        # `send_request` checks a tools/call answer against CallToolResult, which a
        # CreateTaskResult is not (the SDK declares the task types but does not send them).
        # So this one request goes out the way the SDK sends its own raw requests: stamped
        # (protocol headers and `_meta`), then through the session's dispatcher.
        opts: CallOptions = {}
        session._stamp(data, opts)  # pyright: ignore[reportPrivateUsage]
        dispatcher = session._dispatcher  # pyright: ignore[reportPrivateUsage]
        raw = await dispatcher.send_raw_request(data["method"], data.get("params"), opts)
        if "task" in raw:
            return CreateTaskResult.model_validate(raw, by_name=False)
        return CallToolResult.model_validate(raw, by_name=False)

    async def follow(self, task: mcp_types.Task) -> mcp_types.CallToolResult:
        """Poll `task` until it ends (fetching early on `input_required`); its result."""
        fetch: asyncio.Task[mcp_types.CallToolResult] | None = None
        try:
            # Bounded by the caller's time limit, which cancels this loop.
            polls = 0
            while task.status not in _ENDED:
                self._report(task)
                if task.status == "input_required" and fetch is None:
                    loop = asyncio.get_running_loop()
                    fetch = loop.create_task(self._payload(task.task_id))
                if polls:
                    delay = poll_delay(task.poll_interval)
                    if fetch is None:
                        await asyncio.sleep(delay)
                    else:
                        await asyncio.wait({fetch}, timeout=delay)
                        if fetch.done():
                            break
                polls += 1
                task = await self._get(task.task_id)
            return await self._outcome(task, fetch)
        finally:
            if fetch is not None and not fetch.done():
                fetch.cancel()
                await asyncio.wait({fetch})

    async def _outcome(
        self, task: mcp_types.Task, fetch: asyncio.Task[mcp_types.CallToolResult] | None
    ) -> mcp_types.CallToolResult:
        from mcp.shared.exceptions import MCPError

        if task.status == "cancelled":
            raise self._failure("cancelled", task.status_message)
        try:
            result = await (fetch if fetch is not None else self._payload(task.task_id))
        except MCPError as exc:
            if task.status not in _ENDED:  # tasks/result ended first: how did the task end?
                task = await self._get(task.task_id)
            if task.status in ("failed", "cancelled"):
                raise self._failure(task.status, task.status_message or exc.message) from exc
            raise
        if task.status == "failed" and not result.is_error:
            result = result.model_copy(update={"is_error": True})
        return result

    async def _get(self, task_id: str) -> mcp_types.GetTaskResult:
        from mcp_types import GetTaskRequest, GetTaskRequestParams, GetTaskResult

        request = GetTaskRequest(params=GetTaskRequestParams(task_id=task_id))
        task = await self.client.session.send_request(request, GetTaskResult)
        if task.task_id != task_id:
            # Following another id would take another task's (maybe another call's) result.
            raise self._failure("other_task", task.task_id)
        return task

    async def _payload(self, task_id: str) -> mcp_types.CallToolResult:
        from mcp_types import CallToolResult, GetTaskPayloadRequest, GetTaskPayloadRequestParams

        request = GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task_id))
        result = await self.client.session.send_request(request, CallToolResult)
        if not result.is_error:
            # As a direct call does: structured content checked against the output schema.
            await self.client.session.validate_tool_result(self.tool.remote_name, result)
        return result

    async def cancel(self, task_id: str) -> None:
        """Send `tasks/cancel` and wait for its answer (at most `CANCEL_GRACE` seconds)."""
        sender = asyncio.get_running_loop().create_task(self._send_cancel(task_id))
        _cancelling.add(sender)
        sender.add_done_callback(_cancelling.discard)
        await asyncio.wait({sender})

    async def _send_cancel(self, task_id: str) -> None:
        from mcp_types import CancelTaskRequest, CancelTaskRequestParams, CancelTaskResult

        request = CancelTaskRequest(params=CancelTaskRequestParams(task_id=task_id))
        try:
            await self.client.session.send_request(
                request, CancelTaskResult, request_read_timeout_seconds=CANCEL_GRACE
            )
        except Exception as exc:  # ended already, or the server is gone: nothing left to stop
            logger.debug("MCP server %r: tasks/cancel %s: %s", self.server, task_id, exc)

    def _report(self, task: mcp_types.Task) -> None:
        shown = (task.status, task.status_message)
        if shown == self._shown:
            return
        self._shown = shown
        text = task.status_message or render(CATALOG, self.ctx.locale, task.status)
        self.ctx.progress(text, task_status=task.status)

    def _failure(self, key: str, detail: str | None) -> ToolFailure:
        loc = self.ctx.locale
        reason = (detail or "").strip().rstrip(".") or render(CATALOG, loc, "no_reason")
        text = render(CATALOG, loc, key, server=self.server, tool=self.tool.name, detail=reason)
        return ToolFailure(text)
