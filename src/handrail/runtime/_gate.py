"""The per-session gate that keeps calls which are not concurrency-safe from overlapping.

`call_many` and streaming schedule their own calls, but hosts also call `Runtime.call` once per
tool call, concurrently (every agent framework does): without a gate two edits of one session
would run at the same time. So every call that reaches stage 7 enters its session's gate
first, shared when its tool is concurrency-safe for its input, exclusive otherwise.

The gate is a FIFO-fair reader/writer gate: callers are admitted in arrival order; consecutive
shared callers at the head are admitted together; an exclusive caller waits for everyone ahead
of it, and everyone behind it waits for it (no starvation either way). It is entered after the
permission decision, so a call waiting for approval never holds it, and left when the call's
result is ready. Its state is guarded by a lock and a waiter is woken on its own event loop,
so one session may be used from several threads and loops (two `asyncio.run`s, a framework's
sync entry point beside its async one).

A call made from inside a call that holds a gate (a tool that runs calls of its own session, a
nested executor, a sub-agent sharing the session) does not wait for its holder, which would
wait forever: it enters the holder's own child gate instead, so the holder's nested calls keep
the same rule among themselves. Nested calls of a shared holder are ordered only among their
siblings: an unsafe one may overlap the other shared holders. The "inside" mark is a context
variable: it follows tasks and `asyncio.to_thread`, not a bare `threading.Thread`.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections import deque

from .._context import Session


class Hold:
    """A gate held by a running call, and the child gate its nested calls enter (on demand)."""

    __slots__ = ("child", "gate")

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.child: Gate | None = None


HELD: contextvars.ContextVar[tuple[Hold, ...]] = contextvars.ContextVar(
    "handrail_gates_held", default=()
)
"""The gates held by the calls this task runs inside, innermost last: a call made from inside
enters the child of its session's gate (see the module docstring)."""


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class _Waiter:
    __slots__ = ("fut", "granted", "loop", "shared")

    def __init__(self, shared: bool, loop: asyncio.AbstractEventLoop) -> None:
        self.shared = shared
        self.loop = loop
        self.fut: asyncio.Future[None] = loop.create_future()
        self.granted = False


class Gate:
    """A FIFO-fair reader/writer gate (see the module docstring)."""

    __slots__ = ("_lock", "_readers", "_waiters", "_writer")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._readers = 0
        self._writer = False
        self._waiters: deque[_Waiter] | None = None

    @property
    def busy(self) -> bool:
        """True while some call holds the gate or waits for it."""
        return bool(self._readers or self._writer or self._waiters)

    def try_enter(self, shared: bool) -> bool:
        """Enter at once if nobody is ahead; False means `enter` must wait."""
        lock = self._lock
        lock.acquire()
        # `_take`, inline: this runs for every call.
        if self._waiters or self._writer:
            lock.release()
            return False
        if shared:
            self._readers += 1
        elif self._readers:
            lock.release()
            return False
        else:
            self._writer = True
        lock.release()
        return True

    async def enter(self, shared: bool) -> None:
        """Wait for this caller's turn (cancellation leaves the queue cleanly)."""
        waiter = _Waiter(shared, asyncio.get_running_loop())
        with self._lock:
            if self._take(shared):  # the holder left since `try_enter`
                return
            if self._waiters is None:
                self._waiters = deque()
            self._waiters.append(waiter)
        try:
            await waiter.fut
        except asyncio.CancelledError:
            with self._lock:
                if waiter.granted:  # admitted just as it was cancelled: give the turn back
                    self._release(shared)
                else:
                    try:
                        self._waiters.remove(waiter)
                    except ValueError:
                        pass
                    self._admit()
            raise

    def leave(self, shared: bool) -> None:
        """Leave the gate and admit whoever is next."""
        lock = self._lock
        lock.acquire()
        try:
            if shared:
                self._readers -= 1
            else:
                self._writer = False
            if self._waiters:
                self._admit()
        finally:
            lock.release()

    # -- under the lock ----------------------------------------------------------------------

    def _take(self, shared: bool) -> bool:
        if self._waiters or self._writer:
            return False
        if shared:
            self._readers += 1
            return True
        if self._readers:
            return False
        self._writer = True
        return True

    def _release(self, shared: bool) -> None:
        if shared:
            self._readers -= 1
        else:
            self._writer = False
        if self._waiters:
            self._admit()

    def _admit(self) -> None:
        waiters = self._waiters
        while waiters:
            waiter = waiters[0]
            if self._writer:
                return
            if waiter.shared:
                self._readers += 1
            elif self._readers:
                return
            else:
                self._writer = True
            waiters.popleft()
            waiter.granted = True
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if waiter.loop is running:
                _wake(waiter.fut)
            else:  # a waiter on another thread's loop: woken there
                try:
                    waiter.loop.call_soon_threadsafe(_wake, waiter.fut)
                except RuntimeError:  # its loop is closed: nobody will run in its place
                    waiter.granted = False
                    self._undo(waiter.shared)
                    continue
            if not waiter.shared:
                return

    def _undo(self, shared: bool) -> None:
        if shared:
            self._readers -= 1
        else:
            self._writer = False


def gate_of(session: Session) -> Gate:
    """The session's gate, made on first use."""
    gate: Gate | None = session._gate  # pyright: ignore[reportPrivateUsage]
    if gate is None:
        with _MAKING:
            gate = session._gate  # pyright: ignore[reportPrivateUsage]
            if gate is None:
                gate = session._gate = Gate()  # pyright: ignore[reportPrivateUsage]
    return gate


_MAKING = threading.Lock()


def inner_gate(gate: Gate, held: tuple[Hold, ...]) -> Gate:
    """The gate a call of `gate`'s session enters, given the gates its task runs inside.

    The child of the innermost held gate of that session (a nested call), or `gate` itself.
    """
    found = gate
    for hold in held:
        if hold.gate is found:
            child = hold.child
            if child is None:
                with _MAKING:  # siblings may start on several threads at once
                    child = hold.child
                    if child is None:
                        child = hold.child = Gate()
            found = child
    return found
