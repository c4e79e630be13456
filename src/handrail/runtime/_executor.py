"""The scheduler behind `call_many` and streaming: parallel where safe, results in order.

Rules: a call starts when every earlier call has started and either nothing is running, or it
is concurrency-safe for its input and everything running is too (at most `max_concurrency` at
once). So consecutive safe calls run together and any other call runs alone, in request order.
Each call moves queued -> executing -> completed -> yielded; progress events are delivered at
once, results strictly in request order. When a shell-kind call fails inside a concurrent group,
its shell-kind siblings in that group are cancelled. A call that needs approval (and has no
approver) halts the batch: calls already running finish, later calls wait, and the `Batch` can
be resumed.

The executor drives a `Pipeline` (`prepare`, then `proceed` or `resume_call` in a task per
call); it knows the `Runtime` only as the owner of that pipeline and of `max_concurrency`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, overload

from .._context import Session, StateUpdate
from .._contract import (
    Approval,
    Approver,
    ErrorCode,
    Interrupted,
    ProgressEvent,
    ToolCall,
    ToolKind,
    ToolResult,
)
from ..errors import ConfigurationError
from ._calls import Prepared, RunState
from ._messages import say
from ._pipeline import Pipeline
from ._results import fail

State = Literal["queued", "executing", "completed", "yielded"]

_DONE = object()


class PipelineOwner(Protocol):
    """What an executor runs calls through: a `Runtime`, as the executor sees it."""

    @property
    def pipeline(self) -> Pipeline:
        """The stages every call passes."""
        ...

    @property
    def max_concurrency(self) -> int:
        """Most calls running at once."""
        ...


@dataclass(slots=True, kw_only=True)
class _Entry:
    index: int
    call: ToolCall
    prepared: Prepared | None = None
    safe: bool = False
    shell: bool = False
    group: int = 0
    state: State = "queued"
    result: ToolResult | None = None
    updates: list[StateUpdate] = field(default_factory=list[StateUpdate])
    task: asyncio.Task[None] | None = None
    run_state: RunState | None = None
    resume_with: Approval | None = None
    interrupted: Interrupted | None = None
    started: bool = False
    """The call's task has begun to run (a task cancelled before that never runs at all)."""


class Batch(Sequence[ToolResult]):
    """The results of a batch, one per call, in request order.

    If some calls wait for approval, `interrupted` lists them (their results are `Interrupted`);
    answer with `Runtime.resume(batch, {call_id: Approval})`.
    """

    def __init__(
        self, calls: Sequence[ToolCall], results: Sequence[ToolResult], session: Session
    ) -> None:
        self.calls = tuple(calls)
        self.results = tuple(results)
        self.session = session

    @overload
    def __getitem__(self, index: int) -> ToolResult: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ToolResult]: ...
    def __getitem__(self, index: int | slice) -> ToolResult | Sequence[ToolResult]:
        return self.results[index]

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self) -> Iterator[ToolResult]:
        return iter(self.results)

    def __repr__(self) -> str:
        return f"Batch({list(self.results)!r})"

    @property
    def interrupted(self) -> tuple[Interrupted, ...]:
        """Calls waiting for their own approval."""
        return tuple(
            r for r in self.results if isinstance(r, Interrupted) and r.approval is not None
        )

    @property
    def complete(self) -> bool:
        """True when every call has a final result (nothing waits for approval)."""
        return not any(isinstance(r, Interrupted) for r in self.results)

    async def resume(
        self,
        runtime: PipelineOwner,
        answers: Mapping[str, Approval],
        *,
        session: Session | None = None,
    ) -> Batch:
        """Continue: answered calls carry on, finished calls keep their results."""
        ids = {c.id for c in self.calls}
        unknown = [k for k in answers if k not in ids]
        if unknown:
            raise ConfigurationError(f"no call with id {unknown[0]!r} in this batch")
        ex = StreamingExecutor(runtime, session or self.session)
        async with ex:
            for call, result in zip(self.calls, self.results, strict=True):
                if not isinstance(result, Interrupted):
                    ex.seed_completed(call, result)
                elif result.approval is not None:
                    answer = answers.get(call.id)
                    if answer is None:
                        ex.seed_completed(call, result, halt=True)
                    else:
                        ex.seed_answer(call, result, answer)
                else:
                    ex.submit(call)
            ex.close()
            async for _ in ex:
                pass
        return ex.batch


class StreamingExecutor:
    """Accepts calls one by one and runs each as soon as the scheduling rules allow.

    Use as an async context manager; iterate to receive `ProgressEvent`s (at once) and
    `ToolResult`s (in request order). Leaving the block without closing cancels what is left.
    """

    def __init__(
        self, runtime: PipelineOwner, session: Session, approver: Approver | None = None
    ) -> None:
        self._owner = runtime
        self._pipeline = runtime.pipeline
        self._session = session
        self._approver = approver
        self._entries: list[_Entry] = []
        self._by_id: dict[str, _Entry] = {}
        self._out: asyncio.Queue[Any] = asyncio.Queue()
        self._closed = False
        self._next_start = 0
        self._next_yield = 0
        self._halted_at: int | None = None
        self._group = 0
        self._tg: asyncio.TaskGroup | None = None
        self._finished = False

    # -- context management ------------------------------------------------------------------

    async def __aenter__(self) -> StreamingExecutor:
        self._tg = asyncio.TaskGroup()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None or not self._closed:
            for e in self._entries:
                if e.task is not None and not e.task.done():
                    self._cancel_entry(e, "The call was cancelled because the batch was abandoned.")
        assert self._tg is not None
        # Children never raise (every outcome is a result), so the task group only has to wait
        # for them; the body's own exception, if any, propagates unchanged rather than wrapped
        # in an ExceptionGroup.
        await self._tg.__aexit__(None, None, None)

    # -- feeding -----------------------------------------------------------------------------

    def submit(self, call: ToolCall) -> None:
        """Add a call whose arguments are complete; it starts as soon as the rules allow."""
        if self._closed:
            raise ConfigurationError("submit() after close(): this executor takes no more calls")
        if self._tg is None:
            raise ConfigurationError("use the executor as `async with rt.stream() as ex:`")
        entry = self._add(call)
        prepared = self._pipeline.prepare(call, self._session)
        if isinstance(prepared, ToolResult):
            entry.result, entry.state = prepared, "completed"
            entry.safe = True  # it runs nothing, so it never blocks a sibling
        else:
            entry.prepared = prepared
            entry.safe = prepared.tool.is_concurrency_safe(prepared.args)
            entry.shell = prepared.tool.kind is ToolKind.EXECUTE
        self._assign_group(entry)
        self._pump()

    def seed_completed(self, call: ToolCall, result: ToolResult, *, halt: bool = False) -> None:
        """Resume support: a call that already has its result (it is not run again)."""
        entry = self._add(call)
        entry.result, entry.state, entry.safe = result, "completed", True
        self._assign_group(entry)
        if halt and self._halted_at is None:
            self._halted_at = entry.index
        self._pump()

    def seed_answer(self, call: ToolCall, interrupted: Interrupted, answer: Approval) -> None:
        """Resume support: a call that waited for approval and now has its answer."""
        entry = self._add(call)
        pending = self._pipeline.pending.get(call.id)
        if pending is None:
            raise ConfigurationError(
                f"call {call.id!r} is not waiting for approval (already answered?)"
            )
        entry.prepared = pending.prepared
        entry.resume_with, entry.interrupted = answer, interrupted
        entry.safe = pending.prepared.tool.is_concurrency_safe(pending.prepared.args)
        entry.shell = pending.prepared.tool.kind is ToolKind.EXECUTE
        self._assign_group(entry)
        self._pump()

    def close(self) -> None:
        """No more calls will come (the model finished its turn)."""
        self._closed = True
        self._pump()

    def status(self, call_id: str) -> State:
        """Where a call is: queued, executing, completed, or yielded (handed to the consumer)."""
        return self._by_id[call_id].state

    def cancel(self, call_id: str | None = None, reason: str = "The call was cancelled.") -> None:
        """Cancel one call (or every unfinished call); their results become CANCELLED."""
        for e in self._entries:
            if call_id is not None and e.call.id != call_id:
                continue
            if e.state == "queued":
                e.result, e.state = self._cancelled(e, reason), "completed"
            elif e.state == "executing":
                self._cancel_entry(e, reason)
        self._pump()

    @property
    def batch(self) -> Batch:
        """The results so far, in request order (complete once iteration has finished)."""
        results = [e.result for e in self._entries if e.result is not None]
        return Batch([e.call for e in self._entries][: len(results)], results, self._session)

    # -- iteration ---------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ProgressEvent | ToolResult]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ProgressEvent | ToolResult]:
        while True:
            item = await self._out.get()
            if item is _DONE:
                return
            if isinstance(item, _Entry):
                item.state = "yielded"
                assert item.result is not None
                yield item.result
            else:
                yield item

    # -- scheduling --------------------------------------------------------------------------

    def _add(self, call: ToolCall) -> _Entry:
        if call.id in self._by_id:
            raise ConfigurationError(f"duplicate call id {call.id!r} in one batch")
        entry = _Entry(index=len(self._entries), call=call)
        self._entries.append(entry)
        self._by_id[call.id] = entry
        return entry

    def _assign_group(self, entry: _Entry) -> None:
        prev = self._entries[entry.index - 1] if entry.index > 0 else None
        if prev is None or not (prev.safe and entry.safe):
            self._group += 1
        entry.group = self._group

    def _pump(self) -> None:
        self._start_ready()
        self._yield_ready()

    def _start_ready(self) -> None:
        executing = [e for e in self._entries if e.state == "executing"]
        while self._next_start < len(self._entries):
            e = self._entries[self._next_start]
            if self._halted_at is not None and e.index > self._halted_at:
                break
            if e.state != "queued":
                self._next_start += 1
                continue
            if executing and not (e.safe and all(x.safe for x in executing)):
                break
            if len(executing) >= self._owner.max_concurrency:
                break
            if not e.safe and any(x.state == "executing" for x in self._entries[: e.index]):
                break
            if e.safe and any(
                not x.safe and x.state == "executing" for x in self._entries[: e.index]
            ):
                break
            self._start(e)
            executing.append(e)
            self._next_start += 1

    def _start(self, e: _Entry) -> None:
        assert self._tg is not None and e.prepared is not None
        e.prepared.t0 = time.perf_counter()  # duration counts from the start, not the queue
        e.state = "executing"
        e.run_state = RunState(safe=e.safe)
        e.task = self._tg.create_task(self._run(e))

    async def _run(self, e: _Entry) -> None:
        assert e.prepared is not None and e.run_state is not None
        e.started = True
        pipeline = self._pipeline
        try:
            if e.resume_with is not None and e.interrupted is not None:
                result = await pipeline.resume_call(
                    e.interrupted, e.resume_with, e.updates, e.run_state
                )
            else:
                result = await pipeline.proceed(
                    e.prepared,
                    self._session,
                    e.updates,
                    state=e.run_state,
                    progress=self._progress,
                    approver=self._approver,
                )
        except asyncio.CancelledError:
            # Cancelled before the tool itself started (during hooks or approval).
            task = asyncio.current_task()
            if task is not None and task.cancelling() == 0:
                # Raised from inside the call (a host cancelled the future its approver was
                # waiting on), not a cancel of this task: the call still gets its one result,
                # or the batch would wait for it forever.
                result = self._cancelled(e, say(pipeline.locale, "cancelled"))
            elif e.run_state.reason is None or task is None or task.uncancel() > 0:
                raise
            else:
                result = self._cancelled(
                    e, e.run_state.message or say(pipeline.locale, "cancelled")
                )
        except Exception as exc:  # a bug in handrail itself: still one result per call
            result = fail(
                e.call,
                e.prepared.tool.name,
                e.prepared.t0,
                ErrorCode.EXECUTION_ERROR,
                f"internal error: {exc}",
            )
        e.result, e.state = result, "completed"
        if isinstance(result, Interrupted) and self._halted_at is None:
            self._halted_at = e.index
        if e.shell and not result.ok and result.error is not ErrorCode.CANCELLED:
            self._cancel_shell_siblings(e)
        self._pump()

    def _cancel_shell_siblings(self, failed: _Entry) -> None:
        group = [x for x in self._entries if x.group == failed.group and x is not failed]
        if not group:
            return
        reason = say(self._pipeline.locale, "sibling_failed", failed=failed.call.id)
        for x in group:
            if not x.shell:
                continue
            if x.state == "queued":
                x.result, x.state = self._cancelled(x, reason), "completed"
            elif x.state == "executing":
                self._cancel_entry(x, reason)

    def _cancel_entry(self, e: _Entry, reason: str) -> None:
        if e.run_state is not None and e.run_state.reason is None:
            e.run_state.reason, e.run_state.message = "cancel", reason
            if e.run_state.ctx is not None:
                e.run_state.ctx.cancel()
        if e.task is not None and not e.task.done():
            e.task.cancel()
            if not e.started:
                # Cancelled before the event loop first ran it: its body (which would record
                # the cancellation) never runs, so the result is recorded here.
                e.result, e.state = self._cancelled(e, reason), "completed"

    def _cancelled(self, e: _Entry, reason: str) -> ToolResult:
        name = e.prepared.tool.name if e.prepared is not None else e.call.name
        t0 = e.prepared.t0 if e.prepared is not None else time.perf_counter()
        return ToolResult(
            ok=False,
            content=reason,
            error=ErrorCode.CANCELLED,
            summary=f"{name}: cancelled",
            duration=time.perf_counter() - t0,
            call_id=e.call.id,
            tool_name=name,
        )

    def _yield_ready(self) -> None:
        self._drain()
        if not self._closed or self._finished:
            return
        running = any(x.state == "executing" for x in self._entries)
        if self._halted_at is not None and not running:
            self._block_rest()
            self._drain()
        if self._next_yield == len(self._entries):
            self._finished = True
            self._out.put_nowait(_DONE)

    def _drain(self) -> None:
        while self._next_yield < len(self._entries):
            e = self._entries[self._next_yield]
            if e.state != "completed":
                break
            assert e.result is not None
            for update in e.updates:
                update(self._session)
            self._out.put_nowait(e)
            self._next_yield += 1

    def _block_rest(self) -> None:
        """After a halt, calls that never started wait behind the interrupted call."""
        assert self._halted_at is not None
        blocker = self._entries[self._halted_at].call.id
        for e in self._entries[self._halted_at + 1 :]:
            if e.state != "queued":
                continue
            name = e.prepared.tool.name if e.prepared is not None else e.call.name
            e.result = Interrupted(
                ok=False,
                content=say(self._pipeline.locale, "waiting_behind", blocker=blocker),
                error=ErrorCode.INTERRUPTED,
                summary=f"{name}: waiting",
                call_id=e.call.id,
                tool_name=name,
            )
            e.state = "completed"

    def _progress(self, event: ProgressEvent) -> None:
        self._out.put_nowait(event)
        self._pipeline.emit_progress(event)
