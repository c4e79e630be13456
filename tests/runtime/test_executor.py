"""Batches and streaming: parallel where safe, results in request order, interrupts and resume."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from handrail import (
    Approval,
    ConfigurationError,
    ErrorCode,
    Interrupted,
    ProgressEvent,
    Registry,
    Runtime,
    Tool,
    ToolCall,
    ToolContext,
    ToolKind,
    ToolResult,
    tool,
)


class Tracker:
    """Records what ran and how many ran at once."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.events: list[str] = []

    async def work(self, label: str, seconds: float) -> None:
        self.running += 1
        self.peak = max(self.peak, self.running)
        self.events.append(f"start {label}")
        try:
            await asyncio.sleep(seconds)
        finally:
            self.running -= 1
            self.events.append(f"end {label}")


def make_tools(tr: Tracker) -> list[Tool]:
    @tool(read_only=True, concurrency_safe=True)
    async def read(label: str, seconds: float = 0.05) -> str:
        """A concurrency-safe read."""
        await tr.work(label, seconds)
        return f"read {label}"

    @tool(read_only=True)
    async def write(label: str, seconds: float = 0.05) -> str:
        """Not concurrency-safe (read_only so it needs no approval)."""
        await tr.work(label, seconds)
        return f"wrote {label}"

    return [read, write]


def call(i: str, name: str, **args: Any) -> ToolCall:
    return ToolCall(id=i, name=name, arguments=args)


async def test_safe_calls_run_together_results_in_order() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    # Later calls finish first; results still come back in request order.
    calls = [call(str(i), "read", label=str(i), seconds=0.05 * (10 - i)) for i in range(10)]
    batch = await rt.call_many(calls)
    assert [r.content for r in batch] == [f"read {i}" for i in range(10)]
    assert [r.call_id for r in batch] == [str(i) for i in range(10)]
    assert tr.peak == 10


async def test_max_concurrency_is_respected() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)), max_concurrency=3)
    batch = await rt.call_many([call(str(i), "read", label=str(i), seconds=0.02) for i in range(8)])
    assert all(r.ok for r in batch)
    assert tr.peak == 3


async def test_unsafe_call_runs_alone_and_keeps_order() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    batch = await rt.call_many(
        [
            call("1", "read", label="a"),
            call("2", "read", label="b"),
            call("3", "write", label="w"),
            call("4", "read", label="c"),
        ]
    )
    assert [r.content for r in batch] == ["read a", "read b", "wrote w", "read c"]
    ev = tr.events
    # the write starts after both reads ended, and the last read starts after the write ended
    assert ev.index("start w") > max(ev.index("end a"), ev.index("end b"))
    assert ev.index("start c") > ev.index("end w")


async def test_concurrency_safety_can_depend_on_the_input() -> None:
    tr = Tracker()

    @tool(read_only=True, concurrency_safe=lambda args: args.label.startswith("safe"))
    async def maybe(label: str) -> str:
        """Safe only for some inputs."""
        await tr.work(label, 0.03)
        return label

    rt = Runtime(Registry([maybe]))
    await rt.call_many(
        [
            call("1", "maybe", label="safe1"),
            call("2", "maybe", label="safe2"),
            call("3", "maybe", label="x"),
        ]
    )
    ev = tr.events
    assert ev.index("start safe2") < ev.index("end safe1")  # ran together
    assert ev.index("start x") > ev.index("end safe2")  # ran alone


async def test_invalid_and_unknown_calls_get_results_in_place() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    batch = await rt.call_many(
        [
            call("1", "read", label="a"),
            call("2", "nope"),
            ToolCall(id="3", name="read", arguments="{bad"),
        ]
    )
    assert [r.error for r in batch] == [None, ErrorCode.TOOL_NOT_FOUND, ErrorCode.INVALID_ARGS]
    assert "line 1" in batch[2].content


def shell_tools(tr: Tracker) -> list[Tool]:
    @tool(kind=ToolKind.EXECUTE, read_only=True, concurrency_safe=True)
    async def sh(label: str, fail_after: float | None = None, seconds: float = 5.0) -> str:
        """A shell-like tool."""
        if fail_after is not None:
            await asyncio.sleep(fail_after)
            raise RuntimeError("exit status 1")
        await tr.work(label, seconds)
        return "finished"

    @tool(read_only=True, concurrency_safe=True)
    async def look(seconds: float = 0.2) -> str:
        """Not a shell tool."""
        await asyncio.sleep(seconds)
        return "looked"

    return [sh, look]


async def test_failed_shell_call_cancels_its_shell_siblings() -> None:
    tr = Tracker()
    rt = Runtime(Registry(shell_tools(tr)))
    batch = await rt.call_many(
        [
            call("1", "sh", label="slow"),
            call("2", "sh", label="bad", fail_after=0.05),
            call("3", "look"),
        ]
    )
    assert batch[1].error is ErrorCode.EXECUTION_ERROR
    assert batch[0].error is ErrorCode.CANCELLED
    assert "`2`" in batch[0].content
    assert batch[2].ok  # not a shell call: it keeps running
    assert "end slow" in tr.events  # the cancelled tool was really stopped


async def test_shell_failure_outside_a_group_cancels_nothing() -> None:
    @tool(kind=ToolKind.EXECUTE, read_only=True)
    async def sh_alone(ok: bool) -> str:
        """Not concurrency-safe: runs alone."""
        if not ok:
            raise RuntimeError("failed")
        return "fine"

    rt = Runtime(Registry([sh_alone]))
    batch = await rt.call_many([call("1", "sh_alone", ok=False), call("2", "sh_alone", ok=True)])
    assert [r.ok for r in batch] == [False, True]


def approval_tools(runs: dict[str, int]) -> list[Tool]:
    @tool(read_only=True, concurrency_safe=True)
    async def read(label: str) -> str:
        """Read."""
        runs[label] = runs.get(label, 0) + 1
        return f"read {label}"

    @tool
    async def save(label: str) -> str:
        """Changes state: asks in the default mode."""
        runs[label] = runs.get(label, 0) + 1
        return f"saved {label}"

    return [read, save]


async def test_interrupted_batch_keeps_finished_results_on_resume() -> None:
    runs: dict[str, int] = {}
    rt = Runtime(Registry(approval_tools(runs)))
    batch = await rt.call_many(
        [call("1", "read", label="a"), call("2", "save", label="s"), call("3", "read", label="b")]
    )
    assert not batch.complete
    assert isinstance(batch[1], Interrupted)
    assert batch[1].approval is not None
    assert batch[1].approval.tool_name == "save"
    assert isinstance(batch[2], Interrupted)
    assert batch[2].approval is None  # waits behind call 2
    assert "`2`" in batch[2].content
    assert [i.call_id for i in batch.interrupted] == ["2"]
    assert runs == {"a": 1}

    done = await rt.resume(batch, {"2": Approval.allow_once()})
    assert done.complete
    assert [r.content for r in done] == ["read a", "saved s", "read b"]
    assert runs == {"a": 1, "s": 1, "b": 1}  # the finished read was not run again


async def test_denied_in_batch_then_rest_runs() -> None:
    runs: dict[str, int] = {}
    rt = Runtime(Registry(approval_tools(runs)))
    batch = await rt.call_many([call("1", "save", label="s"), call("2", "read", label="b")])
    done = await rt.resume(batch, {"1": Approval.deny("Not now.")})
    assert done[0].error is ErrorCode.PERMISSION_DENIED
    assert "Not now" in done[0].content
    assert done[1].content == "read b"
    assert "s" not in runs


async def test_unanswered_interrupt_stays_interrupted() -> None:
    runs: dict[str, int] = {}
    rt = Runtime(Registry(approval_tools(runs)))
    batch = await rt.call_many(
        [call("1", "save", label="x"), call("2", "save", label="y"), call("3", "read", label="z")]
    )
    # Only the first waits for its own approval; the others wait behind it.
    assert [i.call_id for i in batch.interrupted] == ["1"]
    step = await rt.resume(batch, {"1": Approval.allow_once()})
    assert step[0].content == "saved x"
    assert [i.call_id for i in step.interrupted] == ["2"]
    final = await rt.resume(step, {"2": Approval.allow_once()})
    assert [r.content for r in final] == ["saved x", "saved y", "read z"]


async def test_resume_rejects_unknown_ids_and_double_answers() -> None:
    runs: dict[str, int] = {}
    rt = Runtime(Registry(approval_tools(runs)))
    batch = await rt.call_many([call("1", "save", label="x")])
    with pytest.raises(ConfigurationError):
        await rt.resume(batch, {"nope": Approval.allow_once()})
    await rt.resume(batch, {"1": Approval.allow_once()})
    with pytest.raises(ConfigurationError):
        await rt.resume(batch, {"1": Approval.allow_once()})
    assert runs == {"x": 1}


async def test_approver_answers_inline_in_a_batch() -> None:
    runs: dict[str, int] = {}
    asked: list[str] = []

    async def approver(request: Any) -> Approval:
        asked.append(request.call.id)
        return Approval.allow_once()

    rt = Runtime(Registry(approval_tools(runs)), approver=approver)
    batch = await rt.call_many([call("1", "save", label="x"), call("2", "read", label="y")])
    assert batch.complete
    assert asked == ["1"]
    assert [r.content for r in batch] == ["saved x", "read y"]


async def test_an_approver_whose_answer_is_cancelled_still_settles_its_call() -> None:
    # A terminal host cancels the future its approver waits on (the user pressed Ctrl-C at
    # the question): the call ends CANCELLED and the batch completes instead of hanging.
    runs: dict[str, int] = {}
    answers: list[asyncio.Future[Approval]] = []
    asked = asyncio.Event()

    async def approver(request: Any) -> Approval:
        answer: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        answers.append(answer)
        asked.set()
        return await answer

    rt = Runtime(Registry(approval_tools(runs)), approver=approver)
    pending = asyncio.ensure_future(
        rt.call_many([call("1", "read", label="a"), call("2", "save", label="s")])
    )
    async with asyncio.timeout(5):
        await asyncio.wait_for(asked.wait(), 5)
        answers[0].cancel()
        batch = await pending
    assert batch.complete
    assert batch[0].ok
    assert batch[1].error is ErrorCode.CANCELLED
    assert runs == {"a": 1}  # the unanswered save never ran


async def test_a_call_cancelled_before_its_task_first_ran_still_gets_a_result() -> None:
    # A host interrupting right after the model emitted a call (Esc a moment too early): the
    # call's task exists but has not run yet. The stream must still end, with CANCELLED.
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    results: list[Any] = []
    async with asyncio.timeout(5), rt.stream() as ex:
        ex.submit(call("1", "read", label="late", seconds=5))
        ex.close()
        ex.cancel("1", "stopped by the user")
        async for item in ex:
            results.append(item)
    (result,) = [r for r in results if not isinstance(r, ProgressEvent)]
    assert result.error is ErrorCode.CANCELLED
    assert result.content == "stopped by the user"
    assert "start late" not in tr.events


async def test_duplicate_call_ids_are_refused() -> None:
    rt = Runtime(Registry(make_tools(Tracker())))
    with pytest.raises(ConfigurationError):
        await rt.call_many([call("1", "read", label="a"), call("1", "read", label="b")])


# -- streaming ---------------------------------------------------------------------------


async def test_streaming_starts_calls_before_the_stream_ends() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    seen: list[str] = []
    async with rt.stream() as ex:
        ex.submit(call("1", "read", label="first", seconds=0.01))
        assert ex.status("1") == "executing"  # started at once, before close()
        await asyncio.sleep(0.1)
        assert "end first" in tr.events  # finished while the "model" still talks
        assert ex.status("1") == "completed"
        ex.submit(call("2", "read", label="second", seconds=0.01))
        ex.close()
        async for item in ex:
            if isinstance(item, ToolResult):
                seen.append(item.content)
        assert ex.status("1") == "yielded"
    assert seen == ["read first", "read second"]


async def test_streaming_queues_an_unsafe_call_behind_running_ones() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    async with rt.stream() as ex:
        ex.submit(call("1", "read", label="r", seconds=0.1))
        ex.submit(call("2", "write", label="w", seconds=0.01))
        assert ex.status("2") == "queued"
        ex.close()
        results = [item async for item in ex if isinstance(item, ToolResult)]
    assert [r.content for r in results] == ["read r", "wrote w"]


async def test_progress_is_delivered_before_earlier_results() -> None:
    gate = asyncio.Event()

    @tool(read_only=True, concurrency_safe=True)
    async def first() -> str:
        """Waits for the gate."""
        await gate.wait()
        return "first"

    @tool(read_only=True, concurrency_safe=True)
    async def second(ctx: ToolContext) -> str:
        """Reports progress, then opens the gate."""
        ctx.progress("working")
        await asyncio.sleep(0.01)
        gate.set()
        return "second"

    rt = Runtime(Registry([first, second]))
    order: list[str] = []
    async with rt.stream() as ex:
        ex.submit(call("1", "first"))
        ex.submit(call("2", "second"))
        ex.close()
        async for item in ex:
            if isinstance(item, ProgressEvent):
                order.append(f"progress {item.call_id}")
            else:
                order.append(f"result {item.call_id}")
    assert order == ["progress 2", "result 1", "result 2"]


async def test_submit_after_close_is_an_error() -> None:
    rt = Runtime(Registry(make_tools(Tracker())))
    async with rt.stream() as ex:
        ex.close()
        with pytest.raises(ConfigurationError):
            ex.submit(call("1", "read", label="a"))
        async for _ in ex:
            pass


async def test_abandoning_the_executor_cancels_running_calls() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    ex = rt.stream()
    async with ex:
        ex.submit(call("1", "read", label="long", seconds=30))
        await asyncio.sleep(0.02)
    # left the block without close(): the running call was stopped, not leaked
    assert tr.running == 0
    assert ex.batch[0].error is ErrorCode.CANCELLED


async def test_cancel_one_streamed_call() -> None:
    tr = Tracker()
    rt = Runtime(Registry(make_tools(tr)))
    async with rt.stream() as ex:
        ex.submit(call("1", "read", label="long", seconds=30))
        ex.submit(call("2", "read", label="short", seconds=0.01))
        await asyncio.sleep(0.05)
        ex.cancel("1", "Stopped by the user.")
        ex.close()
        results = [i async for i in ex if isinstance(i, ToolResult)]
    assert (results[0].error, results[0].content) == (ErrorCode.CANCELLED, "Stopped by the user.")
    assert results[1].ok


async def test_state_updates_apply_in_request_order_in_parallel() -> None:
    def make(label: str, delay: float) -> Callable[..., Any]:
        async def fn(ctx: ToolContext) -> str:
            await asyncio.sleep(delay)
            ctx.update_state(lambda s: s.data.setdefault("order", []).append(label))
            return label

        fn.__name__ = label
        fn.__doc__ = "Records its label."
        return fn

    tools = [
        tool(read_only=True, concurrency_safe=True)(make("slow", 0.08)),
        tool(read_only=True, concurrency_safe=True)(make("fast", 0.0)),
    ]
    rt = Runtime(Registry(tools))
    await rt.call_many([call("1", "slow"), call("2", "fast")])
    assert rt.session.data["order"] == ["slow", "fast"]
