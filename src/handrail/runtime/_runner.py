"""Stages 7 and 8: run a permitted call under its timeout and cancellation, then shape it.

`Runner` also builds the `ToolContext` a tool runs with and tracks the running calls, so a
host can cancel one. It is the base of `Pipeline` (`_pipeline.py`), which adds stages 1-6 on
the same object: every stage reads the settings (locale, cwd, roots, hooks, ...) with no
attribute hop in between, and a setting changed on the `Runtime` reaches them all at once.

A call's timeout and a host's `cancel` both cancel the call's task; the `RunState` (or the
cheaper `(task, ctx)` pair when nothing can stop the call yet) says which, so the result is
TIMEOUT or CANCELLED while a cancellation from outside still propagates.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from contextvars import Token
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._context import Session, StateUpdate, ToolContext
from .._contract import (
    Approver,
    ErrorCode,
    ProgressEvent,
    TextPart,
    ToolCall,
    ToolKind,
    ToolResult,
    make_result,
)
from .._tool import Tool
from ..errors import ToolFailure
from ..permissions import Hook, Settings
from ._calls import Plan, Prepared, ProgressFunc, RunState
from ._checkpointing import Checkpointing, Tracked
from ._gate import HELD, Hold, gate_of, inner_gate
from ._hooks import hook_event, run_post_hooks
from ._messages import say
from ._result_content import content_result, fit_parts
from ._results import exc_text, fail, shape
from ._threads import POOL

logger = logging.getLogger("handrail")


class Runner:
    """Runs prepared, permitted calls and keeps track of those running, so they can be stopped.

    Holds what a running tool sees through its `ToolContext` (the `Runtime` settings of the same
    names), and the hooks; the post-tool ones run here.
    """

    def __init__(
        self,
        *,
        hooks: tuple[Hook, ...],
        settings: Settings,
        locale: str,
        cwd: Path,
        read_roots: tuple[Path, ...],
        write_roots: tuple[Path, ...],
        default_timeout: float | None,
        on_progress: ProgressFunc | None,
    ) -> None:
        self.hooks = hooks
        self.settings = settings
        self.locale = locale
        self.cwd = cwd
        self.read_roots = read_roots
        self.write_roots = write_roots
        self.default_timeout = default_timeout
        self.on_progress = on_progress
        self._hook_cache: dict[tuple[str, str], tuple[Hook, ...]] = {}
        # A running call maps to its RunState, or (cheaper, the common case) to (task, ctx);
        # a RunState is made on demand when such a call is cancelled.
        self._running: dict[
            str, RunState | tuple[asyncio.Task[Any] | None, ToolContext | None]
        ] = {}
        self._stops: dict[str, RunState] = {}
        self._queued: set[str] = set()  # calls waiting for the session gate or a command slot
        self.checkpointing: Checkpointing | None = None
        """Takes a checkpoint around each call that can change files (None: no checkpoints)."""
        self.command_slots: asyncio.Semaphore | None = None
        """Slots shared by runtimes (a host's many sessions): a call of an execute tool that is
        not read-only for its input holds one while it runs, so a few heavy commands cannot
        starve the rest. None: no cap."""

    def time_left(self, call_id: str) -> float | None:
        """Seconds until a running call's time limit (negative once past it).

        `math.inf` while it waits to start (its limit has not started), None when it is not
        running or has no limit. For a host that watches its calls from another process.
        """
        if call_id in self._queued:
            return math.inf
        entry = self._running.get(call_id)
        if isinstance(entry, RunState) and entry.ends is not None:
            return entry.ends - time.monotonic()
        return None

    def cancel(self, call_id: str, reason: str) -> bool:
        """Cancel a running call; its result becomes CANCELLED. False if it is not running."""
        entry = self._running.get(call_id)
        if entry is None:
            return False
        if isinstance(entry, RunState):
            state = entry
        else:
            if call_id in self._stops:
                return False
            state = self._stops[call_id] = RunState(task=entry[0], ctx=entry[1])
        if state.task is None or state.reason is not None:
            return False
        state.reason, state.message = "cancel", reason
        if state.ctx is not None:
            state.ctx.cancel()
        state.task.cancel()
        return True

    async def _run(
        self,
        p: Prepared,
        plan: Plan,
        session: Session,
        ctx: ToolContext | None,
        updates: list[StateUpdate],
        notes: list[str],
        state: RunState | None,
    ) -> ToolResult:
        tool, call = p.tool, p.call
        timeout = plan.timeout
        task = asyncio.current_task()
        running = self._running
        timer: asyncio.TimerHandle | None = None
        if state is None and timeout is None:
            mine: RunState | tuple[asyncio.Task[Any] | None, ToolContext | None] = (task, ctx)
        else:
            if state is None:
                state = RunState()
            state.task, state.ctx = task, ctx
            mine = state
        running[call.id] = mine
        # The session's gate: unsafe calls never overlap, even when a host runs many `call`s
        # at once. Waiting for it is not running: the timeout starts once it is entered.
        gate = session._gate or gate_of(session)  # pyright: ignore[reportPrivateUsage]
        if state is not None and state.safe is not None:
            shared = state.safe
        else:
            shared = plan.safe if plan.safe is not None else _safe(tool, p.args)
        entered = False
        slot: asyncio.Semaphore | None = None
        held: Token[tuple[Hold, ...]] | None = None
        keeper = self.checkpointing
        tracker: Tracked | None = None
        try:
            inside = HELD.get()
            if inside:  # a call made from inside a running call: its holder's child gate
                gate = inner_gate(gate, inside)
            if not gate.try_enter(shared):
                self._queued.add(call.id)
                try:
                    await gate.enter(shared)
                finally:
                    self._queued.discard(call.id)
                if ctx is not None and timeout is not None:
                    ctx.deadline = time.monotonic() + timeout
            entered = True
            slots = self.command_slots
            if slots is not None and tool.kind is ToolKind.EXECUTE and not _read_only(tool, p.args):
                # Waiting for a slot is not running either: the time limit starts after it.
                self._queued.add(call.id)
                try:
                    await slots.acquire()
                finally:
                    self._queued.discard(call.id)
                slot = slots
                if ctx is not None and timeout is not None:
                    ctx.deadline = time.monotonic() + timeout
            if keeper is not None and keeper.tracks(tool, p.args, ctx):
                # Inside the gate: no other change overlaps this call's record.
                tracker = await keeper.begin(session, tool, p.args, ctx, call.id)
            if tool.is_async or plan.thread:  # an inline sync tool cannot make calls of its own
                held = HELD.set((*inside, Hold(gate)))
            if timeout is not None and task is not None:
                assert state is not None
                timer = asyncio.get_running_loop().call_later(timeout, _expire, state)
                state.ends = time.monotonic() + timeout
            if tool.is_async:
                value = await tool.run(p.args, ctx)  # pyright: ignore[reportArgumentType]
            elif plan.thread:
                value = await POOL.submit(tool.run, p.args, ctx)
            else:
                value = tool.run(p.args, ctx)  # pyright: ignore[reportArgumentType]
        except asyncio.CancelledError:
            if ctx is not None:
                ctx.cancel()
            if state is None:
                state = self._stops.pop(call.id, None)
            if state is None or state.reason is None or task is None or task.uncancel() > 0:
                raise  # cancelled from outside: cancellation propagates
            return await self._stopped(p, plan, session, state, notes)
        except ToolFailure as exc:
            result = fail(call, tool.name, p.t0, exc.code, exc.message, exc.metadata)
            return await self._post(p, plan, session, result, notes, failed=True)
        except Exception as exc:
            logger.error("tool %s raised", tool.name, exc_info=exc)
            text = say(self.locale, "tool_failed", detail=exc_text(exc))
            result = fail(call, tool.name, p.t0, ErrorCode.EXECUTION_ERROR, text)
            return await self._post(p, plan, session, result, notes, failed=True)
        finally:
            if timer is not None:
                timer.cancel()
            try:
                if tracker is not None:
                    assert keeper is not None
                    # Still inside the gate, so no other change lands in this call's record.
                    await keeper.end(session, tracker, call.id)
            finally:  # a cancel during that wait must not keep the gate or the slot held
                if running.get(call.id) is mine:
                    del running[call.id]
                if slot is not None:
                    slot.release()
                if entered:
                    gate.leave(shared)
                if held is not None:
                    try:
                        HELD.reset(held)
                    except ValueError:  # finalized in another context (an abandoned coroutine)
                        pass
        if state is None and self._stops:
            state = self._stops.pop(call.id, None)
        if state is not None and state.reason is not None and task is not None:
            # The tool swallowed our cancellation and returned anyway: the stop still counts.
            if task.uncancel() > 0:
                raise asyncio.CancelledError
            return await self._stopped(p, plan, session, state, notes)
        if ctx is not None and ctx._updates:  # pyright: ignore[reportPrivateUsage]
            updates.extend(ctx._updates)  # pyright: ignore[reportPrivateUsage]
        # Fast path for the common results (short text, a number); shape() does the rest.
        text: str | None = (
            value if type(value) is str else str(value) if type(value) is int else None
        )
        if text and len(text) <= tool.max_result_chars and tool.output_check is None:
            result = make_result(True, text, call.id, tool.name, time.perf_counter() - p.t0)
        else:
            value = content_result(value, tool, self.locale)
            result = fit_parts(shape(self.locale, value, tool, call, session, p.t0), value)
        if notes or plan.post:
            return await self._post(p, plan, session, result, notes, failed=not result.ok)
        return result

    async def _stopped(
        self, p: Prepared, plan: Plan, session: Session, state: RunState, notes: list[str]
    ) -> ToolResult:
        if state.ctx is not None:
            state.ctx.cancel()
        if state.reason == "timeout":
            seconds = plan.timeout or 0
            unit = say(self.locale, "second" if seconds == 1 else "seconds")
            text = say(self.locale, "timeout", name=p.tool.name, seconds=seconds, unit=unit)
            result = fail(p.call, p.tool.name, p.t0, ErrorCode.TIMEOUT, text)
            return await self._post(p, plan, session, result, notes, failed=True)
        return fail(
            p.call,
            p.tool.name,
            p.t0,
            ErrorCode.CANCELLED,
            state.message or say(self.locale, "cancelled"),
        )

    async def _post(
        self,
        p: Prepared,
        plan: Plan,
        session: Session,
        result: ToolResult,
        notes: list[str],
        *,
        failed: bool,
    ) -> ToolResult:
        event_name = "post_tool_failure" if failed else "post_tool_use"
        hooks = self._hooks_for(event_name, p.tool) if plan.post else ()
        extra = list(notes)
        if hooks:
            cwd = str(self.cwd)
            event = hook_event(event_name, p, session, cwd, result)
            extra.extend(await run_post_hooks(hooks, event, cwd))
        if not extra:
            return result
        note = "\n".join(extra)
        content = result.content + "\n\n" + note
        if result.parts:  # the parts are the full content: the notes go there too
            return replace(result, content=content, parts=(*result.parts, TextPart(text=note)))
        return replace(result, content=content)

    def _context(
        self,
        call: ToolCall,
        tool: Tool,
        session: Session,
        state: RunState | None = None,
        approver: Approver | None = None,
    ) -> ToolContext:
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        return ToolContext(
            call_id=call.id,
            tool_name=tool.name,
            cwd=self.cwd,
            read_roots=self.read_roots,
            write_roots=self.write_roots,
            session=session,
            deadline=time.monotonic() + timeout if timeout is not None else None,
            locale=self.locale,
            progress=state.progress
            if state is not None and state.progress is not None
            else self.emit_progress,
            settings=self.settings.tools.get(tool.name, {}),
            approver=approver,
        )

    def emit_progress(self, event: ProgressEvent) -> None:
        """Hand a progress event to `on_progress`; a callback that raises is logged."""
        if self.on_progress is not None:
            try:
                self.on_progress(event)
            except Exception:
                logger.exception("on_progress callback raised")

    def _hooks_for(self, event: str, tool: Tool) -> tuple[Hook, ...]:
        if not self.hooks:
            return ()
        key = (event, tool.name)
        found = self._hook_cache.get(key)
        if found is None:
            names = (tool.name, *tool.aliases)
            found = tuple(h for h in self.hooks if h.event == event and h.applies_to(names))
            self._hook_cache[key] = found
        return found


def _safe(tool: Tool, args: Any) -> bool:
    try:
        return tool.is_concurrency_safe(args)
    except Exception:  # a flag function that fails: fail closed, run alone
        logger.exception("concurrency_safe of %s raised", tool.name)
        return False


def _read_only(tool: Tool, args: Any) -> bool:
    try:
        return tool.is_read_only(args)
    except Exception:  # fail closed: the call takes a slot
        return False


def _expire(state: RunState) -> None:
    if state.reason is None and state.task is not None:
        state.reason = "timeout"
        if state.ctx is not None:
            state.ctx.cancel()
        state.task.cancel()
