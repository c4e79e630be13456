"""The per-session gate that keeps calls which are not concurrency-safe from overlapping.

`call_many` and streaming schedule their own calls, but hosts also call `Runtime.call` once per
tool call, concurrently (every agent framework does): without a gate two edits of one session
would run at the same time. So every call that reaches stage 7 enters its session's gate
first, shared when its tool is concurrency-safe for its input, exclusive otherwise.

The gate is a FIFO-fair reader/writer gate: callers are admitted in arrival order; consecutive
shared callers at the head are admitted together; an exclusive caller waits for everyone ahead
of it, and everyone behind it waits for it (no starvation either way). It is entered after the
permission decision, so a call waiting for approval never holds it, and left when the call's
result is ready.

A call made from inside a call that holds a session's gate (a tool that runs other calls of its
own session, a nested executor) passes through: it is part of the call that holds the gate,
and waiting for its holder would wait forever. One gate belongs to one event loop, like the
session's other running state.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque

from .._context import Session

HELD: contextvars.ContextVar[tuple[Gate, ...]] = contextvars.ContextVar(
    "handrail_gates_held", default=()
)
"""The gates held by the calls this task (or thread) runs inside, innermost last (set by the
runner around a call's run, so a call made from inside it passes its own session's gate)."""


class Gate:
    """A FIFO-fair reader/writer gate (see the module docstring)."""

    __slots__ = ("_readers", "_waiters", "_writer")

    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._waiters: deque[tuple[bool, asyncio.Future[None]]] = deque()

    @property
    def busy(self) -> bool:
        """True while some call holds the gate or waits for it."""
        return bool(self._readers or self._writer or self._waiters)

    def try_enter(self, shared: bool) -> bool:
        """Enter at once if nobody is ahead; False means `enter` must wait."""
        if self._waiters or self._writer:
            return False
        if shared:
            self._readers += 1
            return True
        if self._readers:
            return False
        self._writer = True
        return True

    async def enter(self, shared: bool) -> None:
        """Wait for this caller's turn (cancellation leaves the queue cleanly)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (shared, fut)
        self._waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.leave(shared)  # admitted just as it was cancelled: give the turn back
            else:
                try:
                    self._waiters.remove(entry)
                except ValueError:
                    pass
                self._admit()
            raise

    def leave(self, shared: bool) -> None:
        """Leave the gate and admit whoever is next."""
        if shared:
            self._readers -= 1
        else:
            self._writer = False
        if self._waiters:
            self._admit()

    def _admit(self) -> None:
        waiters = self._waiters
        while waiters:
            shared, fut = waiters[0]
            if fut.done():  # its waiter was cancelled
                waiters.popleft()
                continue
            if self._writer:
                return
            if shared:
                self._readers += 1
            elif self._readers:
                return
            else:
                self._writer = True
            waiters.popleft()
            fut.set_result(None)
            if not shared:
                return


def gate_of(session: Session) -> Gate:
    """The session's gate, made on first use."""
    gate: Gate | None = session._gate  # pyright: ignore[reportPrivateUsage]
    if gate is None:
        gate = session._gate = Gate()  # pyright: ignore[reportPrivateUsage]
    return gate
