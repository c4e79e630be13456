"""Everything that touches Ray: the host actor, its placement, liveness probes and the sweep.

The only module of handrail that imports `ray` (the `ray` extra). Hosts run with no restarts
and no task retries: a restarted host would have lost its sessions, and a retried call may
run twice (Ray re-runs the in-flight task after a restart when retries are on).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from ray.util.scheduling_strategies import (
    NodeAffinitySchedulingStrategy,
    PlacementGroupSchedulingStrategy,
)

import ray

from ._host import HostConfig, HostCore

__all__ = [
    "HostActor",
    "Liveness",
    "create_host",
    "current_node",
    "first_line",
    "is_dead",
    "kill",
    "node_labels",
    "probe",
    "sweep",
]

Liveness = Literal["alive", "dead", "unknown"]


class HostActor:
    """The actor around a `HostCore`: Ray starts it, places it and reports its death."""

    def __init__(self, config: HostConfig) -> None:
        if config.listen == "node":  # other nodes reach the host on its node's address
            config = replace(config, listen=node_ip())
        self.core = HostCore(config)

    async def start(self) -> dict[str, Any]:
        """Serve; answers where (Unix path, TCP address), the PID and the node."""
        where = await self.core.start()
        where["node_id"] = ray.get_runtime_context().get_node_id()
        return where

    def ping(self) -> int:
        """Alive: the PID."""
        return self.core.ping()

    async def watch(self) -> None:
        """Never returns while the host lives: clients await it to learn of its death."""
        await asyncio.Event().wait()

    def stats(self) -> dict[str, Any]:
        """The host's load."""
        return self.core.stats()

    async def rpc(self, op: str, args: tuple[Any, ...]) -> Any:
        """Any host operation through Ray itself rather than the socket.

        For the benchmark's comparison of the two paths.
        """
        value = self.core.handlers[op](*args)
        if asyncio.iscoroutine(value):
            value = await value
        return value

    async def shutdown(self) -> None:
        """Close every session and remove the host's files."""
        await self.core.shutdown()


_RemoteHost = ray.remote(HostActor)


def create_host(
    config: HostConfig,
    *,
    num_cpus: float,
    label_selector: Mapping[str, str] | None,
    resources: Mapping[str, float] | None,
    placement_group: Any,
    bundle_index: int,
    node_id: str | None,
) -> Any:
    """Start one host actor where the caller asked (it is owned by this driver)."""
    options: dict[str, Any] = {
        "num_cpus": num_cpus,
        "max_restarts": 0,
        "max_task_retries": 0,
        "max_concurrency": 100_000,
    }
    if label_selector:
        options["label_selector"] = dict(label_selector)
    if resources:
        options["resources"] = dict(resources)
    if placement_group is not None:
        options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            placement_group=placement_group, placement_group_bundle_index=bundle_index
        )
    elif node_id is not None:
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
    host: Any = _RemoteHost
    return host.options(**options).remote(config)


def current_node() -> str | None:
    """This process's Ray node id (None outside a Ray job)."""
    try:
        return ray.get_runtime_context().get_node_id()
    except Exception:
        return None


_RAY: Any = ray  # Ray's own annotations leave much of its API untyped


def _alive_nodes() -> list[dict[str, Any]]:
    return [n for n in _RAY.nodes() if n.get("Alive", False)]


def node_labels() -> dict[str, dict[str, str]]:
    """Labels of every alive node, by node id."""
    return {n["NodeID"]: dict(n.get("Labels") or {}) for n in _alive_nodes()}


def nodes_with_cpus(cpus: float) -> list[str]:
    """Alive nodes with at least `cpus` CPUs, in Ray's order."""
    return [n["NodeID"] for n in _alive_nodes() if n.get("Resources", {}).get("CPU", 0) >= cpus]


def node_ip() -> str:
    """The IP Ray uses for this node (what hosts on it listen on for other nodes)."""
    return str(_RAY.util.get_node_ip_address())


async def probe(actor: Any, timeout: float) -> tuple[Liveness, str]:
    """Ask Ray whether a host lives: `dead` only when Ray says the actor died."""
    try:
        async with asyncio.timeout(timeout):
            await actor.ping.remote()
    except ActorDiedError as exc:
        return "dead", first_line(exc)
    except ActorUnavailableError as exc:
        return "unknown", first_line(exc)
    except RayActorError as exc:
        return "dead", first_line(exc)
    except TimeoutError:
        return "unknown", f"no answer to a ping within {timeout:g} s"
    return "alive", ""


def is_dead(exc: BaseException) -> bool:
    """Whether a Ray error means the actor is gone for good."""
    return isinstance(exc, RayActorError) and not isinstance(exc, ActorUnavailableError)


def kill(actor: Any) -> None:
    """End a host at once (no restart)."""
    with contextlib.suppress(Exception):
        _RAY.kill(actor, no_restart=True)


def first_line(exc: BaseException) -> str:
    """The first line of a Ray error's text (its tracebacks are long)."""
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


@ray.remote(num_cpus=0, max_retries=0)
def _sweep_node(bases: list[str]) -> dict[str, int]:
    # On the host's node, after the host is gone: processes still working in its directory
    # (a command that escaped its supervisor) are killed, then the directory is removed.
    killed = 0
    roots = [Path(b) for b in bases]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if any(cwd == r or r in cwd.parents for r in roots):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    removed = 0
    for root in roots:
        if root.exists():
            shutil.rmtree(root, ignore_errors=True)
            removed += 1
        parent = root.parent  # the pool's directory, once its last host is swept
        with contextlib.suppress(OSError):
            parent.rmdir()
    return {"killed": killed, "removed": removed}


async def sweep(node_id: str, bases: list[str]) -> dict[str, int] | None:
    """Remove what dead hosts left on a node; None when the node is gone too."""
    alive = {n["NodeID"] for n in _alive_nodes()}
    if node_id not in alive:
        return None
    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
    remote: Any = _sweep_node
    ref = remote.options(scheduling_strategy=strategy).remote(bases)
    try:
        async with asyncio.timeout(60):
            return await ref
    except Exception:
        return None
