"""The agent loop against the scripted model server: turns, tools, approvals, limits, faults.

Every test drives the real `Agent` over real HTTP (`handrail.testing.ModelServer`), and most
check `server.problems`: the server refuses (and records) any request in which a tool call has
no result or a result answers no call, as the providers do.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from handrail import (
    Approval,
    ApprovalRequest,
    ErrorCode,
    Question,
    Registry,
    Runtime,
    ToolContext,
    tool,
)
from handrail.agent import (
    Agent,
    Event,
    Prices,
    ToolResults,
    UserMessage,
)
from handrail.builtin import coding_tools
from handrail.testing import Fault, ModelServer, Reply, ToolUse

PROVIDERS = ["openai_chat", "openai_responses", "anthropic", "gemini"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "greet.py").write_text('def greet(n):\n    return "Hello, " + n\n')
    return root


def coding_runtime(root: Path, **kw: Any) -> Runtime:
    kw.setdefault("mode", "accept_edits")
    return Runtime(Registry(coding_tools(project_dir=root)), root=root, **kw)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events if e.type not in ("text_delta", "reasoning_delta")]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.events if e.type == kind]


def tool_results_sent(server: ModelServer, index: int = -1) -> str:
    """Everything the model was sent in request `index`, as text (to search for results)."""
    return json.dumps(server.requests[index].body, ensure_ascii=False)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_task_runs_to_an_answer_on_every_provider(
    provider: str, workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(
            text="Let me look.",
            tool_calls=[
                ToolUse("read_file", {"file_path": "greet.py"}),
                ToolUse("grep_search", {"pattern": "Hello"}),
            ],
            chunk_size=3,
        ),
        Reply(
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {"file_path": "greet.py", "old_string": "Hello, ", "new_string": "Hi, "},
                )
            ]
        ),
        Reply(text="Done: the greeting is now Hi."),
    )
    rt = coding_runtime(workspace)
    agent = Agent(client(provider), rt)
    rec = Recorder()
    async with asyncio.timeout(30):
        result = await agent.run("Change the greeting to Hi", on_event=rec)
    await agent.aclose()
    await rt.aclose()
    assert result.subtype == "success", result.error
    assert result.result == "Done: the greeting is now Hi."
    assert result.num_turns == 3
    assert result.usage.requests == 3
    assert (workspace / "greet.py").read_text() == 'def greet(n):\n    return "Hi, " + n\n'
    assert server.problems == []
    # The read's content went back to the model as a tool result.
    assert 'return \\"Hello, \\" + n' in tool_results_sent(server, 1)
    assert rec.types()[0] == "run_started"
    assert rec.types()[-1] == "result"
    assert rec.types().count("tool_call_finished") == 3
    # The transcript holds the whole conversation, call results included.
    path = agent.transcript_path
    assert path is not None and path.is_file()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["type"] == "session"
    assert lines[-1]["type"] == "result"
    assert sum(1 for line in lines if line["type"] == "message") == 6


async def test_tools_start_while_the_model_is_still_streaming(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    started: list[float] = []

    @tool(read_only=True, concurrency_safe=True)
    async def probe(n: int) -> str:
        """Record when it starts."""
        started.append(time.monotonic())
        return f"probe {n}"

    server.push(
        Reply(
            tool_calls=[ToolUse("probe", {"n": 1}), ToolUse("probe", {"n": 2})],
            chunk_size=2,
            delay=0.02,
        ),
        Reply(text="ok"),
    )
    rt = Runtime(Registry([probe]), root=workspace)
    agent = Agent(client("anthropic"), rt, save=False)
    rec = Recorder()
    async with asyncio.timeout(30):
        await agent.run("go", on_event=rec)
    kinds = [
        (
            e.type,
            e.to_json().get("call", {}).get("arguments")
            or e.to_json().get("result", {}).get("content"),
        )
        for e in rec.events
        if e.type in ("tool_call_started", "tool_call_finished")
    ]
    # The first call finished before the model had finished writing the second one.
    assert kinds.index(("tool_call_finished", "probe 1")) < [k for k, _ in kinds].index(
        "tool_call_started", 1
    )
    assert server.problems == []


async def test_a_call_that_asks_reaches_the_approver_and_its_answer_counts(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    asked: list[ApprovalRequest] = []
    events = Recorder()

    async def approver(request: Question) -> Approval:
        assert isinstance(request, ApprovalRequest)
        asked.append(request)
        if "allowed" in str(request.call.arguments):
            return Approval.allow_once()
        return Approval.deny("Not that one, use the other file.")

    server.push(
        Reply(
            tool_calls=[
                ToolUse("write_file", {"file_path": "allowed.txt", "content": "yes"}),
                ToolUse("write_file", {"file_path": "refused.txt", "content": "no"}),
            ]
        ),
        Reply(text="done"),
    )
    rt = coding_runtime(workspace, mode="default")
    agent = Agent(client(), rt, approver=approver, save=False)
    async with asyncio.timeout(30):
        result = await agent.run("write two files", on_event=events)
    assert result.subtype == "success"
    assert [a.tool_name for a in asked] == ["write_file", "write_file"]
    assert all(a.agent == "main" for a in asked)
    # Observed on the way: each question and its answer are events of the run.
    assert [e["tool_name"] for e in events.of("approval_asked")] == ["write_file"] * 2
    assert [e["decision"] for e in events.of("approval_answered")] == ["allow_once", "deny"]
    assert (workspace / "allowed.txt").read_text() == "yes"
    assert not (workspace / "refused.txt").exists()
    assert "Not that one, use the other file." in tool_results_sent(server)
    assert server.problems == []


async def test_headless_denies_what_would_ask_and_tells_the_model_the_rule(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    marker = workspace / "ran.txt"
    server.push(
        Reply(tool_calls=[ToolUse("run_shell", {"command": f"touch {marker}"})]),
        Reply(text="I could not run it."),
    )
    rt = coding_runtime(workspace)
    rec = Recorder()
    agent = Agent(client(), rt, save=False)
    async with asyncio.timeout(30):
        await agent.run("touch it", on_event=rec)
    await rt.aclose()
    assert not marker.exists()
    sent = tool_results_sent(server)
    assert "PERMISSION_DENIED" in sent and "run_shell(touch:*)" in sent
    answered = rec.of("approval_answered")
    assert answered[0]["by"] == "policy" and answered[0]["decision"] == "deny"


async def test_max_turns_ends_the_run_with_every_call_answered(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    counter = iter(range(100))
    for _ in range(5):
        server.push(
            lambda req: Reply(tool_calls=[ToolUse("list_files", {"pattern": f"*{next(counter)}"})])
        )
    rt = coding_runtime(workspace)
    agent = Agent(client(), rt, max_turns=3)
    async with asyncio.timeout(30):
        result = await agent.run("never stop")
    assert result.subtype == "error_max_turns" and result.is_error
    assert result.num_turns == 3
    assert len(server.requests) == 3
    # The last turn's call has its result in the conversation, so the session can go on.
    assert isinstance(agent.messages[-1], ToolResults)
    server.push(Reply(text="ok, stopping"))
    async with asyncio.timeout(30):
        again = await agent.run("stop now")
    assert again.subtype == "success"
    assert server.problems == []


async def test_a_token_budget_stops_the_run_before_the_next_request(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("list_files", {})], input_tokens=900, output_tokens=200),
        Reply(text="never sent"),
    )
    agent = Agent(client(), coding_runtime(workspace), max_tokens=1000, save=False)
    async with asyncio.timeout(30):
        result = await agent.run("go")
    assert result.subtype == "error_budget"
    assert "1,100 of 1,000 tokens" in result.error
    assert len(server.requests) == 1
    assert result.usage.input_tokens == 900


async def test_a_cost_budget_uses_the_model_prices(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("list_files", {})], input_tokens=1_000_000, output_tokens=0),
        Reply(text="never sent"),
    )
    prices = Prices(input=2.0, output=8.0, cached_input=0.5)
    agent = Agent(client(prices=prices), coding_runtime(workspace), max_cost_usd=1.5, save=False)
    async with asyncio.timeout(30):
        result = await agent.run("go")
    assert result.subtype == "error_budget"
    assert result.cost_usd == pytest.approx(2.0)
    assert len(server.requests) == 1


async def test_the_same_call_with_the_same_result_is_refused_the_third_time(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    same = ToolUse("grep_search", {"pattern": "greet"})
    for _ in range(3):
        server.push(Reply(tool_calls=[same]))
    server.push(Reply(text="ok"))
    agent = Agent(client(), coding_runtime(workspace), save=False)
    rec = Recorder()
    async with asyncio.timeout(30):
        await agent.run("loop", on_event=rec)
    finished = [e["result"] for e in rec.of("tool_call_finished")]
    assert [r["ok"] for r in finished] == [True, True, False]
    assert finished[2]["error"] == ErrorCode.REPEATED_CALL
    assert "3 times in a row" in finished[2]["content"]
    assert server.problems == []


async def test_repeating_a_call_whose_result_changes_is_not_a_loop(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    state = {"n": 0}

    @tool(read_only=True, concurrency_safe=True)
    def poll() -> str:
        """Return a new value on every call."""
        state["n"] += 1
        return f"value {state['n']}"

    for _ in range(4):
        server.push(Reply(tool_calls=[ToolUse("poll", {})]))
    server.push(Reply(text="ok"))
    rt = Runtime(Registry([poll]), root=workspace)
    rec = Recorder()
    async with asyncio.timeout(30):
        await Agent(client(), rt, save=False).run("poll", on_event=rec)
    assert [e["result"]["ok"] for e in rec.of("tool_call_finished")] == [True] * 4


async def test_interrupt_stops_running_tools_and_the_conversation_stays_valid(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    started = asyncio.Event()
    running: list[str] = []

    @tool(read_only=True, concurrency_safe=True)
    async def slow(ctx: ToolContext) -> str:
        """Take a long time."""
        running.append(ctx.call_id)
        if len(running) == 2:
            started.set()
        await asyncio.sleep(30)
        return "finished"

    server.push(Reply(tool_calls=[ToolUse("slow", {}), ToolUse("slow", {}, id="second")]))
    rt = Runtime(Registry([slow]), root=workspace)
    agent = Agent(client(), rt)
    rec = Recorder()

    async def interrupt_when_started() -> None:
        await started.wait()
        assert agent.interrupt()

    async with asyncio.timeout(10):
        result, _ = await asyncio.gather(agent.run("go", on_event=rec), interrupt_when_started())
    assert result.subtype == "interrupted"
    finished = [e["result"] for e in rec.of("tool_call_finished")]
    assert len(finished) == 2
    assert all(r["error"] == "CANCELLED" for r in finished)
    assert (
        "interrupted" in finished[0]["content"] and "do not retry" in finished[0]["content"].lower()
    )
    assert isinstance(agent.messages[-1], ToolResults)
    # The user carries on: the history the model gets is valid.
    server.push(Reply(text="Stopped as you asked."))
    async with asyncio.timeout(10):
        again = await agent.run("ok, stop")
    assert again.subtype == "success"
    assert server.problems == []


async def test_a_refused_key_ends_the_run_with_a_message_not_a_traceback(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Fault(status=401))
    agent = Agent(client(api_key="bad"), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        result = await agent.run("hi")
    assert result.subtype == "error_model"
    assert "API key" in result.error and "HTTP 401" in result.error
    assert len(server.requests) == 1


async def test_rate_limits_are_retried_and_reported(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Fault(status=429, retry_after=0.05), Fault(status=503), Reply(text="hello"))
    rec = Recorder()
    agent = Agent(client(), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        result = await agent.run("hi", on_event=rec)
    assert result.subtype == "success" and result.result == "hello"
    retries = rec.of("model_retry")
    assert [r["attempt"] for r in retries] == [1, 2]
    assert retries[0]["delay"] == pytest.approx(0.05)


async def test_a_stream_cut_before_any_call_is_retried_from_scratch(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Reply(text="This answer will be cut off in the middle", chunk_size=4, cut_after=4))
    server.push(Reply(text="Complete answer."))
    rec = Recorder()
    agent = Agent(client("anthropic"), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        result = await agent.run("hi", on_event=rec)
    assert result.result == "Complete answer."
    assert rec.of("model_retry")[0]["discard"] is True
    assert len(server.requests) == 2


async def test_a_stream_cut_after_a_complete_call_runs_that_call_only(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(
            tool_calls=[
                ToolUse("read_file", {"file_path": "greet.py"}),
                ToolUse("write_file", {"file_path": "half.txt", "content": "x" * 400}),
            ],
            chunk_size=8,
            cut_after=30,
        ),
        Reply(text="recovered"),
    )
    rec = Recorder()
    agent = Agent(client("anthropic"), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        result = await agent.run("go", on_event=rec)
    assert result.subtype == "success"
    started = [e["call"]["name"] for e in rec.of("tool_call_started")]
    assert started == ["read_file"]
    assert not (workspace / "half.txt").exists()
    assert server.problems == []


async def test_broken_arguments_and_unknown_tools_become_results(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(
            tool_calls=[
                ToolUse("read_file", '{"file_path": "greet.py"'),
                ToolUse("reed_file", {"file_path": "greet.py"}),
            ]
        ),
        Reply(text="fixed"),
    )
    agent = Agent(client(), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        result = await agent.run("go")
    assert result.subtype == "success"
    sent = tool_results_sent(server)
    assert "INVALID_ARGS" in sent and "TOOL_NOT_FOUND" in sent and "read_file" in sent
    assert server.problems == []


async def test_notices_from_background_jobs_reach_the_model(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Reply(text="first"))
    rt = coding_runtime(workspace)
    agent = Agent(client(), rt, save=False)
    async with asyncio.timeout(10):
        await agent.run("one")
    rt.session.notify("Background job 1 finished with exit code 0.")
    server.push(Reply(text="second"))
    async with asyncio.timeout(10):
        await agent.run("two")
    assert "Background job 1 finished" in tool_results_sent(server)
    assert any(isinstance(m, UserMessage) and m.kind == "notice" for m in agent.messages)


async def test_events_iterator_yields_the_run_and_ends_with_the_result(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Reply(text="hi there", chunk_size=2))
    agent = Agent(client(), coding_runtime(workspace), save=False)
    seen: list[str] = []
    async with asyncio.timeout(10):
        async for event in agent.events("hello"):
            seen.append(event.type)
    assert seen[0] == "run_started" and seen[-1] == "result"
    assert seen.count("text_delta") == 4


async def test_stream_json_events_have_a_stable_shape(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(
            text="Reading.",
            tool_calls=[ToolUse("read_file", {"file_path": "greet.py"}, id="call_1")],
        ),
        Reply(text="Done."),
    )
    rec = Recorder()
    agent = Agent(client(), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        await agent.run("read it", on_event=rec)
    started = rec.of("tool_call_started")[0]
    assert started == {
        "type": "tool_call_started",
        "call": {"id": "call_1", "name": "read_file", "arguments": '{"file_path":"greet.py"}'},
        "display": {"title": "Read greet.py", "subtitle": "", "status": "running", "group": "read"},
    }
    finished = rec.of("tool_call_finished")[0]
    assert set(finished) == {"type", "result", "display"}
    assert finished["display"]["status"] == "done"
    assert finished["display"]["title"] == "Read greet.py"
    ended = rec.of("turn_ended")[0]
    assert set(ended) == {"type", "turn", "stop", "text", "calls", "usage", "context_tokens"}
    assert ended["stop"] == "tool_calls" and ended["usage"]["requests"] == 1
    result = rec.of("result")[0]
    assert set(result) == {
        "type",
        "subtype",
        "is_error",
        "result",
        "num_turns",
        "session_id",
        "usage",
        "duration_ms",
        "cost_usd",
    }


async def test_every_turn_reuses_one_connection(
    workspace: Path, server: ModelServer, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A response read to its end hands the connection back: against a real API every turn
    # would otherwise pay a new TCP and TLS handshake.
    import socket

    connects: list[object] = []
    real_connect = socket.socket.connect

    def counting(self: socket.socket, address: Any) -> Any:
        connects.append(address)
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", counting)
    for n in range(3):
        server.push(Reply(tool_calls=[ToolUse("list_files", {"pattern": f"*.{n}"})]))
    server.push(Reply(text="done"))
    for provider in ("openai_chat", "anthropic"):
        connects.clear()
        if provider == "anthropic":
            for n in range(3):
                server.push(Reply(tool_calls=[ToolUse("list_files", {"pattern": f"*.{n}"})]))
            server.push(Reply(text="done"))
        agent = Agent(client(provider), coding_runtime(workspace), save=False)
        async with asyncio.timeout(20):
            result = await agent.run("list")
        assert result.usage.requests == 4
        assert len(connects) == 1, provider


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_whole_responses_run_the_same_loop(
    provider: str, workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(text="Reading.", tool_calls=[ToolUse("read_file", {"file_path": "greet.py"})]),
        Reply(text="It greets with Hello."),
    )
    rec = Recorder()
    agent = Agent(client(provider, stream=False), coding_runtime(workspace), save=False)
    async with asyncio.timeout(20):
        result = await agent.run("What does greet say?", on_event=rec)
    assert result.subtype == "success" and result.result == "It greets with Hello."
    assert not any(r.stream for r in server.requests)
    assert [e["result"]["ok"] for e in rec.of("tool_call_finished")] == [True]
    assert "Hello, " in tool_results_sent(server)
    assert server.problems == []


async def test_calls_with_a_repeated_id_get_their_own_results(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    # A buggy server sends the same id twice: each call still runs and is answered once.
    server.push(
        Reply(
            tool_calls=[
                ToolUse("list_files", {"pattern": "*.py"}, id="dup"),
                ToolUse("grep_search", {"pattern": "greet"}, id="dup"),
            ]
        ),
        Reply(text="ok"),
    )
    rec = Recorder()
    agent = Agent(client("anthropic"), coding_runtime(workspace), save=False)
    async with asyncio.timeout(20):
        result = await agent.run("go", on_event=rec)
    assert result.subtype == "success"
    ids = [e["result"]["call_id"] for e in rec.of("tool_call_finished")]
    assert len(ids) == 2 and ids[0] == "dup" and ids[1] != "dup"
    assert all(e["result"]["ok"] for e in rec.of("tool_call_finished"))


async def test_closing_the_event_iterator_early_interrupts_and_settles_the_run(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    import contextlib

    @tool(read_only=True, concurrency_safe=True)
    async def slow() -> str:
        """Take a long time."""
        await asyncio.sleep(30)
        return "finished"

    server.push(Reply(tool_calls=[ToolUse("slow", {})]))
    agent = Agent(client(), Runtime(Registry([slow]), root=workspace), save=False)
    async with asyncio.timeout(10):
        async with contextlib.aclosing(agent.events("go")) as events:
            async for event in events:
                if event.type == "tool_call_started":
                    break
    # The run is over and its call answered: the agent takes the next prompt at once.
    assert isinstance(agent.messages[-1], ToolResults)
    assert agent.messages[-1].results[0].error == ErrorCode.CANCELLED
    server.push(Reply(text="ok"))
    async with asyncio.timeout(10):
        assert (await agent.run("again")).subtype == "success"
    assert server.problems == []


async def test_an_empty_answer_cut_short_is_asked_again_then_an_error(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Reply(text="", stop="max_tokens"), Reply(text="Here it is."))
    agent = Agent(client(), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        result = await agent.run("answer")
    assert (result.subtype, result.result) == ("success", "Here it is.")
    assert "Your last answer was empty" in tool_results_sent(server)
    server.push(Reply(text="", stop="max_tokens"), Reply(text="", stop="max_tokens"))
    async with asyncio.timeout(10):
        result = await agent.run("again")
    assert result.subtype == "error_model" and "no answer twice" in result.error


async def test_deepseek_reasoning_of_the_current_task_goes_back_with_its_calls(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(reasoning="I should list.", tool_calls=[ToolUse("list_files", {})]),
        Reply(text="Listed."),
        Reply(text="Next."),
    )
    agent = Agent(client("openai_chat"), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        await agent.run("list")
    second = server.requests[1].body["messages"]
    with_calls = [m for m in second if m["role"] == "assistant" and m.get("tool_calls")]
    assert with_calls[0]["reasoning_content"] == "I should list."
    async with asyncio.timeout(10):
        await agent.run("next task")
    third = server.requests[2].body["messages"]
    assert not any("reasoning_content" in m for m in third)  # an earlier task: not echoed


async def test_a_cost_budget_fails_closed_on_a_model_without_prices(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Reply(tool_calls=[ToolUse("list_files", {})]), Reply(text="never"))
    agent = Agent(client(), coding_runtime(workspace), max_cost_usd=5.0, save=False)
    events: list[Event] = []
    async with asyncio.timeout(10):
        result = await agent.run("go", on_event=events.append)
    assert result.subtype == "error_budget" and "cannot be checked" in result.error
    assert len(server.requests) == 1
    assert any(e.type == "notice" and "cost budget cannot" in e.to_json()["text"] for e in events)


# -- displays in the event stream, and switching conversations (the terminal's needs) ----------


async def test_tool_events_carry_each_calls_display_in_every_state(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {"file_path": "greet.py", "old_string": "Hello", "new_string": "Hi"},
                    id="e1",
                ),
            ]
        ),
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "greet.py"}, id="r1")]),
        Reply(
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {"file_path": "greet.py", "old_string": "Hello", "new_string": "Hi"},
                    id="e2",
                ),
            ]
        ),
        Reply(text="Done."),
    )
    rec = Recorder()
    asked: list[Question] = []

    async def approver(request: Question) -> Approval:
        asked.append(request)
        return Approval.allow_once()

    agent = Agent(
        client(), coding_runtime(workspace, mode="default"), approver=approver, save=False
    )
    async with asyncio.timeout(10):
        result = await agent.run("edit it", on_event=rec)
    assert result.subtype == "success"
    started = {e["call"]["id"]: e["display"] for e in rec.of("tool_call_started")}
    finished = {e["result"]["call_id"]: e["display"] for e in rec.of("tool_call_finished")}
    assert started["r1"]["status"] == "running"
    assert started["r1"]["group"] == "read"
    # The first edit was refused (not read yet): it shows failed, with the reason in a line.
    assert finished["e1"]["status"] == "failed"
    assert "read" in finished["e1"]["subtitle"].lower()
    assert finished["r1"]["status"] == "done"
    # The approval shows what the edit will do before it runs; the finished call, what it did.
    (waiting,) = [e for e in rec.of("approval_asked") if e["call"]["id"] == "e2"]
    assert waiting["display"]["status"] == "waiting"
    assert "-" in waiting["display"]["body"]["diff"] and "Hi" in waiting["display"]["body"]["diff"]
    assert waiting["display"]["group"] == "edit"
    assert [q.call.id for q in asked if isinstance(q, ApprovalRequest)] == ["e1", "e2"]
    done = finished["e2"]
    assert done["status"] == "done"
    assert (done["body"]["added"], done["body"]["removed"]) == (1, 1)
    assert server.problems == []


async def test_clear_starts_a_new_session_and_forgets_what_was_read(
    workspace: Path, server: ModelServer, client: Any, tmp_path: Path
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "greet.py"})]),
        Reply(text="Read it."),
        Reply(text="Fresh start."),
    )
    rt = coding_runtime(workspace)
    agent = Agent(client(), rt, transcript=tmp_path / "first.jsonl")
    async with asyncio.timeout(10):
        await agent.run("read greet.py")
    first = agent.session_id
    assert rt.session.files  # the read is recorded
    new = agent.clear()
    assert new != first and rt.session.id == new
    assert agent.messages == [] and not rt.session.files
    async with asyncio.timeout(10):
        await agent.run("hello again")
    # The new conversation went to the model alone, and into a transcript of its own.
    assert "read greet.py" not in tool_results_sent(server)
    assert agent.transcript_path is not None and new in agent.transcript_path.name
    await agent.aclose()


async def test_switch_to_carries_a_saved_session_on(
    workspace: Path, server: ModelServer, client: Any, tmp_path: Path
) -> None:
    from handrail.agent import load_session

    server.push(Reply(text="The first answer."), Reply(text="Other."), Reply(text="Carried on."))
    path = tmp_path / "saved.jsonl"
    first = Agent(client(), coding_runtime(workspace), transcript=path)
    async with asyncio.timeout(10):
        await first.run("remember the word kestrel")
    await first.aclose()
    agent = Agent(client(), coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        await agent.run("something else")
    agent.switch_to(load_session(path), own=False)
    async with asyncio.timeout(10):
        await agent.run("what was the word?")
    sent = tool_results_sent(server)
    assert "kestrel" in sent and "something else" not in sent
    assert server.problems == []


async def test_set_model_uses_the_new_model_from_the_next_turn(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(Reply(text="one"), Reply(text="two"))
    first = client("openai_chat")
    agent = Agent(first, coding_runtime(workspace), save=False)
    async with asyncio.timeout(10):
        await agent.run("a")
    previous = agent.set_model(first.with_model("second-model"))
    assert previous is first
    await previous.aclose()
    async with asyncio.timeout(10):
        await agent.run("b")
    await agent.aclose()
    assert [r.body["model"] for r in server.requests] == [first.model, "second-model"]
