"""A slow, hung or dead MCP server behind the client: calls end as results in bounded time,
the hung server is replaced, and the other servers' tools keep working throughout."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from inline_snapshot import snapshot

from handrail import ErrorCode, Runtime
from handrail.mcp import McpServerConfig, McpTools

SERVER = Path(__file__).parents[1] / "mcp" / "servers" / "content_server.py"
DEADLINE = 30.0
"""Seconds any wait in these tests may take (a bound, not a speed check)."""


def config(name: str) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=(str(SERVER),))


@pytest.fixture
async def pair() -> AsyncIterator[McpTools]:
    mcp = McpTools(
        [config("flaky"), config("steady")],
        root=SERVER.parent,
        call_timeout=3.0,
        health_timeout=0.5,
    )
    async with mcp:
        yield mcp


def runtime(root: Path, mcp: McpTools) -> Runtime:
    return Runtime(mcp.registry(), root=root, mode="bypass")


async def pid_of(rt: Runtime, server: str) -> int:
    r = await rt.call(f"mcp__{server}__pid", {})
    assert r.ok, r.content
    return int(r.content)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


async def wait_until(predicate: object, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_a_hung_server_times_out_is_replaced_and_the_others_keep_working(
    tmp_path: Path, pair: McpTools
) -> None:
    rt = runtime(tmp_path, pair)
    hung_pid = await pid_of(rt, "flaky")
    frozen = asyncio.ensure_future(rt.call("mcp__flaky__freeze", {}))
    # While it hangs, the other server answers every call.
    steady = [await rt.call("mcp__steady__echo", {"text": f"n{i}"}) for i in range(5)]
    assert [r.content for r in steady] == [f"n{i}" for i in range(5)]
    result = await asyncio.wait_for(frozen, DEADLINE)
    assert (result.ok, result.error) == (False, ErrorCode.TIMEOUT)
    await wait_until(lambda: pair.restarts["flaky"] == 1, "the hung server to be dropped")
    await wait_until(lambda: not alive(hung_pid), "the hung process to end")
    again = await rt.call("mcp__flaky__echo", {"text": "back"})
    assert (again.ok, again.content) == (True, "back")
    assert await pid_of(rt, "flaky") != hung_pid
    assert pair.restarts == {"flaky": 1, "steady": 0}


async def test_a_slow_call_times_out_but_a_server_that_answers_pings_is_kept(
    tmp_path: Path, pair: McpTools
) -> None:
    rt = runtime(tmp_path, pair)
    pid = await pid_of(rt, "flaky")
    slow = await rt.call("mcp__flaky__sleep", {"seconds": 10})
    assert (slow.ok, slow.error) == (False, ErrorCode.TIMEOUT)
    assert slow.content == snapshot(
        "MCP server `flaky` did not answer the call to `mcp__flaky__sleep` within 3 s; the call "
        "was cancelled on the server. Try again later or with a smaller request, or tell the "
        "user the server is slow."
    )
    await asyncio.sleep(1.0)  # past the health check's own deadline
    assert pair.restarts["flaky"] == 0
    assert await pid_of(rt, "flaky") == pid


async def test_a_killed_server_is_started_again(tmp_path: Path, pair: McpTools) -> None:
    rt = runtime(tmp_path, pair)
    pid = await pid_of(rt, "flaky")
    os.kill(pid, signal.SIGKILL)
    await wait_until(lambda: not alive(pid), "the killed server to be reaped")
    first = await rt.call("mcp__flaky__echo", {"text": "x"})
    # The call either found the dead connection (a result saying so) or a fresh server.
    assert first.ok or (first.error is ErrorCode.EXECUTION_ERROR and "stopped" in first.content)
    second = await rt.call("mcp__flaky__echo", {"text": "y"})
    assert (second.ok, second.content) == (True, "y")
    assert await pid_of(rt, "flaky") != pid
    steady = await rt.call("mcp__steady__echo", {"text": "z"})
    assert steady.content == "z"
