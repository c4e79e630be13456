"""A remote session's batches: `RemoteStream` and `RemoteBatch`.

`RemoteStream` is the host's streaming executor, driven from here; `RemoteBatch` holds a
batch's results, resumable through the `RemoteRuntime`.

The executor runs in the host, where each tool's input-dependent flags decide the grouping:
`submit`, `close` and `cancel` go to it without waiting, and items come back on the stream,
progress at once and results in request order. If the host is lost, every call not yet
answered gets the loss as its result, in order, so the consumer's loop still ends.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from .._context import Session
from .._contract import Approval, ErrorCode, ProgressEvent, ToolCall, ToolResult
from ..errors import ConfigurationError
from ..runtime import Batch
from . import _failures
from ._channel import END, ITEM, Channel, ChannelClosed

if TYPE_CHECKING:
    from ._client import RemoteRuntime

__all__ = ["RemoteBatch", "RemoteStream"]


class RemoteBatch(Batch):
    """A batch run in a host: results in request order; resume through the `RemoteRuntime`."""

    async def resume(  # pyright: ignore[reportIncompatibleMethodOverride]
        self,
        runtime: RemoteRuntime,
        answers: Mapping[str, Approval],
        *,
        session: Session | None = None,
    ) -> Batch:
        """Continue in the host: answered calls carry on, finished calls keep their results."""
        return await runtime.resume(self, answers)


class RemoteStream:
    """The streaming executor of a remote session: same use as `StreamingExecutor`.

    ```python
    async with rt.stream() as ex:
        ex.submit(call)
        ex.close()
        async for item in ex:   # ProgressEvent at once; ToolResult in request order
            ...
    ```
    """

    def __init__(self, runtime: RemoteRuntime) -> None:
        self._rt = runtime
        self._key = os.urandom(12).hex()
        self._calls: list[ToolCall] = []
        self._ids: set[str] = set()
        self._results: list[ToolResult] = []
        self._closed = False
        self._finished = False
        self._channel: Channel | None = None
        self._rid = 0
        self._queue: asyncio.Queue[tuple[int, Any, Any]] | None = None
        self._final: RemoteBatch | None = None

    async def __aenter__(self) -> RemoteStream:
        rt = self._rt
        if rt.lost is None and rt._link is not None:  # pyright: ignore[reportPrivateUsage]
            try:
                self._channel = await rt._link.connect()  # pyright: ignore[reportPrivateUsage]
                self._rid, self._queue = self._channel.open_stream(
                    "stream", rt.session_id, self._key
                )
            except ChannelClosed:
                self._channel = None
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._forget_calls()
        if self._channel is not None and not self._finished:
            reason = "The call was cancelled because the batch was abandoned."
            self._send("cancel_stream", self._key, None, reason)
            self._send("close_stream", self._key)
            self._channel.forget(self._rid)

    def _send(self, op: str, *args: Any) -> None:
        if self._channel is not None and self._channel.closed is None:
            try:
                self._channel.request(op, *args)
            except ChannelClosed:
                pass  # the stream learns of it from its queue

    def submit(self, call: ToolCall) -> None:
        """Add a call whose arguments are complete; it starts in the host when the rules allow."""
        if self._closed:
            raise ConfigurationError("submit() after close(): this executor takes no more calls")
        if call.id in self._ids:
            raise ConfigurationError(f"duplicate call id {call.id!r} in one batch")
        self._ids.add(call.id)
        self._calls.append(call)
        self._rt._streamed[call.id] = self  # pyright: ignore[reportPrivateUsage]
        self._send("submit", self._key, call)

    def close(self) -> None:
        """No more calls will come."""
        self._closed = True
        self._send("close_stream", self._key)

    def cancel(self, call_id: str | None = None, reason: str = "The call was cancelled.") -> None:
        """Cancel one call (or every unfinished call); their results become CANCELLED."""
        self._send("cancel_stream", self._key, call_id, reason)

    def cancel_one(self, call_id: str, reason: str) -> bool:
        """Cancel one call of this stream that has no result yet; False if there is none."""
        if self._finished or call_id not in {c.id for c in self._calls[len(self._results) :]}:
            return False
        self.cancel(call_id, reason)
        return True

    def _forget_calls(self) -> None:
        streamed = self._rt._streamed  # pyright: ignore[reportPrivateUsage]
        for call in self._calls:
            if streamed.get(call.id) is self:
                del streamed[call.id]

    @property
    def batch(self) -> RemoteBatch:
        """The results so far, in request order (complete once iteration has finished)."""
        if self._final is not None:
            return self._final
        n = len(self._results)
        return RemoteBatch(self._calls[:n], self._results, self._rt.session)

    def __aiter__(self) -> AsyncIterator[ProgressEvent | ToolResult]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ProgressEvent | ToolResult]:
        rt = self._rt
        queue = self._queue
        if queue is None:  # lost before it began: every call answers the same
            for call in self._calls:
                failed = rt._failed(call.id, call.name)  # pyright: ignore[reportPrivateUsage]
                if failed is None:
                    failed = _failures.unavailable(
                        "unreachable", call_id=call.id, tool_name=call.name
                    )
                self._results.append(failed)
                yield failed
            self._finished = True
            return
        link = rt._link  # pyright: ignore[reportPrivateUsage]
        assert link is not None and self._channel is not None
        extend: float | None = None
        while True:
            pending = self._calls[len(self._results) :]
            wait = max((rt._backstop(c.name) for c in pending), default=None)  # pyright: ignore[reportPrivateUsage]
            if extend is not None:
                wait, extend = extend, None
            try:
                if wait is None or not self._closed:
                    status, value, _ = await queue.get()
                else:
                    status, value, _ = await asyncio.wait_for(queue.get(), wait)
            except TimeoutError:
                # Still waiting to start in the host, or within its own limit: wait on.
                left = await link.time_left(self._channel, rt.session_id, pending[0].id)
                if left is not None and left > 0:
                    extend = (wait or 0.0) if math.isinf(left) else left + rt._margin  # pyright: ignore[reportPrivateUsage]
                    continue
                async for r in self._give_up("timeout", wait or 0.0):
                    yield r
                return
            if status == ITEM:
                if isinstance(value, ToolResult):
                    self._results.append(value)
                yield value
            elif status == END:
                self._finished = True
                kind = value[0]
                if kind == "done":
                    calls, results = value[1]
                    rt._apply_state(value[2])  # pyright: ignore[reportPrivateUsage]
                    self._final = RemoteBatch(calls, results, rt.session)
                    return
                rt._set_lost(value[1])  # pyright: ignore[reportPrivateUsage]
                for call in self._calls[len(self._results) :]:
                    r = replace(value[1], call_id=call.id, tool_name=call.name)
                    self._results.append(r)
                    yield r
                return
            elif isinstance(value, ChannelClosed):
                async for r in self._give_up("broken", 0.0, value):
                    yield r
                return
            else:  # the host failed the stream itself (not a tool): the connection is fine
                self._finished = True
                for call in self._calls[len(self._results) :]:
                    r = ToolResult.failure(
                        ErrorCode.EXECUTION_ERROR,
                        f"The session host could not run this call: {value}",
                        metadata={"executed": "unknown"},
                    )
                    r = replace(r, call_id=call.id, tool_name=call.name)
                    self._results.append(r)
                    yield r
                return

    async def _give_up(
        self, why: Literal["timeout", "broken"], seconds: float, detail: Any = None
    ) -> AsyncIterator[ToolResult]:
        rt = self._rt
        link = rt._link  # pyright: ignore[reportPrivateUsage]
        assert link is not None
        self._finished = True
        if why == "timeout":
            self._send("cancel_stream", self._key, None, "The call ran past its deadline.")
        failure = await link.diagnose(
            ChannelClosed(str(detail)) if why == "broken" else None,
            seconds=seconds,
            locale=rt.locale,
        )
        rt._note_failure(failure)  # pyright: ignore[reportPrivateUsage]
        for call in self._calls[len(self._results) :]:
            r = _failures.restamp(failure, call.id, call.name, "unknown", rt.locale)
            self._results.append(r)
            yield r
