"""Tools that require MCP tasks, run through the real Runtime against real servers over stdio.

`servers/tasks_server.py` runs its tools as tasks and records every request it gets on its own
clock (the `journal` tool), so the tests assert on what reached the server: the task
parameter, the polls, `tasks/result`, `tasks/cancel`. The official "everything" server's
`simulate-research-query` is the independent peer: handrail's result is compared with what the
official `mcp` client gets driving the same task by hand.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ErrorCode, ProgressEvent, Runtime, ToolResult
from handrail.mcp import McpServerConfig, McpTool, McpTools
from handrail.mcp._client_tasks import DEFAULT_POLL, MAX_POLL, MIN_POLL, poll_delay

SERVER = Path(__file__).parent / "servers" / "tasks_server.py"
WAIT = 30.0  # seconds: an upper bound for anything a test waits on, never a speed threshold


def tasks_server(**extra: Any) -> McpServerConfig:
    return McpServerConfig(name="tasks", command=sys.executable, args=(str(SERVER),), **extra)


@pytest.fixture
async def mcp(tmp_path: Path) -> AsyncIterator[McpTools]:
    async with McpTools([tasks_server()], root=tmp_path) as tools:
        yield tools


def runtime(root: Path, mcp: McpTools, **kw: Any) -> Runtime:
    return Runtime(mcp.registry(), root=root, mode="bypass", **kw)


async def journal(rt: Runtime) -> list[dict[str, Any]]:
    """Every request the server got, in order, with its time on the server's clock."""
    r = await rt.call("mcp__tasks__journal", {})
    assert r.ok, r.content
    return json.loads(r.content)


def task_of(entries: list[dict[str, Any]], result: ToolResult) -> list[dict[str, Any]]:
    """The requests about the task that produced `result` (its id is in the result's _meta)."""
    task_id = result.metadata["mcp_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    return [e for e in entries if e["task_id"] == task_id]


def last_task(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests about the last task the server saw."""
    task_id = [e["task_id"] for e in entries if e["task_id"]][-1]
    return [e for e in entries if e["task_id"] == task_id]


async def test_task_tools_are_listed_and_know_they_need_tasks(mcp: McpTools) -> None:
    tools = {t.name: t for t in mcp.tools}
    assert mcp.skipped == {}
    assert sorted(name for name, t in tools.items() if t.task_required) == snapshot(
        [
            "mcp__tasks__ask",
            "mcp__tasks__drop",
            "mcp__tasks__fail",
            "mcp__tasks__hang",
            "mcp__tasks__quick",
            "mcp__tasks__stages",
            "mcp__tasks__work",
        ]
    )
    assert not tools["mcp__tasks__quick_direct"].task_required


async def test_a_required_tool_runs_as_a_task_and_an_optional_one_directly(
    tmp_path: Path, mcp: McpTools
) -> None:
    rt = runtime(tmp_path, mcp)
    as_task = await rt.call("mcp__tasks__quick", {"text": "via a task"})
    direct = await rt.call("mcp__tasks__quick_direct", {"text": "straight"})
    assert (as_task.ok, as_task.content, direct.ok, direct.content) == (
        True,
        "via a task",
        True,
        "straight",
    )
    calls = [(e["tool"], e["task"]) for e in await journal(rt) if e["method"] == "tools/call"]
    assert calls == [("quick", True), ("quick_direct", False)]
    # Created, polled at once (a quick task is done by then), its result fetched once.
    methods = [e["method"] for e in task_of(await journal(rt), as_task)]
    assert methods == ["tools/call", "tasks/get", "tasks/result"]


async def test_polls_follow_the_servers_poll_interval(tmp_path: Path, mcp: McpTools) -> None:
    rt = runtime(tmp_path, mcp)
    r = await rt.call("mcp__tasks__work", {"seconds": 1.0, "poll_ms": 100})
    assert (r.ok, r.content) == (True, "worked in 1 steps")
    polls = [e["t"] for e in task_of(await journal(rt), r) if e["method"] == "tasks/get"]
    span = polls[-1] - polls[0]  # on the server's clock
    # Never faster than asked (one poll of slack for delivery jitter) ...
    assert len(polls) - 1 <= span / 0.1 + 1
    # ... and not at the 1 s default: a second of work at 100 ms sees several polls.
    assert len(polls) >= 4


async def test_a_poll_interval_below_the_floor_is_raised_to_it(
    tmp_path: Path, mcp: McpTools
) -> None:
    rt = runtime(tmp_path, mcp)
    r = await rt.call("mcp__tasks__work", {"seconds": 0.5, "poll_ms": 1})
    assert r.ok, r.content
    polls = [e["t"] for e in task_of(await journal(rt), r) if e["method"] == "tasks/get"]
    assert 2 <= len(polls) <= (polls[-1] - polls[0]) / MIN_POLL + 2


def test_poll_delay_clamps_the_servers_suggestion() -> None:
    assert [poll_delay(ms) for ms in (None, 0, 250, 3_600_000)] == [
        DEFAULT_POLL,
        MIN_POLL,
        0.25,
        MAX_POLL,
    ]


async def test_progress_events_carry_the_status_messages(tmp_path: Path, mcp: McpTools) -> None:
    events: list[ProgressEvent] = []
    rt = runtime(tmp_path, mcp, on_progress=events.append)
    r = await rt.call("mcp__tasks__stages", {"n": 3}, call_id="s1")
    assert (r.ok, r.content) == (True, "all 3 stages done")
    assert [(e.call_id, e.message, e.data) for e in events] == snapshot(
        [
            ("s1", "working", {"task_status": "working"}),
            ("s1", "stage 1 of 3", {"task_status": "working"}),
            ("s1", "stage 2 of 3", {"task_status": "working"}),
            ("s1", "stage 3 of 3", {"task_status": "working"}),
        ]
    )


async def test_input_required_fetches_the_result_while_the_server_asks(
    tmp_path: Path, mcp: McpTools
) -> None:
    events: list[ProgressEvent] = []
    rt = runtime(tmp_path, mcp, on_progress=events.append)
    r = await rt.call("mcp__tasks__ask", {})
    # The server resumes only once a tasks/result waits on its task: that is where a server
    # delivers its questions to the client.
    assert (r.ok, r.content) == (True, "answered")
    assert ("Which one did you mean?", {"task_status": "input_required"}) in [
        (e.message, e.data) for e in events
    ]
    assert [e["method"] for e in task_of(await journal(rt), r)].count("tasks/result") == 1


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        pytest.param(
            "mcp__tasks__fail",
            {"message": "the disk is full."},
            snapshot(
                "MCP server `tasks` ran `mcp__tasks__fail` as a task, and the task failed: the disk is full. Check the arguments and try again, or tell the user."
            ),
            id="failed-without-a-result",
        ),
        pytest.param(
            "mcp__tasks__fail",
            {"message": "the disk is full", "result": True},
            snapshot("the tool says: the disk is full"),
            id="failed-with-its-own-result",
        ),
        pytest.param(
            "mcp__tasks__drop",
            {},
            snapshot(
                "MCP server `tasks` cancelled the task running `mcp__tasks__drop` (handrail did not): the server is shutting down. Try again later, or tell the user."
            ),
            id="cancelled-by-the-server",
        ),
    ],
)
async def test_a_task_that_fails_is_an_error_with_the_servers_message(
    tmp_path: Path, mcp: McpTools, tool: str, args: dict[str, Any], expected: str
) -> None:
    r = await runtime(tmp_path, mcp).call(tool, args)
    assert (r.ok, r.error, r.content) == (False, ErrorCode.EXECUTION_ERROR, expected)


async def test_a_timeout_cancels_the_task_on_the_server(tmp_path: Path) -> None:
    async with McpTools([tasks_server(timeout=0.5)], root=tmp_path) as mcp:
        rt = runtime(tmp_path, mcp)
        r = await rt.call("mcp__tasks__hang", {})
        assert (r.ok, r.error) == (False, ErrorCode.TIMEOUT)
        assert r.content == snapshot(
            "MCP server `tasks` did not answer the call to `mcp__tasks__hang` within 0.5 s; the call was cancelled on the server. Try again later or with a smaller request, or tell the user the server is slow."
        )
        # The call ended after the server had answered tasks/cancel: it is in the record.
        entries = last_task(await journal(rt))
        assert entries[-1]["method"] == "tasks/cancel"
        assert mcp.restarts == {"tasks": 0}  # the server kept answering


async def test_cancelling_the_call_cancels_the_task_on_the_server(
    tmp_path: Path, mcp: McpTools
) -> None:
    running = asyncio.Event()
    rt = runtime(tmp_path, mcp, on_progress=lambda e: e.message == "hanging on" and running.set())
    call = asyncio.ensure_future(rt.call("mcp__tasks__hang", {}, call_id="h1"))
    await asyncio.wait_for(running.wait(), WAIT)
    assert rt.cancel("h1")
    r = await asyncio.wait_for(call, WAIT)
    assert (r.ok, r.error) == (False, ErrorCode.CANCELLED)
    entries = last_task(await journal(rt))
    assert (entries[0]["tool"], entries[-1]["method"]) == ("hang", "tasks/cancel")


# -- the official "everything" server ------------------------------------------------------------


async def by_hand(argv: list[str], arguments: dict[str, Any]) -> tuple[Any, list[str]]:
    """Drive `simulate-research-query` as a task with the official client; (result, statuses)."""
    import mcp_types as t
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(params, cache=None) as client:
        session = client.session
        request = t.CallToolRequest(
            params=t.CallToolRequestParams(
                name="simulate-research-query", arguments=arguments, task=t.TaskMetadata(ttl=60_000)
            )
        )
        # The SDK's send_request checks a tools/call answer as a CallToolResult, so the task is
        # created with a raw request, as the SDK sends its own.
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        raw = await session._dispatcher.send_raw_request("tools/call", data["params"], {})
        task = t.CreateTaskResult.model_validate(raw, by_name=False).task
        statuses = [task.status_message or task.status]
        for _ in range(100):  # bounded: the task takes about 4 s at a 1 s poll interval
            if task.status in ("completed", "failed", "cancelled"):
                break
            await asyncio.sleep((task.poll_interval or 1000) / 1000)
            get = t.GetTaskRequest(params=t.GetTaskRequestParams(task_id=task.task_id))
            task = await session.send_request(get, t.GetTaskResult)
            statuses.append(task.status_message or task.status)
        assert task.status == "completed", statuses
        fetch = t.GetTaskPayloadRequest(params=t.GetTaskPayloadRequestParams(task_id=task.task_id))
        return await session.send_request(fetch, t.CallToolResult), statuses


async def test_everything_research_query_matches_the_official_client(
    tmp_path: Path, mcp_peers: Any
) -> None:
    argv: list[str] = mcp_peers.everything
    arguments = {"topic": "tide pools"}
    events: list[ProgressEvent] = []

    async def through_handrail() -> ToolResult:
        config = McpServerConfig(name="everything", command=argv[0], args=tuple(argv[1:]))
        async with McpTools([config], root=tmp_path) as mcp:
            research = mcp.registry().get("mcp__everything__simulate-research-query")
            assert isinstance(research, McpTool) and research.task_required
            rt = runtime(tmp_path, mcp, on_progress=events.append)
            return await rt.call("mcp__everything__simulate-research-query", arguments)

    # Side by side: the task takes about 4 s, and the server about 2 s to stop after one.
    ours, (theirs, statuses) = await asyncio.wait_for(
        asyncio.gather(through_handrail(), by_hand(argv, arguments)), WAIT
    )
    assert (ours.ok, theirs.is_error) == (True, False)
    assert [b.type for b in theirs.content] == ["text"]
    assert ours.content == theirs.content[0].text
    assert ours.content.startswith("# Research Report: tide pools")
    # Both saw the task's stages as its status messages, from the first one on.
    stages = ["Gathering sources...", "Analyzing content...", "Synthesizing findings..."]
    stages.append("Generating report...")
    seen = [e.message for e in events]
    assert seen[0] == statuses[0] == stages[0]
    assert seen == sorted(set(seen), key=stages.index)  # each stage once, in order
    # The result names its task, as the server stamped it.
    meta = ours.metadata["mcp_meta"]["io.modelcontextprotocol/related-task"]
    assert set(meta) == set(theirs.meta["io.modelcontextprotocol/related-task"]) == {"taskId"}


async def test_a_question_asked_while_a_task_waits_for_input_reaches_the_person(
    tmp_path: Path, mcp_peers: Any
) -> None:
    from handrail import Approval, Elicitation, Question

    argv: list[str] = mcp_peers.everything
    asked: list[Question] = []

    async def approver(question: Question) -> Approval:
        asked.append(question)
        return Approval.reply({"interpretation": "snake"})

    config = McpServerConfig(name="everything", command=argv[0], args=tuple(argv[1:]))
    async with McpTools([config], root=tmp_path) as mcp:
        rt = runtime(tmp_path, mcp, approver=approver)
        result = await asyncio.wait_for(
            rt.call(
                "mcp__everything__simulate-research-query",
                {"topic": "python", "ambiguous": True},
                call_id="research",
            ),
            WAIT,
        )
    (question,) = asked
    assert isinstance(question, Elicitation)
    assert (question.server, question.call_id) == ("everything", "research")
    assert question.schema is not None and "interpretation" in question.schema["properties"]
    assert result.ok, result.content
    # The server carried on with the person's answer.
    assert "python (snake)" in result.content
