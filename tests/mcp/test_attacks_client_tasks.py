"""Attacks by an MCP server through tasks: answers that never come, floods, someone else's task.

The server is `servers/hostile_requests_server.py` (stdio, raw JSON-RPC). Every call must end
as a `ToolResult` with a stable code, within the call's time limit plus the documented
`CANCEL_GRACE`, whatever the server does or fails to do.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from handrail import ErrorCode, ProgressEvent, Registry, Runtime
from handrail.mcp import McpServerConfig, McpTools
from handrail.mcp._client_tasks import CANCEL_GRACE, MIN_POLL

SERVER = Path(__file__).parent / "servers" / "hostile_requests_server.py"
WAIT = 60.0  # an upper bound for anything a test waits on, never a speed threshold


def hostile(timeout: float | None = None) -> McpServerConfig:
    return McpServerConfig(name="h", command=sys.executable, args=(str(SERVER),), timeout=timeout)


async def journal(rt: Runtime) -> dict[str, Any]:
    return json.loads((await rt.call("mcp__h__journal", {})).content)


@pytest.mark.parametrize("tool", ["task_result_hangs", "task_cancel_hangs"])
async def test_a_task_that_never_answers_ends_within_its_limit_plus_the_grace(
    tmp_path: Path, tool: str
) -> None:
    limit = 1.0
    async with McpTools([hostile(timeout=limit)], root=tmp_path) as mcp:
        rt = Runtime(Registry(imported=mcp.tools), root=tmp_path, mode="bypass")
        started = time.monotonic()
        async with asyncio.timeout(WAIT):
            result = await rt.call(f"mcp__h__{tool}", {})
        took = time.monotonic() - started
        seen = await journal(rt)
        await rt.aclose()
    assert result.error == ErrorCode.TIMEOUT, result.content
    assert took < limit + CANCEL_GRACE + 5.0
    assert seen["cancels"] == 1  # the server was told, once


async def test_a_cancelled_task_call_does_not_wait_on_a_server_that_ignores_the_cancel(
    tmp_path: Path,
) -> None:
    async with McpTools([hostile()], root=tmp_path) as mcp:
        rt = Runtime(Registry(imported=mcp.tools), root=tmp_path, mode="bypass")
        call = asyncio.ensure_future(rt.call("mcp__h__task_cancel_hangs", {}, call_id="t1"))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        assert rt.cancel("t1", "the user stopped it")
        async with asyncio.timeout(WAIT):
            result = await call
        took = time.monotonic() - started
        await rt.aclose()
    assert result.error == ErrorCode.CANCELLED, result.content
    assert took < CANCEL_GRACE + 5.0


async def test_a_poll_interval_of_zero_and_huge_status_messages_are_bounded(
    tmp_path: Path,
) -> None:
    events: list[ProgressEvent] = []
    async with McpTools([hostile()], root=tmp_path) as mcp:
        rt = Runtime(
            Registry(imported=mcp.tools),
            root=tmp_path,
            mode="bypass",
            on_progress=events.append,
        )
        started = time.monotonic()
        async with asyncio.timeout(WAIT):
            result = await rt.call(
                "mcp__h__task_chatty", {"size": 200_000, "polls": 15, "poll_ms": 0}
            )
        took = time.monotonic() - started
        gets = (await journal(rt))["gets"]
        await rt.aclose()
    assert result.ok and result.content == "own result"
    # At most one poll per MIN_POLL (and one at once): a pollInterval of 0 is no busy loop.
    assert gets <= took / MIN_POLL + 2
    # Its status messages arrive as progress, as sent (the front ends spell and cut them).
    assert 1 <= len(events) <= gets + 1


async def test_a_poll_answered_for_another_task_is_not_taken_as_this_ones(
    tmp_path: Path,
) -> None:
    async with McpTools([hostile(timeout=10)], root=tmp_path) as mcp:
        rt = Runtime(Registry(imported=mcp.tools), root=tmp_path, mode="bypass")
        async with asyncio.timeout(WAIT):
            result = await rt.call("mcp__h__task_other_id", {})
        await rt.aclose()
    assert "OTHER TASK'S RESULT" not in result.content
