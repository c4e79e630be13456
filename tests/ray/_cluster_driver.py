"""The driver of `test_cluster.py`: `python _cluster_driver.py ADDRESS DIR`.

It connects to the two-node cluster at ADDRESS, works through `SessionPool` (placement by label
and by placement group, a session over TCP, a forged connection, the loss of node B while a
command runs, `close`) and prints one line, `CLUSTER-RESULT {json}`, of what it saw; the test
asserts on it. Everything it makes goes under DIR. It runs in its own process because the rest
of the suite keeps a local `ray.init` in the pytest process.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ray.util.placement_group import placement_group, remove_placement_group

import ray
from handrail.ray import SessionPool
from handrail.ray._channel import MAGIC, NONCE

RESULT = "CLUSTER-RESULT "
SLEEP = "sleep 600"  # far longer than any wait here: a result means the loss was seen
ALLOW = ["write_file", "read_file", "edit_file", "run_shell(cat:*)", f"run_shell({SLEEP})"]


def _result(r: Any) -> dict[str, Any]:
    """What the test needs of a `ToolResult`."""
    return {
        "ok": r.ok,
        "error": r.error.name if r.error is not None else None,
        "content": r.content[:300],
        "executed": r.metadata.get("executed"),
        "reason": r.metadata.get("reason"),
    }


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _processes_in(root: Path, needle: str) -> list[int]:
    """Live processes whose command line holds `needle` and whose cwd is under `root`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if needle not in _cmdline(pid) or not _alive(pid):
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(root)):
            found.append(pid)
    return found


class _Canary:
    """A pickle that creates `path` when it is loaded: the attacker's payload."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def _frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack(">I", len(data)) + data


def _tamper(address: tuple[str, int], payload: bytes, *, hello: bool) -> dict[str, Any]:
    """Connect without the secret, send the payload; what came back and whether it closed."""
    got = b""
    closed = False
    with socket.create_connection(address, timeout=5) as sock:
        if hello:
            sock.sendall(MAGIC + os.urandom(NONCE))
        sock.sendall(payload)
        give_up = time.monotonic() + 15
        try:
            while time.monotonic() < give_up:
                chunk = sock.recv(4096)
                if not chunk:
                    closed = True
                    break
                got += chunk
        except ConnectionResetError:
            closed = True
        except TimeoutError:
            pass
    return {"closed": closed, "bytes_back": len(got)}


async def scenario(address: str, work: Path, out: dict[str, Any]) -> None:
    t = time.monotonic()
    ray.init(address=address, log_to_driver=False, logging_level="warning")
    out["connect_s"] = round(time.monotonic() - t, 2)
    for _ in range(150):  # `ray start` returns before the head may list node B
        nodes = [n for n in ray.nodes() if n["Alive"]]
        if len(nodes) >= 2:
            break
        await asyncio.sleep(0.2)
    zone = {n["NodeID"]: n.get("Labels", {}).get("zone") for n in nodes}
    out["zones"] = sorted(z for z in zone.values() if z)
    driver_node = ray.get_runtime_context().get_node_id()
    out["driver_zone"] = zone.get(driver_node)
    hosts_dir = work / "hosts"
    pool = SessionPool(
        host_cpus=0.5,
        base_dir=str(hosts_dir),
        cache_dir=str(work / "cache"),
        lost_after=60,
    )
    out["pool_id"] = pool.id
    try:
        t = time.monotonic()
        await pool.start()
        out["start_s"] = round(time.monotonic() - t, 2)
        out["hosts"] = [
            {"zone": zone.get(link.node_id), "tcp": isinstance(link.address, tuple)}
            for link in pool.links
        ]
        options: dict[str, Any] = {"mode": "accept_edits", "allow": ALLOW}
        rb = await pool.open(labels={"zone": "b"}, **options)
        ra = await pool.open(labels={"zone": "a"}, **options)
        out["session_b_zone"] = zone.get(rb.node_id or "")
        out["session_a_zone"] = zone.get(ra.node_id or "")
        link_b = pool.links[rb.host or 0]
        link_a = pool.links[ra.host or 0]
        out["session_b_tcp"] = isinstance(link_b.address, tuple)
        out["node_ips"] = sorted({n["NodeManagerAddress"] for n in ray.nodes()})
        out["session_b_host_ip"] = link_b.address[0] if isinstance(link_b.address, tuple) else ""
        out["session_a_unix"] = isinstance(link_a.address, str)
        out["dead_host"] = link_b.index

        # Files across calls on node B, over TCP: the edit needs the read of an earlier call.
        path = "notes.txt"
        steps = {
            "write": await rb.call("write_file", {"file_path": path, "content": "alpha\nbeta\n"}),
            "read": await rb.call("read_file", {"file_path": path}),
            "edit": await rb.call(
                "edit_file", {"file_path": path, "old_string": "beta", "new_string": "gamma"}
            ),
            "cat": await rb.call("run_shell", {"command": f"cat {path}"}),
        }
        out["files"] = {k: _result(v) for k, v in steps.items()}

        # The attacker's view: the host's TCP port, no secret, a pickle that would make a file.
        assert isinstance(link_b.address, tuple)
        canary, control = work / "canary", work / "control"
        pickle.loads(pickle.dumps(_Canary(control))).close()  # the payload works when loaded
        out["control_made"] = control.exists()
        payload = _frame(_Canary(canary)) + _frame((1, "call", ()))
        out["tamper_hello"] = _tamper(link_b.address, payload, hello=True)
        out["tamper_raw"] = _tamper(link_b.address, payload, hello=False)
        await asyncio.sleep(0.5)
        out["canary_made"] = canary.exists()
        out["b_after_tamper"] = _result(await rb.call("read_file", {"file_path": path}))

        # A placement group the driver owns, its bundle on node B, places a host there.
        t = time.monotonic()
        pg = placement_group([{"CPU": 0.5, "node_b": 1}])
        await asyncio.wait_for(pg.ready(), 60)
        pg_pool = SessionPool(
            hosts=1,
            host_cpus=0.5,
            placement_group=pg,
            base_dir=str(hosts_dir),
            cache_dir=str(work / "cache"),
        )
        try:
            await pg_pool.start()
            out["pg_host_zone"] = zone.get(pg_pool.links[0].node_id)
            rp = await pg_pool.open(**options)
            out["pg_call"] = _result(
                await rp.call("write_file", {"file_path": "x", "content": "x"})
            )
        finally:
            await pg_pool.close()
            remove_placement_group(pg)
        out["pg_s"] = round(time.monotonic() - t, 2)

        # Node B dies (kill -9 of its raylet) while a command runs in the zone=b session.
        stats = {s["host"]: s for s in await pool.stats()}
        host_pid = stats[link_b.index]["pid"]
        raylet = int(Path(f"/proc/{host_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        out["raylet_is_raylet"] = "raylet" in _cmdline(raylet)
        assert out["raylet_is_raylet"], _cmdline(raylet)
        inflight = asyncio.ensure_future(rb.call("run_shell", {"command": SLEEP}))
        sleepers: list[int] = []
        give_up = time.monotonic() + 15
        while not sleepers and time.monotonic() < give_up and not inflight.done():
            await asyncio.sleep(0.1)
            sleepers = _processes_in(hosts_dir, SLEEP)
        out["sleep_started"] = bool(sleepers)
        t0 = time.monotonic()
        os.kill(raylet, signal.SIGKILL)
        try:
            lost = await asyncio.wait_for(inflight, 120)
            out["inflight"] = _result(lost)
        except TimeoutError:
            out["inflight"] = {"error": "no answer within 120 s"}
        out["inflight_s"] = round(time.monotonic() - t0, 2)
        out["session_b_lost"] = rb.lost is not None

        t = time.monotonic()
        out["later_b"] = _result(await rb.call("read_file", {"file_path": path}))
        out["later_b_s"] = round(time.monotonic() - t, 3)

        # The other node is untouched: its session goes on.
        out["a_write"] = _result(
            await ra.call("write_file", {"file_path": "a.txt", "content": "still here\n"})
        )
        out["a_cat"] = _result(await ra.call("run_shell", {"command": "cat a.txt"}))

        # A new session that wants zone b: no host is left there.
        t = time.monotonic()
        rb2 = await pool.open(labels={"zone": "b"}, **options)
        out["reopen_b"] = {
            "lost": rb2.lost.error.name if rb2.lost is not None and rb2.lost.error else None,
            "reason": rb2.lost.metadata.get("reason") if rb2.lost is not None else None,
            "s": round(time.monotonic() - t, 2),
        }
    finally:
        t = time.monotonic()
        await pool.close()
        out["close_s"] = round(time.monotonic() - t, 2)
    # What outlived the pool: the command, the hosts' directories.
    await asyncio.sleep(1.0)
    out["sleep_pids_left"] = [pid for pid in sleepers if _alive(pid)]
    out["sleep_left"] = _processes_in(work, SLEEP)
    pool_dir = hosts_dir / f"handrail-ray-{pool.id}"
    out["pool_dir_left"] = (
        sorted(str(p.relative_to(hosts_dir)) for p in pool_dir.rglob("*") if p.is_dir())
        if pool_dir.exists()
        else None
    )
    out["dirs_left"] = sorted(p.name for p in hosts_dir.glob("handrail-ray-*"))


def main() -> None:
    address, work = sys.argv[1], Path(sys.argv[2])
    out: dict[str, Any] = {}
    try:
        asyncio.run(asyncio.wait_for(scenario(address, work, out), 150))
    except BaseException as exc:  # report what was seen, and why it stopped
        out["failed"] = "".join(traceback.format_exception(exc))[-3000:]
    print(RESULT + json.dumps(out), flush=True)
    try:
        ray.shutdown()
    finally:
        os._exit(0)  # Ray's threads must not hold the test up


if __name__ == "__main__":
    main()
