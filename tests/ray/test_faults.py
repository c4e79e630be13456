"""Faults on a real local Ray: a host killed mid-call, stuck tools, a stuck host, leaks.

What a user would notice: every affected call returns (SESSION_LOST or BACKEND_UNAVAILABLE)
in bounded time, nothing runs twice, later calls answer at once, and `close()` leaves no
process or directory behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from pathlib import Path

import pytest

from handrail import ErrorCode, ToolCall
from handrail.ray import PathWorkspace, SessionPool

from .conftest import TOOLS, pids_in, pids_running

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_local")]


async def gone(pids: list[int], seconds: float = 15.0) -> bool:
    """Whether all `pids` exit within `seconds` (polled, bounded)."""
    for _ in range(int(seconds * 10)):
        if not any(Path(f"/proc/{p}").exists() for p in pids):
            return True
        await asyncio.sleep(0.1)
    return False


async def test_kill_9_of_a_host_mid_call_loses_its_sessions_and_runs_nothing_twice(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"sleep 47{os.getpid() % 1000}"
    async with SessionPool(TOOLS.coding, hosts=1, mode="bypass") as pool:
        a = await pool.open(PathWorkspace(str(ws)))
        b = await pool.open()
        host_pid = (await pool.stats())[0]["pid"]
        command = f"echo run >> runs.txt; {marker}; echo done >> runs.txt"
        calls = [
            asyncio.create_task(a.call("run_shell", {"command": command})),
            asyncio.create_task(b.call("run_shell", {"command": marker})),
        ]
        for _ in range(100):  # bounded: until both commands run
            if len(pids_running(marker)) >= 2 and (ws / "runs.txt").exists():
                break
            await asyncio.sleep(0.1)
        os.kill(host_pid, signal.SIGKILL)
        async with asyncio.timeout(60):
            results = await asyncio.gather(*calls)
        for r in results:
            assert r.error is ErrorCode.SESSION_LOST, r.content
            assert r.metadata["executed"] == "unknown" and r.metadata["reason"] == "host_died"
        assert results[0].call_id and results[0].tool_name == "run_shell"

        # Later calls answer at once with the same loss; nothing is sent anywhere.
        later = await a.call("write_file", {"file_path": "x", "content": "x"}, call_id="late")
        assert later.error is ErrorCode.SESSION_LOST and later.metadata["executed"] == "no"
        assert later.call_id == "late" and not (ws / "x").exists()

        # The commands died with their host; the one that ran did so once.
        assert await gone(pids_running(marker))
        assert (ws / "runs.txt").read_text() == "run\n"

        # New sessions go to a replacement host; the lost session stays lost.
        fresh = await pool.open()
        assert fresh.lost is None and fresh.host != a.host
        assert (await fresh.call("list_files", {})).ok
        assert (await a.call("list_files", {})).error is ErrorCode.SESSION_LOST
    assert (ws / "runs.txt").read_text() == "run\n"


async def test_a_tool_that_ignores_cancellation_gets_backend_unavailable_at_the_deadline() -> None:
    async with SessionPool(TOOLS.with_stubborn, hosts=1, margin=0.5, grace=0.5) as pool:
        rt = await pool.open()
        async with asyncio.timeout(30):
            r = await rt.call("stubborn", {"seconds": 6})
        assert r.error is ErrorCode.BACKEND_UNAVAILABLE, r.content
        assert r.metadata["reason"] == "timeout" and r.metadata["executed"] == "unknown"
        # The host is alive: the session still works.
        assert rt.lost is None
        assert (await rt.call("list_files", {})).ok


async def test_calls_queued_for_a_command_slot_are_not_cut_by_the_client_deadline() -> None:
    # One slot, three 1.5 s commands with a 2 s limit each: the last one waits 3 s for its
    # slot, past its limit plus the margin, yet its limit has not started in the host.
    async with SessionPool(
        TOOLS.with_stubborn, hosts=1, command_slots=1, margin=0.5, grace=0.5, mode="bypass"
    ) as pool:
        sessions = [await pool.open() for _ in range(3)]
        async with asyncio.timeout(60):
            results = await asyncio.gather(*(rt.call("busy", {"seconds": 1.5}) for rt in sessions))
        assert [r.ok for r in results] == [True, True, True], [r.content for r in results]
        # The same through a batch, which runs as a stream: one session, one call at a time.
        calls = [ToolCall(id=f"b{i}", name="busy", arguments='{"seconds": 1.5}') for i in range(3)]
        async with asyncio.timeout(60):
            batch = await sessions[0].call_many(calls)
        assert [r.ok for r in batch] == [True, True, True], [r.content for r in batch]


async def test_a_host_that_stops_answering_is_ended_and_its_sessions_lost() -> None:
    async with SessionPool(
        TOOLS.with_stubborn, hosts=1, margin=0.5, grace=0.5, probe_timeout=1.0, lost_after=3.0
    ) as pool:
        rt = await pool.open(default_timeout=1)
        other = await pool.open()
        host_pid = (await pool.stats())[0]["pid"]
        async with asyncio.timeout(30):
            r = await rt.call("wedge", {"seconds": 20})
        assert r.error is ErrorCode.SESSION_LOST, r.content
        assert "stopped answering" in r.metadata["detail"]
        assert (await other.call("list_files", {})).error is ErrorCode.SESSION_LOST
        assert await gone([host_pid])


async def test_close_leaves_no_process_workspace_or_directory(tmp_path: Path) -> None:
    marker = f"sleep 59{os.getpid() % 1000}"
    pool = SessionPool(TOOLS.coding, hosts=2, mode="bypass")
    await pool.start()
    base = Path(tempfile.gettempdir()) / f"handrail-ray-{pool.id}"
    sessions = [await pool.open() for _ in range(4)]
    for rt in sessions:  # a background job each, and a command in flight in one
        started = await rt.call("run_shell", {"command": marker, "run_in_background": True})
        assert started.ok, started.content
    running = asyncio.create_task(sessions[0].call("run_shell", {"command": marker}))
    for _ in range(100):
        if len(pids_running(marker)) >= 5:
            break
        await asyncio.sleep(0.1)
    host_pids = [s["pid"] for s in await pool.stats()]
    assert base.exists() and pids_in(base)
    await pool.close()
    async with asyncio.timeout(30):
        cut = await running
    assert cut.error is ErrorCode.SESSION_LOST
    assert await gone(host_pids)
    assert await gone(pids_running(marker))
    assert not pids_running(marker)
    assert not base.exists()


async def test_the_sweep_removes_what_a_killed_host_left(tmp_path: Path) -> None:
    async with SessionPool(TOOLS.coding, hosts=1, mode="bypass") as pool:
        rt = await pool.open()
        await rt.call("write_file", {"file_path": "left.txt", "content": "x"})
        root = Path(rt.root)
        host_pid = (await pool.stats())[0]["pid"]
        os.kill(host_pid, signal.SIGKILL)
        r = await rt.call("list_files", {})
        assert r.error is ErrorCode.SESSION_LOST
        assert root.exists()  # a killed host cleans nothing
        base = root.parents[2]
    assert not base.exists()
