"""The client side: `RemoteRuntime`, one session on a host, with the surface of `Runtime`.

Every call ends as a `ToolResult`. A dead host or node is `SESSION_LOST` (the session is
marked lost and every later call answers the same at once); a host that cannot take or finish
a call is `BACKEND_UNAVAILABLE`. Only calls of tools that are read-only and concurrency-safe
whatever their input are ever sent twice, and only after `BACKEND_UNAVAILABLE` with
`executed: "no"`.

Checkpoints are kept in the host (`keeps_checkpoints`); `checkpoints`, `restore_plan` and
`restore` run there and answer the same plain data as `Runtime`'s. They are a person's (or a
driver's) operations, not calls: a lost session or a failing host raises `ConfigurationError`,
an unknown checkpoint `KeyError`.

Deadlines: each call is awaited for the tool's own time limit plus a margin (the host stops the
tool at its limit; the margin covers the trip). Past that, the client asks the host to cancel
the call (its result becomes CANCELLED) and waits a grace period; a host that answers neither
the call nor a ping through Ray is stuck and is ended, so nothing waits forever.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from .._context import PermissionMode, Session
from .._contract import (
    Approval,
    ErrorCode,
    Interrupted,
    Preflight,
    ToolCall,
    ToolKind,
    ToolResult,
)
from .._registry import Registry
from .._tool import Tool
from ..errors import ConfigurationError
from ..runtime import Batch
from ..sandbox import Checkpoint, Restored, RestorePlan
from . import _failures
from ._host import CheckpointRefusal, ToolSpec
from ._stream import RemoteBatch, RemoteStream

if TYPE_CHECKING:
    from ._link import HostLink

__all__ = ["RemoteRuntime", "stand_in"]

DEFAULT_BACKSTOP = 3600.0
"""Seconds a call with no time limit of its own may take before the client steps in."""
RESTORE_BACKSTOP = 600.0
"""Seconds a restore (or its plan, which may look at every file) may take in the host."""


def _never_run_here(args: Any) -> Any:
    raise ConfigurationError("a remote session's tools run in its host, not here")


def _undecided(args: Any) -> bool:
    return False  # decided in the host; here, fail closed


def stand_in(spec: ToolSpec) -> Tool:
    """A local tool with the remote one's name, schema, notes and flags; it cannot run.

    For provider formats and tool lists.
    """
    return Tool.from_json_schema(
        spec.name,
        spec.description,
        spec.parameters,
        _never_run_here,
        aliases=spec.aliases,
        usage=spec.usage,
        kind=ToolKind(spec.kind),
        read_only=_undecided if spec.read_only is None else spec.read_only,
        concurrency_safe=_undecided if spec.concurrency_safe is None else spec.concurrency_safe,
        destructive=True if spec.destructive is None else spec.destructive,
        timeout=spec.timeout,
        providers=spec.providers,
        deferred=spec.deferred,
        output_schema=spec.output_schema,
    )


class RemoteRuntime:
    """One session in a session host, used like a `Runtime` (made by `SessionPool.open`).

    Differences from `Runtime`: one session per object (no `session=` arguments); `tools()`
    and `usage_notes()` come from stand-ins built from the host's tool data, kept in step
    with the session's mode and activated tools; `take_notices()` is a coroutine; an inline
    `approver` cannot cross processes, so calls that need approval end as `Interrupted` and
    `resume` (or `call(..., approval=...)`) answers them in the host; `restore` cannot ask
    either, so files changed outside the session are overwritten only with
    `overwrite_outside=True` (look at `restore_plan` first).
    """

    def __init__(
        self,
        *,
        link: HostLink | None,
        session_id: str,
        info: Mapping[str, Any] | None,
        margin: float,
        on_close: Callable[[RemoteRuntime], None] | None = None,
        failure: ToolResult | None = None,
    ) -> None:
        self._link = link
        self.session_id = session_id
        """The session's id (the same in the host)."""
        info = info or {}
        self.root: str = info.get("root", "")
        """The workspace root, a path on the host's node."""
        self.locale: str = info.get("locale", "en")
        self.default_timeout: float | None = info.get("default_timeout")
        self.keeps_checkpoints: bool = bool(info.get("checkpoints", False))
        """Does the host keep this session's checkpoints (`open(checkpoints=False)`: no)?"""
        specs: list[ToolSpec] = list(info.get("tools", ()))
        # The search over deferred tools is the registry's own: the local one offers the same.
        self.registry = Registry([stand_in(s) for s in specs if s.name != "tool_search"])
        """Stand-ins of the session's tools (for provider formats; they do not run)."""
        self._specs = {s.name: s for s in specs}
        for s in specs:
            for alias in s.aliases:
                self._specs.setdefault(alias, s)
        self.session = Session(id=session_id)
        """A copy of the session's mode and activated tools (the real one is in the host)."""
        self._apply_state(info.get("state"))
        self._margin = margin
        self._on_close = on_close
        self._ids = itertools.count(1)
        self._running: set[str] = set()
        self._lost: ToolResult | None = failure
        self._closed = False
        self._released = False
        self._streamed: dict[str, RemoteStream] = {}

    # -- state -------------------------------------------------------------------------------

    @property
    def host(self) -> int | None:
        """The index of the host holding the session."""
        return self._link.index if self._link is not None else None

    @property
    def node_id(self) -> str | None:
        """The Ray node the session runs on."""
        return self._link.node_id if self._link is not None else None

    @property
    def lost(self) -> ToolResult | None:
        """Why the session can no longer run calls, or None while it works.

        `SESSION_LOST` once its host died or it ended; `BACKEND_UNAVAILABLE` from an `open`
        that found no room.
        """
        if self._lost is None and self._link is not None and self._link.dead is not None:
            self._set_lost(self._link.dead)
        return self._lost

    def _set_lost(self, result: ToolResult) -> None:
        # The first loss is the session's answer from now on; its slot in the pool is free.
        if self._lost is None:
            self._lost = result
        if not self._released:
            self._released = True
            if self._on_close is not None:
                self._on_close(self)

    def _apply_state(self, state: Any) -> None:
        if state:
            mode, activated = state
            self.session.mode = PermissionMode(mode)
            self.session.activated = list(activated)

    def _failed(self, call_id: str, name: str) -> ToolResult | None:
        lost = self.lost
        if lost is None:
            return None
        meta = {**lost.metadata, "executed": "no"}
        return replace(lost, call_id=call_id, tool_name=name, metadata=meta)

    def _backstop(self, name: str) -> float:
        spec = self._specs.get(name)
        limit = spec.timeout if spec is not None and spec.timeout is not None else None
        if limit is None:
            limit = self.default_timeout
        return (limit if limit is not None else DEFAULT_BACKSTOP) + self._margin

    # -- the Runtime surface -----------------------------------------------------------------

    def tools(self, *, provider: str | None = None) -> list[Tool]:
        """The tools to show the model now (stand-ins; see `Registry.list`)."""
        return self.registry.list(provider=provider, session=self.session)

    def usage_notes(self, *, provider: str | None = None) -> str:
        """Usage notes of the tools shown now, for the system prompt."""
        return self.registry.usage_notes(provider=provider, session=self.session)

    async def call(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] = "{}",
        *,
        call_id: str | None = None,
        approval: Approval | None = None,
    ) -> ToolResult:
        """Run one call in the host; always a `ToolResult` (see `Runtime.call`)."""
        cid = call_id or f"call_{next(self._ids)}"
        failed = self._failed(cid, name)
        if failed is not None:
            return failed
        if isinstance(arguments, bytes):
            arguments = arguments.decode("utf-8", "replace")
        args = (self.session_id, name, arguments, cid, approval)
        result = await self._exchange("call", args, cid, name)
        if (
            result.error is ErrorCode.BACKEND_UNAVAILABLE
            and result.metadata.get("executed") == "no"
            and self._retry_safe(name)
            and self.lost is None
        ):
            result = await self._exchange("call", args, cid, name)
        return result

    def _retry_safe(self, name: str) -> bool:
        spec = self._specs.get(name)
        return spec is not None and spec.read_only is True and spec.concurrency_safe is True

    async def _exchange(self, op: str, args: tuple[Any, ...], cid: str, name: str) -> ToolResult:
        assert self._link is not None
        self._running.add(cid)
        try:
            outcome = await self._link.exchange(
                op,
                args,
                backstop=self._backstop(name),
                cancel=(self.session_id, cid, "The call ran past its deadline."),
                call_id=cid,
                tool_name=name,
                locale=self.locale,
            )
        except ConfigurationError as exc:  # the host failed the operation, not the tool
            failed = ToolResult.failure(
                ErrorCode.EXECUTION_ERROR,
                f"The session host could not run this call: {exc}",
                summary="host error",
                metadata={"executed": "unknown"},
            )
            return replace(failed, call_id=cid, tool_name=name)
        finally:
            self._running.discard(cid)
        return self._settle(outcome)

    def _settle(self, outcome: tuple[Any, Any] | ToolResult) -> Any:
        # An exchange's answer: the session's new state applied, a loss remembered.
        if isinstance(outcome, ToolResult):
            return self._note_failure(outcome)
        value, extra = outcome
        self._apply_state(extra)
        if isinstance(value, ToolResult) and value.error is ErrorCode.SESSION_LOST:
            self._set_lost(value)
        return value

    def _note_failure(self, result: ToolResult) -> ToolResult:
        if result.error is ErrorCode.SESSION_LOST:
            self._set_lost(result)
        return result

    async def check(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] = "{}",
        *,
        call_id: str = "check",
    ) -> Preflight:
        """Would this call run, ask, or be refused? Nothing runs (see `Runtime.check`)."""
        if isinstance(arguments, bytes):
            arguments = arguments.decode("utf-8", "replace")
        call = ToolCall(id=call_id, name=name, arguments=arguments)
        failed = self._failed(call_id, name)
        if failed is not None:
            return Preflight(verdict="refuse", call=call, tool_name=name, refusal=failed)
        outcome = await self._control("check", (self.session_id, name, arguments, call_id))
        if isinstance(outcome, ToolResult):
            return Preflight(verdict="refuse", call=call, tool_name=name, refusal=outcome)
        return outcome

    async def _control(self, op: str, args: tuple[Any, ...], *, seconds: float = 60.0) -> Any:
        # A session operation that is not a call; a host-side failure is a result here too.
        assert self._link is not None
        try:
            outcome = await self._link.exchange(
                op,
                args,
                backstop=self._margin + seconds,
                cancel=None,
                call_id="",
                tool_name="",
                locale=self.locale,
            )
        except ConfigurationError as exc:
            return ToolResult.failure(
                ErrorCode.EXECUTION_ERROR,
                f"The session host could not do this: {exc}",
                metadata={"executed": "unknown"},
            )
        return self._settle(outcome)

    async def call_many(self, calls: Sequence[ToolCall]) -> RemoteBatch:
        """Run a batch in the host (its scheduler groups the calls); results in request order.

        It runs as a stream: each call can be cancelled by id, and each has its own deadline.
        """
        failed = self._fail_all(calls)
        if failed is not None:
            return failed
        async with self.stream() as ex:
            for c in calls:
                ex.submit(c)
            ex.close()
            async for _ in ex:
                pass
        return ex.batch

    def _fail_all(self, calls: Sequence[ToolCall]) -> RemoteBatch | None:
        if self.lost is None:
            return None
        results = [self._failed(c.id, c.name) for c in calls]
        return RemoteBatch(calls, [r for r in results if r is not None], self.session)

    def _batch(self, calls: Sequence[ToolCall], outcome: Any) -> RemoteBatch:
        if isinstance(outcome, ToolResult):
            self._note_failure(outcome)
            return RemoteBatch(
                calls,
                [replace(outcome, call_id=c.id, tool_name=c.name) for c in calls],
                self.session,
            )
        value, extra = outcome
        self._apply_state(extra)
        if isinstance(value, ToolResult):  # the session was gone in the host
            self._set_lost(value)
            return self._batch(calls, value)
        got_calls, results = value
        return RemoteBatch(got_calls, results, self.session)

    def stream(self) -> RemoteStream:
        """A streaming executor running in the host (see `Runtime.stream`)."""
        return RemoteStream(self)

    async def resume(
        self, target: Interrupted | Batch, answer: Approval | Mapping[str, Approval]
    ) -> Any:
        """Carry on after approvals, in the host (see `Runtime.resume`)."""
        if isinstance(target, Batch):
            if isinstance(answer, Approval):
                raise ConfigurationError(
                    "resume(batch, ...) takes a mapping of call id to Approval"
                )
            failed = self._fail_all(target.calls)
            if failed is not None:
                return failed
            assert self._link is not None
            backstop = sum(self._backstop(c.name) for c in target.calls) or self._margin
            try:
                outcome = await self._link.exchange(
                    "resume_batch",
                    (self.session_id, list(target.calls), list(target.results), dict(answer)),
                    backstop=backstop,
                    cancel=None,
                    call_id="",
                    tool_name="",
                    locale=self.locale,
                )
            except ConfigurationError as exc:
                outcome = ToolResult.failure(
                    ErrorCode.EXECUTION_ERROR,
                    f"The session host could not resume this batch: {exc}",
                    metadata={"executed": "unknown"},
                )
            return self._batch(target.calls, outcome)
        if not isinstance(answer, Approval):
            raise ConfigurationError("resume(interrupted, ...) takes one Approval")
        failed = self._failed(target.call_id, target.tool_name)
        if failed is not None:
            return failed
        return await self._exchange(
            "resume", (self.session_id, target, answer), target.call_id, target.tool_name
        )

    def cancel(self, call_id: str, reason: str = "The call was cancelled.") -> bool:
        """Ask the host to cancel a call this client waits for; False if none is in flight.

        The call's result becomes CANCELLED.
        """
        stream = self._streamed.get(call_id)
        if stream is not None:
            return stream.cancel_one(call_id, reason)
        if call_id not in self._running or self._link is None:
            return False
        return self._link.notify("cancel", (self.session_id, call_id, reason))

    def discard(self, call: Interrupted | str) -> bool:
        """Forget a call waiting for approval in the host, without running it."""
        if self._link is None or self.lost is not None:
            return False
        call_id = call if isinstance(call, str) else call.call_id
        return self._link.notify("discard", (self.session_id, call_id))

    async def take_notices(self) -> list[str]:
        """Messages for the model that arrived in the host between calls, oldest first."""
        if self.lost is not None:
            return []
        value = await self._control("notices", (self.session_id,))
        if not isinstance(value, list):
            return []
        return [str(v) for v in cast(list[object], value)]

    # -- checkpoints (kept in the host) -------------------------------------------------------

    async def checkpoints(self) -> list[Checkpoint]:
        """The session's checkpoints, oldest first (see `Runtime.checkpoints`).

        Raises `ConfigurationError` when the session keeps none, is lost, or its host fails.
        """
        value = await self._checkpoint_op("checkpoints", ())
        return list(cast(list[Checkpoint], value))

    async def restore_plan(
        self, checkpoint: int, paths: Iterable[str] | None = None
    ) -> RestorePlan:
        """What `restore` would change, changing nothing (see `Runtime.restore_plan`).

        `RestorePlan.outside` names the files changed outside the session since the checkpoint
        (by hand, a background job): `restore` overwrites them only when told to.
        """
        chosen = list(paths) if paths is not None else None
        value = await self._checkpoint_op(
            "restore_plan", (checkpoint, chosen), seconds=RESTORE_BACKSTOP
        )
        return cast(RestorePlan, value)

    async def restore(
        self,
        checkpoint: int,
        paths: Iterable[str] | None = None,
        *,
        overwrite_outside: bool = False,
    ) -> Restored:
        """Put the session's files back as they were at `checkpoint`, in the host.

        As `Runtime.restore`, with nobody to ask: files changed outside the session since the
        checkpoint make it `refused` (naming them) unless `overwrite_outside` is true. The
        restore is recorded: `restore(result.undo)` takes it back.

        Raises `KeyError` for an unknown checkpoint, `ConfigurationError` when the session
        keeps no checkpoints, is lost, or its host fails.
        """
        chosen = list(paths) if paths is not None else None
        value = await self._checkpoint_op(
            "restore", (checkpoint, chosen, overwrite_outside), seconds=RESTORE_BACKSTOP
        )
        return cast(Restored, value)

    async def _checkpoint_op(
        self, op: str, args: tuple[Any, ...], *, seconds: float = 60.0
    ) -> object:
        lost = self.lost
        if lost is None:
            value = await self._control(op, (self.session_id, *args), seconds=seconds)
        else:
            value = lost
        if isinstance(value, ToolResult):
            raise ConfigurationError(f"{op}: {value.content}")
        if isinstance(value, CheckpointRefusal):
            if value.unknown:
                raise KeyError(value.message)
            raise ConfigurationError(value.message)
        return value

    async def aclose(self) -> None:
        """End the session in its host: calls cancelled, jobs stopped, files removed.

        Its workspace (unless a `PathWorkspace`) and its checkpoints go.
        """
        if self._closed:
            return
        self._closed = True
        try:
            if self._link is not None and self.lost is None:
                await self._control("close", (self.session_id,))
        finally:
            self._set_lost(_failures.lost("closed", locale=self.locale))

    async def __aenter__(self) -> RemoteRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "lost" if self.lost is not None else "open"
        return f"<RemoteRuntime {self.session_id} host={self.host} {state}>"
