"""`HostLink`: the client's view of one session host, and how a failed exchange is judged.

Where to reach the host (its Unix socket on the driver's node, TCP elsewhere), one connection
per event loop, its load, and whether it lives. A call that gets no answer is diagnosed here:
a dead host (Ray says so) is `SESSION_LOST` for every session on it; a live host that is
slow or unreachable is `BACKEND_UNAVAILABLE`; a host that answers neither the call nor a ping
through Ray is stuck, and is ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Mapping
from typing import Any

from .._contract import ToolResult
from ..errors import ConfigurationError
from . import _failures, _ray
from ._channel import ERROR, Channel, ChannelClosed

__all__ = ["HostLink"]


class HostLink:
    """The client's view of one host: where to reach it, its load, and whether it lives."""

    def __init__(
        self,
        index: int,
        actor: Any,
        where: Mapping[str, Any],
        secret: bytes,
        *,
        local_node: str | None,
        margin: float,
        grace: float,
        probe_timeout: float,
        lost_after: float,
    ) -> None:
        self.index = index
        self.actor = actor
        self.node_id: str = where["node_id"]
        self.pid: int = where["pid"]
        self.base: str = where["base"]
        tcp = where.get("tcp")
        self.address: tuple[str, int] | str = (
            where["unix"] if self.node_id == local_node or tcp is None else (tcp[0], tcp[1])
        )
        self.sessions = 0
        """Sessions the host holds, as last counted (its own count, kept up as we go)."""
        self.opening = 0
        """Opens on their way to the host."""
        self.dead: ToolResult | None = None
        self.replaced = False
        self.closing = False
        self._secret = secret
        self._margin = margin
        self._grace = grace
        self._probe_timeout = probe_timeout
        self._lost_after = lost_after
        self._channels: dict[asyncio.AbstractEventLoop, Channel] = {}
        self._connecting: dict[asyncio.AbstractEventLoop, asyncio.Task[Channel]] = {}
        self._diagnosis: dict[asyncio.AbstractEventLoop, asyncio.Task[ToolResult]] = {}
        self._watchers: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    # -- connecting --------------------------------------------------------------------------

    async def connect(self) -> Channel:
        """The channel for the running event loop (one connection per loop, made once).

        A caller cancelled while it waits does not cancel the connection others wait for.
        """
        loop = asyncio.get_running_loop()
        channel = self._channels.get(loop)
        if channel is not None and channel.closed is None:
            return channel
        task = self._connecting.get(loop)
        if task is None or task.done():
            task = self._connecting[loop] = loop.create_task(self._connect(loop))
            task.add_done_callback(_retrieved)
        return await asyncio.shield(task)

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> Channel:
        try:
            channel = await Channel.connect(self.address, self._secret, timeout=10.0)
        except OSError as exc:
            raise ChannelClosed(f"could not reach the host: {exc!r}") from None
        finally:
            self._connecting.pop(loop, None)
        self._channels[loop] = channel
        watcher = self._watchers.get(loop)
        if watcher is None or watcher.done():
            self._watchers[loop] = loop.create_task(self._watch())
        return channel

    async def _watch(self) -> None:
        # A call to the host that never returns while it lives: Ray fails it when the host
        # or its node dies, even when no connection closes (a node that vanished), and every
        # call and stream waiting on this host learns at once.
        while self.dead is None and not self.closing:
            try:
                await self.actor.watch.remote()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.closing:
                    return
                if _ray.is_dead(exc):
                    self.mark_dead(_ray.first_line(exc))
                    return
                await asyncio.sleep(0.5)  # unavailable for now (a node that may come back)

    def notify(self, op: str, args: tuple[Any, ...]) -> bool:
        """Send an operation without waiting for its answer; False if not connected."""
        channel = self._channels.get(asyncio.get_running_loop())
        if channel is None or channel.closed is not None:
            return False
        try:
            channel.request(op, *args)
        except Exception:
            return False
        return True

    # -- one operation -----------------------------------------------------------------------

    async def exchange(
        self,
        op: str,
        args: tuple[Any, ...],
        *,
        backstop: float,
        cancel: tuple[str, str, str] | None,
        call_id: str,
        tool_name: str,
        locale: str,
    ) -> tuple[Any, Any] | ToolResult:
        """One operation: `(value, extra)`, or the failure result if the host cannot answer.

        Past `backstop`, a call (`cancel` names it) that still waits to start in the host
        (for its session's earlier calls, or a command slot) is given its own time again;
        one past its limit is cancelled in the host, and then judged by `diagnose`. A
        host-side error (not a tool's: those are results) raises `ConfigurationError`.
        """
        if self.dead is not None:
            return _failures.restamp(self.dead, call_id, tool_name, "no", locale)
        try:
            channel = await self.connect()
            rid, future = channel.send(op, *args)
        except ChannelClosed as exc:
            return await self.diagnose(
                exc, locale=locale, call_id=call_id, tool_name=tool_name, executed="no"
            )
        except Exception as exc:  # an argument pickle cannot carry
            raise ConfigurationError(f"cannot send {op!r} to the session host: {exc}") from exc
        task = asyncio.current_task()
        assert task is not None
        wait = backstop
        while True:
            overdue = _Overdue(task, future)
            timer = channel.loop.call_later(wait, overdue.fire)
            try:
                status, value, extra = await future
                break
            except ChannelClosed as exc:
                return await self.diagnose(
                    exc, locale=locale, call_id=call_id, tool_name=tool_name, executed="unknown"
                )
            except asyncio.CancelledError:
                if not overdue.fired or task.uncancel() > 0:
                    if cancel is not None:  # the caller gave up: the host stops the call too
                        self.notify("cancel", cancel)
                    raise
            finally:
                timer.cancel()
            try:
                future = channel.rewait(rid)
            except ChannelClosed as exc:
                return await self.diagnose(
                    exc, locale=locale, call_id=call_id, tool_name=tool_name, executed="unknown"
                )
            left = await self.time_left(channel, cancel[0], cancel[1]) if cancel else None
            if left is not None and left > 0:
                wait = (backstop if math.isinf(left) else left) + self._margin
                continue
            if cancel is not None:
                self.notify("cancel", cancel)
            return await self._overdue(
                channel, future, backstop, locale=locale, call_id=call_id, tool_name=tool_name
            )
        if status == ERROR:
            raise ConfigurationError(f"the session host refused {op!r}: {value}")
        return value, extra

    async def time_left(self, channel: Channel, sid: str, call_id: str) -> float | None:
        """Seconds until a call's limit in the host (`math.inf` while it waits to start).

        None when the host does not say (the call is not running, or has no limit).
        """
        try:
            found = channel.request("time_left", sid, call_id)
            done, _ = await asyncio.wait((found,), timeout=self._grace)
            if not done:
                found.cancel()
                return None
            status, value, _ = found.result()
        except ChannelClosed:
            return None
        return value if status != ERROR and isinstance(value, float | int) else None

    async def _overdue(
        self,
        channel: Channel,
        future: asyncio.Future[tuple[int, Any, Any]],
        backstop: float,
        *,
        locale: str,
        call_id: str,
        tool_name: str,
    ) -> tuple[Any, Any] | ToolResult:
        # Past the deadline, and the host was asked to cancel: its answer (CANCELLED, most
        # likely) may still come within the grace period.
        try:
            done, _ = await asyncio.wait((future,), timeout=self._grace)
            if done:
                status, value, extra = future.result()
                if status == ERROR:
                    raise ConfigurationError(f"the session host failed: {value}")
                return value, extra
            future.cancel()
        except ChannelClosed as exc:
            return await self.diagnose(
                exc, locale=locale, call_id=call_id, tool_name=tool_name, executed="unknown"
            )
        return await self.diagnose(
            None,
            seconds=backstop,
            locale=locale,
            call_id=call_id,
            tool_name=tool_name,
            executed="unknown",
        )

    # -- judging a failure -------------------------------------------------------------------

    async def diagnose(
        self,
        exc: ChannelClosed | None,
        *,
        seconds: float = 0.0,
        locale: str = "en",
        call_id: str = "",
        tool_name: str = "",
        executed: _failures.Executed = "unknown",
    ) -> ToolResult:
        """Why the host did not answer, as the result for the call.

        Dead: `SESSION_LOST`. Alive but unreachable or slow: `BACKEND_UNAVAILABLE`. A host
        that answers neither a call nor pings through Ray for `lost_after` seconds is stuck:
        it is ended, and its sessions are lost.
        """
        loop = asyncio.get_running_loop()
        task = self._diagnosis.get(loop)
        if task is None or task.done():
            task = self._diagnosis[loop] = loop.create_task(self._diagnose(exc, seconds))
        found = await asyncio.shield(task)
        return _failures.restamp(found, call_id, tool_name, executed, locale)

    async def _diagnose(self, exc: ChannelClosed | None, seconds: float) -> ToolResult:
        if self.dead is not None:
            return self.dead
        if self.closing:
            return _failures.lost("closed", executed="unknown")
        if exc is not None:  # the connection broke: the next call makes a new one
            channel = self._channels.pop(asyncio.get_running_loop(), None)
            if channel is not None:
                channel.fail(exc)
        give_up = time.monotonic() + self._lost_after
        said = str(exc) if exc is not None else ""
        while True:
            remaining = give_up - time.monotonic()
            state, detail = await _ray.probe(
                self.actor, max(0.1, min(self._probe_timeout, remaining))
            )
            if self.dead is not None:  # the watcher saw it first
                return self.dead
            if state == "dead":
                return self.mark_dead(detail)
            if state == "alive":
                if exc is None:
                    return _failures.unavailable("timeout", seconds=seconds, host=self.index)
                return _failures.unavailable("unreachable", detail=said, host=self.index)
            if remaining <= 0:
                break
            await asyncio.sleep(0.2)
        if exc is None:  # no answer to the call, nor to any ping: the host is stuck
            _ray.kill(self.actor)
            return self.mark_dead(f"the host stopped answering and was ended ({detail})")
        return _failures.unavailable("unreachable", detail=f"{said}; {detail}", host=self.index)

    def mark_dead(self, detail: str) -> ToolResult:
        """The host is gone: every session on it answers this from now on."""
        if self.dead is None:
            self.dead = _failures.lost(
                "host_died",
                executed="unknown",
                detail=detail,
                host=self.index,
                node_id=self.node_id,
            )
            for channel in list(self._channels.values()):
                channel.fail(ChannelClosed(f"the host died: {detail}"))
        return self.dead

    async def aclose(self) -> None:
        """Close this process's connections to the host and stop watching it."""
        self.closing = True
        for watcher in list(self._watchers.values()):
            watcher.cancel()
        for channel in list(self._channels.values()):
            with contextlib.suppress(Exception):
                await channel.aclose()
        self._channels.clear()
        self._watchers.clear()


class _Overdue:
    """Fires at a call's deadline: interrupts the waiting task unless the answer is in."""

    __slots__ = ("fired", "future", "task")

    def __init__(self, task: asyncio.Task[Any], future: asyncio.Future[Any]) -> None:
        self.task = task
        self.future = future
        self.fired = False

    def fire(self) -> None:
        if not self.future.done():
            self.fired = True
            self.task.cancel()


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()  # its waiters re-raise it; nobody waiting is not an error
