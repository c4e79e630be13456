"""What every framework adapter shares: sessions, results as plain data, approvals, a sync portal.

No framework is imported here. Each adapter module (`pydantic_ai`, `openai_agents`,
`langchain`) imports its own framework and builds on these.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from .._context import Session
from .._contract import ApprovalRequest, ErrorCode, Interrupted, ToolResult
from ..runtime import Runtime

T = TypeVar("T")

SessionArg = Session | Callable[[Any], Session] | None
"""Which handrail `Session` a framework call runs in: one session for every call, a function of
the framework's own context (pydantic-ai's `RunContext`, openai-agents' `RunContextWrapper`,
LangChain's `ToolRuntime`) that picks one per conversation, or None for the runtime's own."""

RETRY_CODES = frozenset({ErrorCode.INVALID_ARGS, ErrorCode.TOOL_NOT_FOUND})
"""Failures the model fixes by calling again differently (a framework's "retry" channel)."""


def session_for(rt: Runtime, session: SessionArg, host: Any) -> Session:
    """The session a call made with the framework context `host` runs in."""
    if session is None:
        return rt.session
    if isinstance(session, Session):
        return session
    return session(host)


def result_artifact(result: ToolResult) -> dict[str, Any]:
    """A `ToolResult` as plain JSON data (no dataclasses), for a framework to keep.

    Checkpointers and run states serialize what a tool returns beside its text (LangGraph's
    msgpack refuses dataclasses), so this is what travels: the outcome, the error code, the
    summary, the diff, the validation issues and the denial. `metadata` stays out: it is the
    tool's own data and need not be JSON.
    """
    data: dict[str, Any] = {
        "ok": result.ok,
        "error": str(result.error) if result.error is not None else None,
        "summary": result.summary,
        "tool_name": result.tool_name,
        "call_id": result.call_id,
        "duration": round(result.duration, 6),
    }
    if result.diff is not None:
        data["diff"] = result.diff
    if result.issues:
        data["issues"] = [
            {"path": i.path, "expected": i.expected, "received": i.received, "message": i.message}
            for i in result.issues
        ]
    if result.denial is not None:
        d = result.denial
        data["denial"] = {"reason": d.reason, "source": d.source, "rule": d.rule}
    if result.structured is not None:
        data["structured"] = dict(result.structured)
    return data


def cannot_ask(result: Interrupted) -> str:
    """What the model reads when a call asks where the framework can no longer pause for it.

    The runtime's own "wait for the user's decision" would promise an answer that never comes.
    """
    reason = result.approval.reason.rstrip(".") if result.approval is not None else ""
    why = f" ({reason})" if reason else ""
    return (
        f"Not run: `{result.tool_name}` needs the user's approval{why}, which cannot be asked "
        "for at this point. Ask the user in your reply, or do something else."
    )


def approval_payload(request: ApprovalRequest) -> dict[str, Any]:
    """What a framework's human-in-the-loop pause carries: plain JSON data about the ask."""
    args = request.call.arguments
    return {
        "tool_call_id": request.call.id,
        "name": request.tool_name,
        "args": dict(args) if isinstance(args, Mapping) else args,
        "reason": request.reason,
        "source": request.source,
        "suggested_rules": list(request.suggested_rules),
        "allow_rules": list(request.allow_rules),
    }


class Portal:
    """One event loop on a daemon thread, for a runtime's sync entry points.

    A runtime's sessions, background jobs and gates live on one event loop; a framework's sync
    path (LangChain's `invoke`) must not make a new loop per call (`asyncio.run` would), so
    every sync call of one runtime runs on that runtime's portal loop. The loop stops when the
    runtime is garbage collected, or at `close`.
    """

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="handrail-portal", daemon=True
        )
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The portal's event loop."""
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the portal's loop and wait for its result (from any other thread)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("Portal.run called from the portal's own loop (it would deadlock)")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    def close(self) -> None:
        """Stop the loop and its thread (calls still running are abandoned)."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()


_PORTALS: weakref.WeakKeyDictionary[Runtime, Portal] = weakref.WeakKeyDictionary()
_PORTALS_LOCK = threading.Lock()


def portal_for(rt: Runtime) -> Portal:
    """The runtime's portal, started on first use and stopped when the runtime is collected."""
    with _PORTALS_LOCK:
        portal = _PORTALS.get(rt)
        if portal is None:
            portal = _PORTALS[rt] = Portal()
            weakref.finalize(rt, portal.close)
        return portal
