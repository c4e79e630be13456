"""Sync tools run on worker threads so they never block the event loop.

A lean pool instead of `asyncio.to_thread`: one queue, threads started on demand, results
handed back with `call_soon_threadsafe`. The thread hop is the dominant cost of calling a small
sync tool, so it is kept to a queue put and one loop wake-up.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

_Item = tuple[
    asyncio.Future[Any],
    asyncio.AbstractEventLoop,
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
]


def _set_result(fut: asyncio.Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exception(fut: asyncio.Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


class WorkerPool:
    """Runs sync callables on daemon threads; `submit` returns an asyncio future."""

    def __init__(self, max_workers: int = 32) -> None:
        self._queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._max = max_workers

    def submit(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run `fn(*args)` on a worker thread with the caller's context variables."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._queue.put((fut, loop, contextvars.copy_context(), fn, args))
        with self._lock:
            if self._idle > 0:
                self._idle -= 1  # reserve an idle worker for this item
                return fut
            if self._threads >= self._max:
                return fut  # all busy: the next worker to finish takes it
            self._threads += 1
        threading.Thread(target=self._work, name="handrail-tool", daemon=True).start()
        return fut

    def _work(self) -> None:
        get = self._queue.get
        while True:
            fut, loop, ctx, fn, args = get()
            try:
                value = ctx.run(fn, *args)
            except BaseException as exc:
                _call_soon(loop, _set_exception, fut, exc)
            else:
                _call_soon(loop, _set_result, fut, value)
            del fut, loop, ctx, fn, args
            with self._lock:
                self._idle += 1


def _call_soon(loop: asyncio.AbstractEventLoop, cb: Callable[..., Any], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(cb, *args)
    except RuntimeError:
        pass  # the loop closed while the tool ran: nobody is waiting for the result


POOL = WorkerPool()
