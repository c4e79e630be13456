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
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._contract import ToolResult
from ..errors import ConfigurationError
from . import _failures, _ray
from ._wire import ERROR, Channel, ChannelClosed

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
        self.dead: ToolResult | None = None
        self.replaced = False
        self.closing = False
        self._secret = secret
        self._grace = grace
        self._probe_timeout = probe_timeout
        self._lost_after = lost_after
        self._channels: dict[asyncio.AbstractEventLoop, Channel] = {}
        self._connecting: dict[asyncio.AbstractEventLoop, asyncio.Future[Channel]] = {}
        self._diagnosis: dict[asyncio.AbstractEventLoop, asyncio.Task[ToolResult]] = {}

    async def connect(self) -> Channel:
        """The channel for the running event loop (one connection per loop, made once)."""
        loop = asyncio.get_running_loop()
        channel = self._channels.get(loop)
        if channel is not None and channel.closed is None:
            return channel
        pending = self._connecting.get(loop)
        if pending is None:
            pending = self._connecting[loop] = loop.create_future()
            try:
                channel = await Channel.connect(self.address, self._secret, timeout=10.0)
            except BaseException as exc:
                pending.set_exception(exc)
                pending.exception()  # retrieved: the waiters re-raise it
                raise
            finally:
                self._connecting.pop(loop, None)
            self._channels[loop] = channel
            pending.set_result(channel)
            return channel
        return await asyncio.shield(pending)

    def notify(self, op: str, args: tuple[Any, ...]) -> bool:
        """Send an operation without waiting for its answer; False if not connected."""
        channel = self._channels.get(asyncio.get_running_loop())
        if channel is None or channel.closed is not None:
            return False
        channel.request(op, *args)
        return True

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

        A host-side error (not a tool's: those are results) raises `ConfigurationError`.
        """
        if self.dead is not None:
            return _renamed(self.dead, call_id, tool_name, "no")
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
        overdue = _Overdue(task, future)
        timer = channel.loop.call_later(backstop, overdue.fire)
        try:
            status, value, extra = await future
        except ChannelClosed as exc:
            return await self.diagnose(
                exc, locale=locale, call_id=call_id, tool_name=tool_name, executed="unknown"
            )
        except asyncio.CancelledError:
            if cancel is not None:  # the caller gave up, or the deadline passed: stop it there
                with contextlib.suppress(Exception):
                    self.notify("cancel", cancel)
            if not overdue.fired or task.uncancel() > 0:
                raise
            return await self._overdue(
                channel, rid, backstop, locale=locale, call_id=call_id, tool_name=tool_name
            )
        finally:
            timer.cancel()
        if status == ERROR:
            raise ConfigurationError(f"the session host refused {op!r}: {value}")
        return value, extra

    async def _overdue(
        self,
        channel: Channel,
        rid: int,
        backstop: float,
        *,
        locale: str,
        call_id: str,
        tool_name: str,
    ) -> tuple[Any, Any] | ToolResult:
        # Past the deadline, and the host was asked to cancel: its answer (CANCELLED, most
        # likely) may still come within the grace period.
        try:
            future = channel.rewait(rid)
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
        that answers neither a call nor a ping through Ray is stuck: it is ended, and its
        sessions are lost.
        """
        loop = asyncio.get_running_loop()
        task = self._diagnosis.get(loop)
        if task is None or task.done():
            task = self._diagnosis[loop] = loop.create_task(self._diagnose(exc, seconds, locale))
        found = await asyncio.shield(task)
        return _renamed(found, call_id, tool_name, executed)

    async def _diagnose(self, exc: ChannelClosed | None, seconds: float, locale: str) -> ToolResult:
        if self.dead is not None:
            return self.dead
        if self.closing:
            return _failures.lost("closed", locale=locale, executed="unknown")
        if exc is None:  # the call ran past its backstop
            state, detail = await _ray.probe(self.actor, self._probe_timeout)
            if state == "alive":
                return _failures.unavailable(
                    "timeout", seconds=seconds, locale=locale, executed="unknown", host=self.index
                )
            if state == "unknown":
                _ray.kill(self.actor)
                detail = f"the host stopped answering and was ended ({detail})"
            return self.mark_dead(detail, locale)
        # The connection broke: a dead host closes it at once; Ray confirms the death.
        self._channels.pop(loop := asyncio.get_running_loop(), None)
        del loop
        give_up = time.monotonic() + self._lost_after
        detail = str(exc)
        while True:
            remaining = give_up - time.monotonic()
            state, said = await _ray.probe(
                self.actor, max(0.1, min(self._probe_timeout, remaining))
            )
            if state == "dead":
                return self.mark_dead(said, locale)
            if state == "alive":
                return _failures.unavailable(
                    "unreachable", detail=detail, locale=locale, executed="unknown", host=self.index
                )
            if remaining <= 0:
                return _failures.unavailable(
                    "unreachable", detail=f"{detail}; {said}", locale=locale, host=self.index
                )
            await asyncio.sleep(0.1)

    def mark_dead(self, detail: str, locale: str = "en") -> ToolResult:
        """The host is gone: every session on it answers this from now on."""
        if self.dead is None:
            self.dead = _failures.lost(
                "host_died",
                executed="unknown",
                detail=detail,
                locale=locale,
                host=self.index,
                node_id=self.node_id,
            )
            for channel in self._channels.values():
                channel.closed = channel.closed or ChannelClosed("the host died")
        return self.dead

    async def aclose(self) -> None:
        """Close this process's connections to the host."""
        for channel in list(self._channels.values()):
            with contextlib.suppress(Exception):
                await channel.aclose()
        self._channels.clear()


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


def _renamed(
    result: ToolResult, call_id: str, tool_name: str, executed: _failures.Executed
) -> ToolResult:
    meta = {**result.metadata, "executed": executed}
    return replace(result, call_id=call_id, tool_name=tool_name, metadata=meta)
