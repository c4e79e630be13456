"""`SessionPool`: session hosts on a Ray cluster, and the sessions placed on them.

The pool starts its hosts (actors owned by this driver, so they end with it), places each new
session on the least-loaded host that fits, limits how fast sessions are created, and on
`close()` ends every host and sweeps each node for what a dead host left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._contract import ErrorCode, ToolResult
from ..errors import ConfigurationError
from . import _failures, _ray
from ._channel import ERROR, ChannelClosed
from ._client import RemoteRuntime
from ._host import RUNTIME_OPTIONS, HostConfig, ToolsFactory
from ._link import HostLink
from ._workspace import EmptyWorkspace, Workspace

__all__ = ["SessionPool"]


def _coding_tools(root: Path) -> Any:
    from ..builtin import coding_tools

    return coding_tools(project_dir=root)


class SessionPool:
    """Session hosts on a Ray cluster; `open` gives a `RemoteRuntime` per session.

    ```python
    async with SessionPool(hosts=2, max_sessions_per_host=256) as pool:
        rt = await pool.open(GitWorkspace("/data/repo.git", commit), mode="accept_edits")
        r = await rt.call("read_file", {"file_path": "README.md"})
        await rt.aclose()
    ```

    Args:
        tools: Builds a session's tools from its workspace root, in the host (it travels to
            the hosts pickled, so a module-level function). Default: the coding tools.
        hosts: How many hosts to start. Default: one per alive node with the CPUs for it
            (with placement hints: one).
        max_sessions_per_host: Sessions a host holds at most; `open` finds another host, or
            waits up to `wait` seconds, or gives a session that answers `BACKEND_UNAVAILABLE`.
        host_cpus: CPUs each host reserves from Ray (`num_cpus` of the actor).
        command_slots: Commands a host runs at once across its sessions (calls of execute
            tools that are not read-only for their input). Default: `host_cpus` rounded up.
        label_selector: Ray node labels the hosts must run on.
        resources: Custom Ray resources each host reserves.
        placement_group: A placement group the caller owns; host `i` goes in bundle
            `i % bundle_count`.
        open_rate: Sessions created per second at most (a token bucket with `open_burst`
            tokens, plus jitter): creation storms are what breaks sandbox pools.
        idle_ttl: Default seconds a session may sit without a call before its host ends it.
        ttl: Default seconds a session may live at all (make it longer than the rollout plus
            its scoring).
        margin: Seconds added to a tool's time limit before the client steps in.
        grace: Seconds the client waits for a cancelled call before it checks the host.
        probe_timeout: Seconds a liveness ping through Ray may take.
        lost_after: Seconds a broken connection is investigated before the call is given up
            as `BACKEND_UNAVAILABLE`; Ray notices a dead node after about 13 s by default.
        start_timeout: Seconds hosts may take to start (placement, worker start-up).
        open_timeout: Seconds making a session's workspace may take (a first git clone).
        base_dir: Where hosts keep their files on each node (default: the system temp dir).
        cache_dir: Node-local cache for workspaces (git mirrors), kept across pools.
        **session_defaults: `Runtime` options for every session (`mode`, `allow`, `ask`,
            `deny`, `settings`, `locale`, `default_timeout`, `max_concurrency`,
            `hidden_paths`, `hooks`, `checkpoints`); `open` may override them. Unlike a
            `Runtime`'s, `checkpoints` defaults to True: a session's checkpoints are kept in
            its host (`RemoteRuntime.checkpoints`, `restore`) and removed with the session;
            `checkpoints=False` saves the copy of the workspace a first change makes and about
            0.3 ms per call that changes files, for rollouts that never restore.
    """

    def __init__(
        self,
        tools: ToolsFactory | None = None,
        *,
        hosts: int | None = None,
        max_sessions_per_host: int = 256,
        host_cpus: float = 1.0,
        command_slots: int | None = None,
        label_selector: Mapping[str, str] | None = None,
        resources: Mapping[str, float] | None = None,
        placement_group: Any = None,
        open_rate: float | None = None,
        open_burst: int = 16,
        idle_ttl: float | None = None,
        ttl: float | None = None,
        margin: float = 10.0,
        grace: float = 5.0,
        probe_timeout: float = 5.0,
        lost_after: float = 30.0,
        start_timeout: float = 300.0,
        open_timeout: float = 900.0,
        base_dir: str | None = None,
        cache_dir: str | None = None,
        **session_defaults: Any,
    ) -> None:
        _check_options(session_defaults)
        if hosts is not None and hosts < 1:
            raise ConfigurationError("hosts must be at least 1")
        if max_sessions_per_host < 1:
            raise ConfigurationError("max_sessions_per_host must be at least 1")
        if open_rate is not None and open_rate <= 0:
            raise ConfigurationError("open_rate must be positive (sessions per second)")
        self.id = uuid.uuid4().hex[:12]
        """The pool's id: its hosts' directories are named after it."""
        self._tools = tools or _coding_tools
        self._hosts_wanted = hosts
        self.max_sessions_per_host = max_sessions_per_host
        self._host_cpus = host_cpus
        self._command_slots = command_slots or max(1, math.ceil(host_cpus))
        self._label_selector = label_selector
        self._resources = resources
        self._placement_group = placement_group
        self._open_rate = open_rate
        self._open_burst = max(1, open_burst)
        self._tokens = float(self._open_burst)
        self._stamp = time.monotonic()
        self._rate_lock: asyncio.Lock | None = None
        self._idle_ttl = idle_ttl
        self._ttl = ttl
        self._margin = margin
        self._grace = grace
        self._probe_timeout = probe_timeout
        self._lost_after = lost_after
        self._base_dir = base_dir
        self._cache_dir = cache_dir
        self._defaults = dict(session_defaults)
        self._secret = os.urandom(32)
        self.links: list[HostLink] = []
        """The hosts, in start order."""
        self._labels: dict[str, dict[str, str]] = {}
        self._open: set[RemoteRuntime] = set()
        self._freed: asyncio.Event | None = None
        self._starting: asyncio.Future[None] | None = None
        self._replacing: asyncio.Future[None] | None = None
        self._local: str | None = None
        self._start_timeout = start_timeout
        self._open_timeout = open_timeout
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> SessionPool:
        """Start the hosts and wait until each serves (`open` does this on first use)."""
        if self._closed:
            raise ConfigurationError("this pool is closed")
        if self._starting is None:
            self._starting = asyncio.ensure_future(self._start())
        await asyncio.shield(self._starting)
        return self

    async def _start(self) -> None:
        self._labels = _ray.node_labels()
        self._local = _ray.current_node()
        self.links = await self._start_hosts(self._placements())

    async def _start_hosts(self, placements: list[str | None]) -> list[HostLink]:
        first = len(self.links)
        actors: list[Any] = []
        for i, node in enumerate(placements, start=first):
            config = HostConfig(
                pool_id=self.id,
                index=i,
                tools=self._tools,
                secret=self._secret,
                max_sessions=self.max_sessions_per_host,
                command_slots=self._command_slots,
                base_dir=self._base_dir,
                cache_dir=self._cache_dir,
                listen="node",
            )
            actors.append(
                _ray.create_host(
                    config,
                    num_cpus=self._host_cpus,
                    label_selector=self._label_selector,
                    resources=self._resources,
                    placement_group=self._placement_group,
                    bundle_index=i % _bundles(self._placement_group),
                    node_id=node,
                )
            )
        try:
            async with asyncio.timeout(self._start_timeout):
                wheres = await asyncio.gather(*(a.start.remote() for a in actors))
        except BaseException:
            for a in actors:
                _ray.kill(a)
            raise
        return [
            HostLink(
                i,
                actor,
                where,
                self._secret,
                local_node=self._local,
                margin=self._margin,
                grace=self._grace,
                probe_timeout=self._probe_timeout,
                lost_after=self._lost_after,
            )
            for i, (actor, where) in enumerate(zip(actors, wheres, strict=True), start=first)
        ]

    async def _replace_dead(self) -> bool:
        """Start a new host for each dead one not yet replaced; True if any started.

        For new sessions only: a session never moves.
        """
        if self._replacing is None or self._replacing.done():
            dead = [link for link in self.links if link.dead is not None and not link.replaced]
            if not dead:
                return False
            for link in dead:
                link.replaced = True
            # Anywhere that fits: a pinned node may be the one that died.
            self._replacing = asyncio.ensure_future(self._add_hosts(len(dead)))
        try:
            await asyncio.shield(self._replacing)
        except Exception:
            return False
        return True

    async def _add_hosts(self, count: int) -> None:
        self.links = [*self.links, *await self._start_hosts([None] * count)]
        self._labels = _ray.node_labels()

    def _placements(self) -> list[str | None]:
        hinted = (
            self._label_selector is not None
            or self._resources is not None
            or self._placement_group is not None
        )
        if hinted or self._hosts_wanted is not None:
            return [None] * (self._hosts_wanted or 1)
        nodes: list[str | None] = list(_ray.nodes_with_cpus(self._host_cpus))
        return nodes or [None]

    async def close(self) -> None:
        """End every session and host; sweep each node for what a dead host left.

        Leaves no host process, command, workspace or temporary directory of this pool.
        """
        if self._closed:
            return
        self._closed = True
        for pending in (self._starting, self._replacing):  # hosts still starting end too
            if pending is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.shield(pending)
        for rt in list(self._open):
            rt._lost = rt._lost or _failures.lost("closed")  # pyright: ignore[reportPrivateUsage]
        self._open.clear()
        links = self.links

        async def stop(link: HostLink) -> None:
            # The host ends its sessions first, so calls in flight answer SESSION_LOST
            # (closed) over their own connection; then the connection and the actor go.
            link.closing = True
            if link.dead is None:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(30):
                        await link.actor.shutdown.remote()
            await link.aclose()
            _ray.kill(link.actor)

        await asyncio.gather(*(stop(link) for link in links))
        by_node: dict[str, list[str]] = {}
        for link in links:
            by_node.setdefault(link.node_id, []).append(link.base)
        await asyncio.gather(*(_ray.sweep(node, bases) for node, bases in by_node.items()))

    async def __aenter__(self) -> SessionPool:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- sessions ----------------------------------------------------------------------------

    async def open(
        self,
        workspace: Workspace | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        wait: float = 0.0,
        idle_ttl: float | None = None,
        ttl: float | None = None,
        **options: Any,
    ) -> RemoteRuntime:
        """A new session on the least-loaded host that fits, over a workspace made there.

        Never raises for the backend's sake: when no host can take the session (all full
        after `wait` seconds, or the chosen host died), the `RemoteRuntime` it returns has
        `lost` set and answers every call with it (`BACKEND_UNAVAILABLE` or `SESSION_LOST`).
        A bad workspace or option raises `ConfigurationError`.

        Args:
            workspace: Where the session's files come from (default: an empty directory).
            labels: Only hosts on nodes with these Ray labels.
            wait: Seconds to wait for room when every host is full.
            idle_ttl: Seconds without a call before the host ends the session.
            ttl: Seconds the session may live at all.
            **options: `Runtime` options for this session (see the pool's).
        """
        _check_options(options)
        if self._closed:
            raise ConfigurationError("this pool is closed")
        sid = uuid.uuid4().hex[:16]
        try:
            await self.start()
        except Exception as exc:  # no host could start: tried again on the next open
            self._starting = None
            detail = f"the pool's hosts did not start: {_ray.first_line(exc)}"
            return self._unopened(sid, _failures.unavailable("no_host", detail=detail))
        await self._admit()
        merged = {**self._defaults, **options}
        give_up = time.monotonic() + wait
        workspace = workspace or EmptyWorkspace()
        idle = idle_ttl if idle_ttl is not None else self._idle_ttl
        life = ttl if ttl is not None else self._ttl
        tried: set[int] = set()
        while True:
            link = self._pick(labels, tried)
            if link is None and await self._replace_dead():
                continue
            if link is None:
                if not any(self._fits(other, labels) for other in self.links):
                    detail = f"no live host on a node labelled {dict(labels)}" if labels else ""
                    return self._unopened(sid, _failures.unavailable("no_host", detail=detail))
                if time.monotonic() >= give_up:
                    return self._unopened(sid, _failures.unavailable("full"))
                await self._room(give_up)
                tried.clear()
                continue
            link.opening += 1
            try:
                outcome = await link.exchange(
                    "open",
                    (sid, workspace, merged, idle, life),
                    backstop=self._open_timeout,
                    cancel=None,
                    call_id="",
                    tool_name="",
                    locale=str(merged.get("locale") or "en"),
                )
            except BaseException:
                link.notify("close", (sid,))  # a session made after we left is ended at once
                raise
            finally:
                link.opening -= 1
            if isinstance(outcome, ToolResult):
                if outcome.error is ErrorCode.SESSION_LOST:
                    tried.add(link.index)
                    continue  # that host died before the session was made: try another
                link.notify("close", (sid,))
                return self._unopened(sid, outcome)
            info, _ = outcome
            # The host's own count: sessions it ended (time limits) are free again here.
            link.sessions = int(info.get("sessions", link.sessions + 1))
            if info.get("full") or info.get("abandoned"):
                tried.add(link.index)
                continue
            rt = RemoteRuntime(
                link=link, session_id=sid, info=info, margin=self._margin, on_close=self._closed_one
            )
            self._open.add(rt)
            return rt

    def _unopened(self, sid: str, failure: ToolResult) -> RemoteRuntime:
        return RemoteRuntime(link=None, session_id=sid, info=None, margin=0.0, failure=failure)

    def _fits(self, link: HostLink, labels: Mapping[str, str] | None) -> bool:
        if link.dead is not None:
            return False
        have = self._labels.get(link.node_id, {})
        return not labels or all(have.get(k) == v for k, v in labels.items())

    def _pick(self, labels: Mapping[str, str] | None, tried: set[int]) -> HostLink | None:
        best: HostLink | None = None
        for link in self.links:
            load = link.sessions + link.opening
            if link.index in tried or load >= self.max_sessions_per_host:
                continue
            if not self._fits(link, labels):
                continue
            if best is None or load < best.sessions + best.opening:
                best = link
        return best

    async def _room(self, give_up: float) -> None:
        if self._freed is None:
            self._freed = asyncio.Event()
        self._freed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, give_up - time.monotonic())):
                await self._freed.wait()

    def _closed_one(self, rt: RemoteRuntime) -> None:
        if rt in self._open:
            self._open.discard(rt)
            link = rt._link  # pyright: ignore[reportPrivateUsage]
            if link is not None:
                link.sessions = max(0, link.sessions - 1)
            if self._freed is not None:
                self._freed.set()

    async def _admit(self) -> None:
        rate = self._open_rate
        if rate is None:
            return
        if self._rate_lock is None:
            self._rate_lock = asyncio.Lock()
        async with self._rate_lock:
            now = time.monotonic()
            self._tokens = min(self._open_burst, self._tokens + (now - self._stamp) * rate)
            self._stamp = now
            if self._tokens < 1:
                delay = (1 - self._tokens) / rate
                await asyncio.sleep(delay + random.uniform(0, 0.1 / rate))
                self._tokens = 1.0
                self._stamp = time.monotonic()
            self._tokens -= 1

    # -- observing ---------------------------------------------------------------------------

    async def stats(self) -> list[dict[str, Any]]:
        """Each host's load, or `{"dead": ...}` for a host that is gone.

        Load: sessions, calls in flight, free command slots, CPU seconds.
        """

        async def one(link: HostLink) -> dict[str, Any]:
            if link.dead is not None:
                return {"host": link.index, "dead": link.dead.metadata.get("detail", "")}
            try:
                channel = await link.connect()
                status, value, _ = await asyncio.wait_for(channel.request("stats"), 30)
            except (ChannelClosed, TimeoutError) as exc:
                return {"host": link.index, "unreachable": str(exc)}
            if status == ERROR:
                return {"host": link.index, "error": value}
            return {"host": link.index, "node_id": link.node_id, **value}

        return list(await asyncio.gather(*(one(link) for link in self.links)))

    @property
    def sessions(self) -> int:
        """Sessions open through this pool."""
        return len(self._open)


def _bundles(pg: Any) -> int:
    return len(getattr(pg, "bundle_specs", ()) or ()) or 1


def _check_options(options: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - RUNTIME_OPTIONS)
    if unknown:
        raise ConfigurationError(
            f"unknown session options {unknown}: a session takes {sorted(RUNTIME_OPTIONS)}"
        )
