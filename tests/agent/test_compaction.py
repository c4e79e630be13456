"""Context accounting and compaction: pruning old outputs, summaries, never a split pair."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from handrail import Registry, Runtime, ToolCall, ToolResult, tool
from handrail.agent import (
    Agent,
    AssistantMessage,
    CompactionSettings,
    ToolResults,
    UserMessage,
)
from handrail.agent._compaction import (
    SUMMARY_SYSTEM,
    prune_results,
    render_for_summary,
    split_point,
)
from handrail.builtin import coding_tools
from handrail.testing import Fault, ModelServer, RecordedRequest, Reply, ToolUse


@tool(read_only=True, concurrency_safe=True)
def big(n: int) -> str:
    """Return a large output."""
    return f"output {n}: " + "x" * 3000


def is_summary_request(req: RecordedRequest) -> bool:
    return req.body["messages"][0]["content"] == SUMMARY_SYSTEM


def call(i: str) -> ToolCall:
    return ToolCall(id=i, name="big", arguments={"n": 1})


def result(i: str, size: int = 4000) -> ToolResult:
    return ToolResult(ok=True, content="y" * size, call_id=i, tool_name="big")


def test_pruning_keeps_the_newest_outputs_and_every_pair() -> None:
    messages = [
        UserMessage(text="go"),
        AssistantMessage(calls=(call("a"),)),
        ToolResults(results=(result("a"),)),
        AssistantMessage(calls=(call("b"),)),
        ToolResults(results=(result("b"),)),
        AssistantMessage(calls=(call("c"),)),
        ToolResults(results=(result("c"),)),
    ]
    out, pruned, freed = prune_results(messages, protect=500, locale="en")
    assert pruned == 2 and freed > 1500
    assert len(out) == len(messages)
    contents = [m.results[0].content for m in out if isinstance(m, ToolResults)]
    assert contents[0].startswith("[Output removed to save context (4000 characters of `big`")
    assert contents[2] == "y" * 4000
    # Ids and order are untouched: every call still has its result.
    assert [m.results[0].call_id for m in out if isinstance(m, ToolResults)] == ["a", "b", "c"]


def test_the_summary_cut_never_separates_a_call_from_its_result() -> None:
    messages = [
        UserMessage(text="first " * 200),
        AssistantMessage(calls=(call("a"),)),
        ToolResults(results=(result("a", 400),)),
        AssistantMessage(calls=(call("b"),)),
        ToolResults(results=(result("b", 400),)),
    ]
    cut = split_point(messages, keep=50)
    assert cut == 3
    assert isinstance(messages[cut], AssistantMessage)
    assert split_point(messages[:1], keep=50) == 0


def test_a_conversation_too_big_for_one_summary_request_is_chunked() -> None:
    messages = [UserMessage(text=f"request {i}: " + "z" * 900) for i in range(10)]
    chunks = render_for_summary(messages, limit_chars=2500)
    assert len(chunks) == 5
    assert all(len(c) <= 2500 for c in chunks)
    assert "request 0" in chunks[0] and "request 9" in chunks[-1]


async def test_old_tool_outputs_are_pruned_when_the_window_fills(
    server: ModelServer, tmp_path: Path, client: Any
) -> None:
    for n in range(3):
        server.push(Reply(tool_calls=[ToolUse("big", {"n": n})], input_tokens=100))
    server.push(Reply(tool_calls=[ToolUse("big", {"n": 3})], input_tokens=1800))
    server.push(Reply(text="done", input_tokens=300))
    rt = Runtime(Registry([big]), root=tmp_path)
    events: list[Any] = []
    agent = Agent(client(context_window=2000), rt, save=False)
    async with asyncio.timeout(20):
        result = await agent.run("go", on_event=events.append)
    assert result.subtype == "success"
    compactions = [e.to_json() for e in events if e.type == "compaction"]
    assert len(compactions) == 1
    assert compactions[0]["pruned_results"] >= 2 and compactions[0]["summarized_messages"] == 0
    assert compactions[0]["tokens_after"] < compactions[0]["tokens_before"]
    last = json.dumps(server.requests[-1].body)
    assert "[Output removed to save context" in last
    assert "output 3: xxx" in last  # the newest output stays
    assert not any(is_summary_request(r) for r in server.requests)
    assert server.problems == []


async def test_older_turns_are_summarised_by_the_model_and_reads_must_be_repeated(
    server: ModelServer, tmp_path: Path, client: Any
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.md").write_text("hello\n")
    rt = Runtime(Registry(coding_tools(project_dir=root)), root=root, mode="accept_edits")
    agent = Agent(client(context_window=200_000), rt, save=False)
    server.push(
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "notes.md"})]),
        Reply(text="It says hello. " * 50),
    )
    async with asyncio.timeout(20):
        await agent.run("Read notes.md. " + "Context. " * 300)
    assert rt.session.files  # the read is recorded
    server.push(Reply(text="- The user asked to read notes.md; it says hello."))
    async with asyncio.timeout(20):
        event = await agent.compact(focus="the notes")
    assert event is not None and event.manual and event.summarized_messages >= 1
    summary_request = server.requests[-1]
    assert is_summary_request(summary_request)
    assert "tools" not in summary_request.body
    assert "Pay special attention to: the notes" in json.dumps(summary_request.body)
    assert not rt.session.files  # the model must read again before editing
    assert isinstance(agent.messages[0], UserMessage) and agent.messages[0].kind == "summary"
    server.push(Reply(text="ok"))
    async with asyncio.timeout(20):
        await agent.run("continue")
    sent = json.dumps(server.requests[-1].body)
    assert "<summary>" in sent and "it says hello." in sent
    assert "Context. Context." not in sent
    assert server.problems == []


async def test_compaction_that_keeps_failing_ends_the_run_clearly(
    server: ModelServer, tmp_path: Path, client: Any
) -> None:
    rt = Runtime(Registry([big]), root=tmp_path)
    settings = CompactionSettings(max_failures=2)
    agent = Agent(client(context_window=1000), rt, save=False, compaction=settings)
    server.push(Reply(text="first", input_tokens=100))
    async with asyncio.timeout(20):
        await agent.run("a " * 200)
    # Now the window is over-full and every summary request fails.
    server.push(Reply(text="second", input_tokens=1200))
    async with asyncio.timeout(20):
        await agent.run("b " * 200)
    for _ in range(4):
        server.push(Fault(status=400, body="no"))
    async with asyncio.timeout(20):
        result = await agent.run("c")
    assert result.subtype == "error_context"
    assert "compaction failed 2 times" in result.error
    assert sum(1 for r in server.requests if is_summary_request(r)) == 2
