"""The per-session gate: a host's concurrent `Runtime.call`s never overlap two unsafe calls.

Frameworks run one task per tool call and call `rt.call` from each; these tests start calls
the same way and read the order back from the intervals the tools record. Overlap of safe
calls is proven by making them wait for each other (with a time limit), never by timing.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from handrail import (
    Approval,
    ApprovalRequest,
    ErrorCode,
    Hook,
    HookEvent,
    HookResponse,
    Interrupted,
    PermissionMode,
    Registry,
    Runtime,
    Session,
    ToolCall,
    ToolContext,
    tool,
)
from handrail.runtime._gate import Gate, gate_of

Interval = tuple[str, float, float]


async def until(condition: Callable[[], bool]) -> None:
    """Wait (at most 5 s, polling) until `condition` holds."""
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition did not hold within 5 s")


def waiting_at(session: Session) -> int:
    """How many calls wait at the session's gate."""
    gate = gate_of(session)
    return len(gate._waiters or ())  # pyright: ignore[reportPrivateUsage]


def overlaps(a: Interval, b: Interval) -> bool:
    return a[1] < b[2] and b[1] < a[2]


class Recorder:
    """Tools that record when they ran: `write` (unsafe), `read` (safe, waits for a partner)."""

    def __init__(self, partners: int = 2) -> None:
        self.intervals: list[Interval] = []
        self.arrived = 0
        self.partners = partners
        self.together = asyncio.Event()

        @tool(kind="edit")
        async def write(label: str) -> str:
            """Unsafe: not concurrency-safe, not read-only."""
            start = time.monotonic()
            await asyncio.sleep(0.02)
            self.intervals.append((label, start, time.monotonic()))
            return label

        @tool(read_only=True, concurrency_safe=True)
        async def read(label: str) -> str:
            """Safe: waits (at most 5 s) until its partners are running too."""
            start = time.monotonic()
            self.arrived += 1
            if self.arrived >= self.partners:
                self.together.set()
            await asyncio.wait_for(self.together.wait(), 5)
            self.intervals.append((label, start, time.monotonic()))
            return label

        self.write = write
        self.read = read

    def runtime(self) -> Runtime:
        return Runtime(Registry([self.write, self.read]), mode="bypass")

    def interval(self, label: str) -> Interval:
        return next(i for i in self.intervals if i[0] == label)


async def test_unsafe_calls_never_overlap_and_safe_calls_do() -> None:
    rec = Recorder(partners=2)
    rt = rec.runtime()
    results = await asyncio.gather(
        rt.call("write", {"label": "w1"}),
        rt.call("read", {"label": "r1"}),
        rt.call("read", {"label": "r2"}),
        rt.call("write", {"label": "w2"}),
    )
    assert [r.content for r in results] == ["w1", "r1", "r2", "w2"]
    assert all(r.ok for r in results)
    w1, r1, r2, w2 = (rec.interval(x) for x in ("w1", "r1", "r2", "w2"))
    assert overlaps(r1, r2)
    for unsafe in (w1, w2):
        for other in (w1, r1, r2, w2):
            if other is not unsafe:
                assert not overlaps(unsafe, other), (unsafe, other)
    # FIFO: the order of arrival is the order of running.
    assert w1[2] <= r1[1] and r2[2] <= w2[1]


async def test_calls_of_different_sessions_do_not_wait_for_each_other() -> None:
    rec = Recorder()
    rt = rec.runtime()
    started = asyncio.Event()
    release = asyncio.Event()

    @tool(kind="edit")
    async def hold() -> str:
        """Unsafe, holds its session until released."""
        started.set()
        await asyncio.wait_for(release.wait(), 5)
        return "held"

    rt.registry = Registry([rec.write, rec.read, hold])
    holding = asyncio.create_task(rt.call("hold"))
    await asyncio.wait_for(started.wait(), 5)
    other = await asyncio.wait_for(
        rt.call("write", {"label": "w"}, session=Session(mode=PermissionMode.BYPASS)), 5
    )
    assert other.ok  # ran while the first session's unsafe call held its own gate
    release.set()
    assert (await holding).ok


async def test_a_call_waiting_for_approval_holds_nothing_up() -> None:
    rec = Recorder()
    asked = asyncio.Event()
    answer: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()

    async def approver(request: ApprovalRequest) -> Approval:
        asked.set()
        return await answer

    rt = Runtime(Registry([rec.write, rec.read]), approver=approver)  # default mode: write asks
    asking = asyncio.create_task(rt.call("write", {"label": "asks"}))
    await asyncio.wait_for(asked.wait(), 5)
    # While the user thinks, other calls of the session run, unsafe ones included.
    r = await asyncio.wait_for(rt.call("write", {"label": "w"}, approval=Approval.allow_once()), 5)
    assert r.ok
    answer.set_result(Approval.allow_once())
    assert (await asking).ok


async def test_the_timeout_starts_once_the_call_is_let_in() -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    @tool(kind="edit")
    async def hold() -> str:
        """Unsafe, holds the session."""
        started.set()
        await asyncio.wait_for(release.wait(), 5)
        return "held"

    deadlines: list[float] = []

    @tool(kind="edit", timeout=0.5)
    async def quick(ctx: ToolContext) -> str:
        """Unsafe, well within its own timeout once it runs."""
        assert ctx.deadline is not None
        deadlines.append(ctx.deadline)
        return "quick"

    rt = Runtime(Registry([hold, quick]), mode="bypass")
    holding = asyncio.create_task(rt.call("hold"))
    await asyncio.wait_for(started.wait(), 5)
    waiting = asyncio.create_task(rt.call("quick"))
    await asyncio.sleep(0.8)  # longer than quick's timeout, all of it spent at the gate
    assert not waiting.done()
    released_at = time.monotonic()
    release.set()
    assert (await holding).ok
    r = await waiting
    assert r.ok, r.content  # not TIMEOUT: the wait at the gate did not count
    # Its deadline was set when it was let in, after the holder let go.
    assert deadlines[0] - 0.5 >= released_at


async def test_a_call_cancelled_at_the_gate_is_cancelled_and_the_gate_moves_on() -> None:
    release = asyncio.Event()
    started = asyncio.Event()
    ran: list[str] = []

    @tool(kind="edit")
    async def hold() -> str:
        """Unsafe, holds the session."""
        started.set()
        await asyncio.wait_for(release.wait(), 5)
        return "held"

    @tool(kind="edit")
    async def note(label: str) -> str:
        """Unsafe."""
        ran.append(label)
        return label

    rt = Runtime(Registry([hold, note]), mode="bypass")
    holding = asyncio.create_task(rt.call("hold"))
    await asyncio.wait_for(started.wait(), 5)
    by_host = asyncio.create_task(rt.call("note", {"label": "host"}, call_id="h"))
    from_outside = asyncio.create_task(rt.call("note", {"label": "outside"}))
    last = asyncio.create_task(rt.call("note", {"label": "last"}))
    await until(lambda: waiting_at(rt.session) == 3)
    assert rt.cancel("h", "Stopped by the host.") is True
    from_outside.cancel()
    r = await by_host
    assert r.error is ErrorCode.CANCELLED and r.content == "Stopped by the host."
    with pytest.raises(asyncio.CancelledError):
        await from_outside
    release.set()
    assert (await holding).ok
    assert (await asyncio.wait_for(last, 5)).ok
    assert ran == ["last"]


async def test_a_call_inside_a_call_of_the_same_session_does_not_wait_for_its_holder() -> None:
    @tool(kind="edit")
    async def inner() -> str:
        """Unsafe."""
        return "inner"

    rt_box: list[Runtime] = []

    @tool(kind="edit")
    async def outer() -> str:
        """Unsafe, and runs another unsafe call of its own session."""
        r = await asyncio.wait_for(rt_box[0].call("inner"), 5)
        return f"outer({r.content})"

    rt = Runtime(Registry([inner, outer]), mode="bypass")
    rt_box.append(rt)
    r = await asyncio.wait_for(rt.call("outer"), 10)
    assert r.content == "outer(inner)"


async def test_a_batch_and_a_concurrent_call_share_the_gate() -> None:
    rec = Recorder(partners=1)
    rt = rec.runtime()
    batch_calls = [
        ToolCall(id=f"b{i}", name="write", arguments={"label": f"b{i}"}) for i in range(3)
    ]
    batch, single = await asyncio.gather(
        rt.call_many(batch_calls), rt.call("write", {"label": "single"})
    )
    assert all(r.ok for r in batch) and single.ok
    labels = [i[0] for i in rec.intervals]
    assert sorted(labels) == ["b0", "b1", "b2", "single"]
    for a in rec.intervals:
        for b in rec.intervals:
            if a is not b:
                assert not overlaps(a, b), (a, b)


async def test_an_interrupted_call_leaves_the_gate_free() -> None:
    rec = Recorder()
    rt = Runtime(Registry([rec.write, rec.read]))
    asks = await rt.call("write", {"label": "asks"})
    assert isinstance(asks, Interrupted)
    assert rt.session._gate is None or not rt.session._gate.busy  # pyright: ignore[reportPrivateUsage]


# -- the gate itself -------------------------------------------------------------------------


async def test_gate_admits_in_arrival_order_with_readers_together() -> None:
    gate = Gate()
    order: list[str] = []
    assert gate.try_enter(shared=True)  # a reader holds it

    async def enter(label: str, shared: bool) -> None:
        if not gate.try_enter(shared):
            await gate.enter(shared)
        order.append(label)

    w = asyncio.create_task(enter("w", False))
    r1 = asyncio.create_task(enter("r1", True))  # behind the waiting writer: no overtaking
    r2 = asyncio.create_task(enter("r2", True))
    await asyncio.sleep(0)
    assert order == [] and gate.busy
    gate.leave(shared=True)
    await asyncio.wait_for(w, 5)
    assert order == ["w"]
    await asyncio.sleep(0)
    assert order == ["w"]  # readers wait for the writer to leave
    gate.leave(shared=False)
    await asyncio.wait_for(asyncio.gather(r1, r2), 5)
    assert order == ["w", "r1", "r2"]  # admitted together
    gate.leave(shared=True)
    gate.leave(shared=True)
    assert not gate.busy


async def test_gate_waiter_cancelled_leaves_no_trace() -> None:
    gate = Gate()
    assert gate.try_enter(shared=False)
    waiter = asyncio.create_task(gate.enter(shared=False))
    behind = asyncio.create_task(gate.enter(shared=True))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.leave(shared=False)
    await asyncio.wait_for(behind, 5)  # the cancelled writer did not block the reader
    gate.leave(shared=True)
    assert not gate.busy


async def test_gate_admitted_then_cancelled_gives_its_turn_back() -> None:
    gate = Gate()
    assert gate.try_enter(shared=False)
    waiter = asyncio.create_task(gate.enter(shared=False))
    await asyncio.sleep(0)
    gate.leave(shared=False)  # admits the waiter...
    waiter.cancel()  # ...which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not gate.busy
    assert gate.try_enter(shared=False)


def test_the_gate_lives_with_the_session(tmp_path: Path) -> None:
    s = Session()
    a = Runtime(Registry([]), root=tmp_path, session=s)
    b = Runtime(Registry([]), root=tmp_path, session=s)
    assert gate_of(a.session) is gate_of(b.session)


async def test_nested_unsafe_calls_keep_the_rule_among_themselves() -> None:
    rec = Recorder()
    box: list[Runtime] = []

    @tool(kind="edit")
    async def agent_like() -> str:
        """Unsafe, and runs a turn of its own: two unsafe calls at once, as frameworks do."""
        rt = box[0]
        results = await asyncio.wait_for(
            asyncio.gather(rt.call("write", {"label": "n1"}), rt.call("write", {"label": "n2"})),
            5,
        )
        return ",".join(r.content for r in results)

    rt = Runtime(Registry([rec.write, rec.read, agent_like]), mode="bypass")
    box.append(rt)
    r = await asyncio.wait_for(rt.call("agent_like"), 10)
    assert r.content == "n1,n2"
    assert not overlaps(rec.interval("n1"), rec.interval("n2"))


def test_one_session_from_two_threads_each_with_its_own_loop() -> None:
    rec_intervals: list[Interval] = []

    @tool(kind="edit")
    async def slow_write(label: str) -> str:
        """Unsafe; takes a moment."""
        start = time.monotonic()
        await asyncio.sleep(0.05)
        rec_intervals.append((label, start, time.monotonic()))
        return label

    rt = Runtime(Registry([slow_write]), mode="bypass")
    out: dict[int, str] = {}

    def worker(i: int) -> None:
        async def go() -> str:
            results = [await rt.call("slow_write", {"label": f"{i}.{k}"}) for k in range(3)]
            return ",".join(r.content for r in results)

        out[i] = asyncio.run(go())

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads), "a call never got through the gate"
    assert out == {0: "0.0,0.1,0.2", 1: "1.0,1.1,1.2"}
    for a in rec_intervals:
        for b in rec_intervals:
            if a is not b:
                assert not overlaps(a, b), (a, b)


async def test_a_hook_that_makes_a_batch_call_unsafe_makes_it_run_alone() -> None:
    intervals: list[Interval] = []

    class ModeArgs(BaseModel):
        mode: str
        label: str

    def safe_for_reads(args: ModeArgs) -> bool:
        return args.mode == "read"

    @tool(read_only=True, concurrency_safe=safe_for_reads)
    async def touch(mode: str, label: str) -> str:
        """Safe only for reads."""
        start = time.monotonic()
        await asyncio.sleep(0.05)
        intervals.append((label, start, time.monotonic()))
        return label

    def pre(event: HookEvent) -> HookResponse | None:
        if event.tool_input["label"] == "b":
            return HookResponse(updated_input={"mode": "write", "label": "b"})
        return None

    rt = Runtime(Registry([touch]), mode="bypass", hooks=[Hook(event="pre_tool_use", func=pre)])
    calls = [ToolCall(id=x, name="touch", arguments={"mode": "read", "label": x}) for x in "abc"]
    batch = await rt.call_many(calls)
    assert [r.content for r in batch] == ["a", "b", "c"]
    b = next(i for i in intervals if i[0] == "b")
    for other in intervals:
        if other is not b:
            assert not overlaps(b, other), (b, other)
