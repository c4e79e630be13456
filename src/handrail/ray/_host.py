"""A session host: many sessions in one process, each a `Runtime` over its own workspace.

Plain asyncio, no Ray: `_ray.py` wraps it in an actor. The host serves its operations on a
socket (`_channel.py`) and keeps, per session, its `Runtime`, its workspace and its time limits.
What it guarantees:

* every operation on a session that is gone (closed, expired, never opened here) answers
  `SESSION_LOST` at once, and a call in flight when its session goes answers the same;
* an idle time limit (no call for that long) and an absolute one close a session from a
  reaper that wakes every second: its calls are cancelled, its jobs stopped, its workspace
  removed;
* one semaphore of command slots, sized to the host's CPUs, is shared by all its sessions'
  runtimes: a call running a command (an execute tool that is not read-only for its input)
  holds a slot while it runs;
* a session keeps checkpoints (unless opened with `checkpoints=False`) in the host's directory,
  `checkpoints/<session id>/`, hidden from every session's tools and removed with the session:
  `checkpoints`, `restore_plan` and `restore` answer plain data (`Checkpoint`, `RestorePlan`,
  `Restored`), or a `CheckpointRefusal` for an unknown checkpoint or a session without them;
* everything the host makes lives under its own directory (workspaces, session temp dirs,
  checkpoints, the socket), which `shutdown` removes and which a sweep removes after a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._contract import Approval, Interrupted, ToolCall, ToolResult
from .._registry import Registry
from .._tool import Tool
from ..errors import ConfigurationError
from ..runtime import Batch, Runtime, StreamingExecutor
from . import _failures
from ._channel import Connection, Extra, serve_connection
from ._workspace import Workspace, remove_workspace

__all__ = [
    "RUNTIME_OPTIONS",
    "CheckpointRefusal",
    "HostConfig",
    "HostCore",
    "ToolSpec",
    "tool_spec",
]

logger = logging.getLogger("handrail.ray")

ToolsFactory = Callable[[Path], Registry | Iterable[Tool]]
"""Builds a session's tools for its workspace root (runs in the host)."""

RUNTIME_OPTIONS = frozenset(
    {
        "mode",
        "allow",
        "ask",
        "deny",
        "settings",
        "locale",
        "default_timeout",
        "max_concurrency",
        "hidden_paths",
        "hooks",
        "checkpoints",
    }
)
"""`Runtime` arguments a session may set (the rest belong to the host).

`checkpoints` defaults to True in a host (a `Runtime`'s own default is False)."""

_GONE_KEPT = 65_536  # sessions remembered as closed/expired, so late calls answer SESSION_LOST


@dataclass(frozen=True, slots=True, kw_only=True)
class HostConfig:
    """What a host is told when it is created."""

    pool_id: str
    index: int
    tools: ToolsFactory
    secret: bytes
    max_sessions: int
    command_slots: int
    base_dir: str | None = None
    """Where the host keeps everything it makes (default: under the system temp dir)."""
    cache_dir: str | None = None
    """Node-local cache shared by hosts (git mirrors); kept across pools."""
    listen: str | None = "127.0.0.1"
    """Address to serve TCP on (the node's IP for clients on other nodes); None: Unix only."""
    reap_every: float = 1.0


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """Everything a client needs to show a tool to a model: no code, only data."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    aliases: tuple[str, ...]
    usage: str
    kind: str
    read_only: bool | None
    """True/False when fixed; None when it depends on the input (decided in the host)."""
    concurrency_safe: bool | None
    destructive: bool | None
    timeout: float | None
    providers: tuple[str, ...] | None
    deferred: bool
    output_schema: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class CheckpointRefusal:
    """A checkpoint operation the host could not do: the client raises from it."""

    unknown: bool
    """True: no such checkpoint (`KeyError`); False: the session keeps none."""
    message: str


def _fixed(flag: object) -> bool | None:
    return flag if isinstance(flag, bool) else None


def tool_spec(tool: Tool) -> ToolSpec:
    """The data of `tool` a client rebuilds a stand-in from."""
    return ToolSpec(
        name=tool.name,
        description=tool.description,
        parameters=tool.parameters,
        aliases=tuple(tool.aliases),
        usage=tool.usage,
        kind=str(tool.kind),
        read_only=_fixed(tool.read_only),
        concurrency_safe=_fixed(tool.concurrency_safe),
        destructive=_fixed(tool.destructive),
        timeout=tool.timeout,
        providers=tuple(tool.providers) if tool.providers is not None else None,
        deferred=tool.deferred,
        output_schema=tool.output_schema,
    )


@dataclass(eq=False, slots=True)
class _Live:
    sid: str
    rt: Runtime
    root: Path
    owned: bool
    idle_ttl: float | None
    deadline: float | None
    last: float
    busy: int = 0
    tasks: set[asyncio.Task[Any]] = field(default_factory=set[asyncio.Task[Any]])
    shown: tuple[str, tuple[str, ...]] = ("", ())
    ending: str | None = None  # why the session is going: "closed" / "expired:idle" / ...


@dataclass(eq=False, slots=True)
class _Stream:
    live: _Live
    ex: StreamingExecutor | None = None
    early: list[tuple[str, tuple[Any, ...]]] = field(
        default_factory=list[tuple[str, tuple[Any, ...]]]
    )


class HostCore:
    """The sessions of one host and the operations on them (served by `serve`)."""

    def __init__(self, config: HostConfig) -> None:
        self.config = config
        root = Path(config.base_dir or tempfile.gettempdir())
        self.base = root / f"handrail-ray-{config.pool_id}" / f"host-{config.index}"
        self.cache = Path(config.cache_dir or Path(tempfile.gettempdir()) / "handrail-ray-cache")
        self.sessions: dict[str, _Live] = {}
        self.gone: OrderedDict[str, str] = OrderedDict()
        self.streams: dict[str, _Stream] = {}
        self.slots = asyncio.Semaphore(max(1, config.command_slots))
        self.opened = 0
        self.calls = 0
        self._servers: list[asyncio.Server] = []
        self._reaper: asyncio.Task[None] | None = None
        self._opening = 0
        self._enders: set[asyncio.Task[None]] = set()
        self._clients: set[Connection] = set()
        self._opening_ids: set[str] = set()
        self._tempdir_before: str | None = None
        self._abandoned: set[str] = set()
        self.handlers: dict[str, Callable[..., Any]] = {
            "open": self.open,
            "close": self.close,
            "call": self.call,
            "check": self.check,
            "call_many": self.call_many,
            "resume": self.resume,
            "resume_batch": self.resume_batch,
            "cancel": self.cancel,
            "time_left": self.time_left,
            "discard": self.discard,
            "notices": self.notices,
            "checkpoints": self.checkpoints,
            "restore_plan": self.restore_plan,
            "restore": self.restore,
            "submit": self.submit,
            "close_stream": self.close_stream,
            "cancel_stream": self.cancel_stream,
            "stats": self.stats,
            "ping": self.ping,
        }

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> dict[str, Any]:
        """Make the host's directory, serve the socket(s), start the reaper; say where."""
        self.base.mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.base / "tmp").mkdir(exist_ok=True, mode=0o700)
        (self.base / "ws").mkdir(exist_ok=True, mode=0o700)
        (self.base / "checkpoints").mkdir(exist_ok=True, mode=0o700)
        # Session temp dirs and spill files go under the host's directory: a sweep after a
        # crash finds them there. The host is its own process, so this is its own setting.
        self._tempdir_before = tempfile.tempdir
        tempfile.tempdir = str(self.base / "tmp")
        path = str(self.base / "sock")
        streams = {"stream": self.open_stream}
        secret = self.config.secret

        async def serve(conn: Connection) -> None:
            self._clients.add(conn)
            try:
                await serve_connection(conn, secret, self.handlers, streams)
            except asyncio.CancelledError:
                pass  # the loop is ending: the connection goes with it
            finally:
                self._clients.discard(conn)

        def connection() -> Connection:
            return Connection(serve)

        if len(path.encode()) > 100:  # sun_path holds 108 bytes: a long base dir cannot
            # A Linux abstract socket: no file, so no permission bits either; the handshake
            # is what keeps strangers out, as on TCP.
            path = f"\0handrail-ray-{self.config.pool_id}-{self.config.index}-{os.urandom(6).hex()}"
        loop = asyncio.get_running_loop()
        self._servers.append(await loop.create_unix_server(connection, path))
        if not path.startswith("\0"):
            os.chmod(path, 0o600)
        tcp: tuple[str, int] | None = None
        if self.config.listen is not None:
            server = await loop.create_server(connection, self.config.listen, 0)
            self._servers.append(server)
            tcp = server.sockets[0].getsockname()[:2]
        self._reaper = asyncio.create_task(self._reap())
        return {"unix": path, "tcp": tcp, "pid": os.getpid(), "base": str(self.base)}

    async def shutdown(self) -> None:
        """Close every session, stop serving, remove the host's directory."""
        if self._reaper is not None:
            self._reaper.cancel()
        for server in self._servers:
            server.close()
        for conn in list(self._clients):
            conn.close()
        await asyncio.gather(
            *(self._end(live, "closed") for live in list(self.sessions.values())),
            return_exceptions=True,
        )
        if tempfile.tempdir == str(self.base / "tmp"):  # a host run inside another program
            tempfile.tempdir = self._tempdir_before
        await asyncio.to_thread(_remove_tree, self.base)
        with contextlib.suppress(OSError):  # the pool's directory, once its last host is gone
            self.base.parent.rmdir()

    def ping(self) -> int:
        """The host's PID (a cheap liveness check)."""
        return os.getpid()

    def stats(self) -> dict[str, Any]:
        """Load, for placement and for the benchmark."""
        times = os.times()
        return {
            "sessions": len(self.sessions),
            "opening": self._opening,
            "in_flight": sum(live.busy for live in self.sessions.values()),
            "command_slots_free": self.slots._value,
            "opened": self.opened,
            "calls": self.calls,
            "pid": os.getpid(),
            "cpu_seconds": times.user + times.system + times.children_user + times.children_system,
        }

    # -- sessions ----------------------------------------------------------------------------

    async def open(
        self,
        sid: str,
        workspace: Workspace,
        options: Mapping[str, Any],
        idle_ttl: float | None,
        ttl: float | None,
    ) -> dict[str, Any]:
        """Make the workspace and the session's `Runtime`; say what its tools are."""
        if sid in self.sessions:
            raise ValueError(f"session {sid!r} is already open here")
        if len(self.sessions) + self._opening >= self.config.max_sessions:
            return {"full": True, "sessions": len(self.sessions) + self._opening}
        unknown = set(options) - RUNTIME_OPTIONS
        if unknown:
            raise ValueError(f"unknown session options: {sorted(unknown)}")
        self._opening += 1
        self._opening_ids.add(sid)
        dest = self.base / "ws" / sid
        root: Path | None = None
        settings = dict(options)
        keep = bool(settings.pop("checkpoints", True))
        # No session's tools may read any session's kept contents.
        hidden = (*settings.pop("hidden_paths", ()), self.base / "checkpoints")
        try:
            root = await asyncio.to_thread(workspace.make, dest, self.cache)
            tools = self.config.tools(root)
            # Checkpoints in the host's directory, not the node's state folder: they go with
            # the session (its workspace goes too), and a sweep finds them after a crash.
            rt = Runtime(
                tools,
                root=root,
                command_slots=self.slots,
                hidden_paths=hidden,
                checkpoints=self._checkpoint_folder(sid) if keep else False,
                **settings,
            )
        except BaseException:
            if root is not None and workspace.owned:
                await asyncio.to_thread(remove_workspace, root)
            raise
        finally:
            self._opening -= 1
            self._opening_ids.discard(sid)
        now = time.monotonic()
        live = _Live(
            sid=sid,
            rt=rt,
            root=root,
            owned=workspace.owned,
            idle_ttl=idle_ttl,
            deadline=now + ttl if ttl is not None else None,
            last=now,
        )
        self.sessions[sid] = live
        self.gone.pop(sid, None)
        self.opened += 1
        live.shown = self._state(live)
        if sid in self._abandoned:  # the client gave up while it was being made
            self._abandoned.discard(sid)
            await self._end(live, "closed")
            return {"abandoned": True}
        return {
            "sessions": len(self.sessions),
            "root": str(root),
            "tools": [tool_spec(t) for t in rt.registry.all()],
            "state": live.shown,
            "locale": rt.locale,
            "default_timeout": rt.default_timeout,
            "checkpoints": rt.keeps_checkpoints,
        }

    def _checkpoint_folder(self, sid: str) -> Path:
        return self.base / "checkpoints" / sid

    async def close(self, sid: str) -> bool:
        """End a session (its calls cancelled, jobs stopped, workspace removed)."""
        live = self.sessions.get(sid)
        if live is None:
            if sid in self._opening_ids:
                self._abandoned.add(sid)  # still being made: ended as soon as it is
            return False
        await self._end(live, "closed")
        return True

    async def _end(self, live: _Live, why: str) -> None:
        if live.ending is not None:
            return
        live.ending = why
        self.sessions.pop(live.sid, None)
        self.gone[live.sid] = why
        while len(self.gone) > _GONE_KEPT:
            self.gone.popitem(last=False)
        for task in list(live.tasks):
            task.cancel()
        for key, stream in list(self.streams.items()):
            if stream.live is live:
                self.streams.pop(key, None)
                if stream.ex is not None:
                    stream.ex.cancel(reason="The session ended.")
        if live.tasks:
            await asyncio.wait(list(live.tasks), timeout=30)
        try:
            await live.rt.aclose()
        except Exception:
            logger.exception("closing session %s", live.sid)
        if live.owned:
            try:
                await asyncio.to_thread(remove_workspace, live.root)
            except OSError:  # a tool thread may still be writing; the host's sweep gets it
                logger.exception("removing the workspace of session %s", live.sid)
        await asyncio.to_thread(
            shutil.rmtree, self._checkpoint_folder(live.sid), ignore_errors=True
        )

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.config.reap_every)
            now = time.monotonic()
            for live in list(self.sessions.values()):
                if live.deadline is not None and now >= live.deadline:
                    self._ending(live, "expired:absolute")
                elif (
                    live.idle_ttl is not None and not live.busy and now - live.last >= live.idle_ttl
                ):
                    self._ending(live, "expired:idle")

    def _ending(self, live: _Live, why: str) -> None:
        task = asyncio.create_task(self._end(live, why))
        self._enders.add(task)
        task.add_done_callback(self._enders.discard)

    def _gone(
        self, sid: str, call_id: str = "", name: str = "", executed: Literal["no", "unknown"] = "no"
    ) -> ToolResult:
        why = self.gone.get(sid)
        if why is None or why == "closed":
            return _failures.lost("closed", call_id=call_id, tool_name=name, executed=executed)
        which: Literal["idle", "absolute"] = "absolute" if why.endswith("absolute") else "idle"
        return _failures.lost(
            "expired", call_id=call_id, tool_name=name, executed=executed, which=which
        )

    @staticmethod
    def _state(live: _Live) -> tuple[str, tuple[str, ...]]:
        s = live.rt.session
        return (str(s.mode), tuple(s.activated))

    def _reply(self, live: _Live, value: Any) -> Any:
        # The session's mode and activated tools travel with an answer only when they changed,
        # so the client's copy of the tool list stays right without asking.
        state = self._state(live)
        if state != live.shown:
            live.shown = state
            return Extra(value, state)
        return value

    async def _guarded(
        self, sid: str, call_id: str, name: str, work: Callable[[_Live], Any]
    ) -> Any:
        live = self.sessions.get(sid)
        if live is None:
            return self._gone(sid, call_id, name)
        task = asyncio.current_task()
        assert task is not None
        live.tasks.add(task)
        live.busy += 1
        self.calls += 1
        try:
            value = await work(live)
        except asyncio.CancelledError:
            if live.ending is None:
                raise
            task.uncancel()
            return self._gone(sid, call_id, name, executed="unknown")
        finally:
            live.busy -= 1
            live.last = time.monotonic()
            live.tasks.discard(task)
        return self._reply(live, value)

    # -- calls -------------------------------------------------------------------------------

    async def call(
        self,
        sid: str,
        name: str,
        arguments: str | Mapping[str, Any],
        call_id: str,
        approval: Approval | None,
    ) -> Any:
        """One call through the session's runtime."""
        return await self._guarded(
            sid,
            call_id,
            name,
            lambda live: live.rt.call(name, arguments, call_id=call_id, approval=approval),
        )

    async def check(
        self, sid: str, name: str, arguments: str | Mapping[str, Any], call_id: str
    ) -> Any:
        """`Runtime.check` in the session (a lost session answers its `SESSION_LOST` result)."""
        return await self._guarded(
            sid, call_id, name, lambda live: live.rt.check(name, arguments, call_id=call_id)
        )

    async def call_many(self, sid: str, calls: Sequence[ToolCall]) -> Any:
        """A batch; answers `(calls, results)` or a `SESSION_LOST` result for all."""

        async def work(live: _Live) -> tuple[tuple[ToolCall, ...], tuple[ToolResult, ...]]:
            batch = await live.rt.call_many(calls)
            return batch.calls, batch.results

        return await self._guarded(sid, "", "", work)

    async def resume(self, sid: str, target: Interrupted, answer: Approval) -> Any:
        """Carry on with one interrupted call."""
        return await self._guarded(
            sid, target.call_id, target.tool_name, lambda live: live.rt.resume(target, answer)
        )

    async def resume_batch(
        self,
        sid: str,
        calls: Sequence[ToolCall],
        results: Sequence[ToolResult],
        answers: Mapping[str, Approval],
    ) -> Any:
        """Carry on with an interrupted batch (rebuilt from what the client holds)."""

        async def work(live: _Live) -> tuple[tuple[ToolCall, ...], tuple[ToolResult, ...]]:
            batch = await Batch(calls, results, live.rt.session).resume(live.rt, answers)
            return batch.calls, batch.results

        return await self._guarded(sid, "", "", work)

    def cancel(self, sid: str, call_id: str, reason: str) -> bool:
        """Cancel a running call of the session; False if it is not running."""
        live = self.sessions.get(sid)
        return live is not None and live.rt.cancel(call_id, reason)

    def time_left(self, sid: str, call_id: str) -> float | None:
        """Seconds until a running call's limit (`math.inf` while it waits to start)."""
        live = self.sessions.get(sid)
        return None if live is None else live.rt.pipeline.time_left(call_id)

    def discard(self, sid: str, call_id: str) -> bool:
        """Forget an interrupted call of the session."""
        live = self.sessions.get(sid)
        return live is not None and live.rt.discard(call_id)

    def notices(self, sid: str) -> list[str] | None:
        """The session's notices since the last look (None: the session is gone)."""
        live = self.sessions.get(sid)
        return None if live is None else live.rt.session.take_notices()

    # -- checkpoints -------------------------------------------------------------------------

    async def _checkpoint_op(self, sid: str, op: Callable[[Runtime], Awaitable[Any]]) -> Any:
        async def work(live: _Live) -> Any:
            try:
                return await op(live.rt)
            except KeyError as exc:
                return CheckpointRefusal(True, str(exc.args[0]) if exc.args else "no checkpoint")
            except ConfigurationError as exc:
                return CheckpointRefusal(False, str(exc))

        return await self._guarded(sid, "", "", work)

    async def checkpoints(self, sid: str) -> Any:
        """The session's checkpoints, oldest first (`Runtime.checkpoints`)."""

        async def listed(rt: Runtime) -> Any:
            return rt.checkpoints()  # on the loop, where the runtime makes a session's record

        return await self._checkpoint_op(sid, listed)

    async def restore_plan(self, sid: str, checkpoint: int, paths: list[str] | None) -> Any:
        """What restoring would change (`Runtime.restore_plan`)."""
        return await self._checkpoint_op(sid, lambda rt: rt.restore_plan(checkpoint, paths))

    async def restore(
        self, sid: str, checkpoint: int, paths: list[str] | None, overwrite_outside: bool
    ) -> Any:
        """Put the session's files back (`Runtime.restore`; nobody here to ask)."""
        return await self._checkpoint_op(
            sid,
            lambda rt: rt.restore(checkpoint, paths, overwrite_outside=overwrite_outside),
        )

    # -- streams -----------------------------------------------------------------------------

    def open_stream(self, emit: Callable[[Any], None], rid: int, sid: str, key: str) -> Any:
        """Run a streaming executor for the session; items go to `emit` as they come.

        Set up before the first `submit` can arrive (frames are handled in order); the
        executor itself starts when the returned coroutine runs.
        """
        live = self.sessions.get(sid)
        if live is None:
            lost = self._gone(sid)
            return _done(("lost", lost))
        stream = self.streams[key] = _Stream(live=live)
        return self._pump(stream, key, emit)

    async def _pump(self, stream: _Stream, key: str, emit: Callable[[Any], None]) -> Any:
        live = stream.live
        if live.ending is not None:  # it ended between the request and now
            self.streams.pop(key, None)
            return ("lost", self._gone(live.sid))
        task = asyncio.current_task()
        assert task is not None
        live.tasks.add(task)
        live.busy += 1
        try:
            async with live.rt.stream() as ex:
                stream.ex = ex
                for op, args in stream.early:
                    _apply(ex, op, args)
                stream.early.clear()
                async for item in ex:
                    emit(item)
                batch = ex.batch
            return ("done", (batch.calls, batch.results), self._state(live))
        except asyncio.CancelledError:
            if live.ending is None:
                raise
            task.uncancel()
            return ("lost", self._gone(live.sid, executed="unknown"))
        finally:
            live.busy -= 1
            live.last = time.monotonic()
            live.tasks.discard(task)
            self.streams.pop(key, None)

    def _feed(self, key: str, op: str, args: tuple[Any, ...]) -> None:
        stream = self.streams.get(key)
        if stream is None:
            return
        if stream.ex is None:
            stream.early.append((op, args))
        else:
            _apply(stream.ex, op, args)

    def submit(self, key: str, call: ToolCall) -> None:
        """Add a call to a stream."""
        self._feed(key, "submit", (call,))

    def close_stream(self, key: str) -> None:
        """No more calls for this stream."""
        self._feed(key, "close", ())

    def cancel_stream(self, key: str, call_id: str | None, reason: str) -> None:
        """Cancel one call of a stream, or all of them."""
        self._feed(key, "cancel", (call_id, reason))


def _apply(ex: StreamingExecutor, op: str, args: tuple[Any, ...]) -> None:
    try:
        if op == "submit":
            ex.submit(args[0])
        elif op == "close":
            ex.close()
        else:
            ex.cancel(args[0], args[1])
    except Exception:
        logger.exception("stream operation %s failed", op)


async def _done(value: Any) -> Any:
    return value


def _remove_tree(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        remove_workspace(path)
    shutil.rmtree(path, ignore_errors=True)
