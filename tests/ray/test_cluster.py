"""A real two-node Ray cluster on this machine: label placement, calls over TCP, node loss.

The cluster is started with the `ray` CLI (token authentication on, its own temp dir, ports
picked free) and used from a driver in a subprocess (`_cluster_driver.py`), because the rest of
the suite keeps a local `ray.init` in the pytest process. `ray stop` would stop every Ray on
the machine, so teardown ends this cluster's processes by PID: whatever mentions its temp dir,
and everything below those.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.ray,
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("nsenter") is None,
        reason="needs root and unshare/nsenter for a loopback-only network namespace",
    ),
]

DRIVER = Path(__file__).with_name("_cluster_driver.py")
RESULT = "CLUSTER-RESULT "
MARKER = "HANDRAIL_TEST_RAY_CLUSTER"
"""Set for every process the test starts; an extra way to recognise them."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def _read(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        return b""


class _Cluster:
    """Two Ray nodes on this machine, started with `ray start` and ended by PID.

    Everything runs in a network namespace of the test's own that has only a loopback
    device: Ray would otherwise take the machine's address for a cluster (it refuses
    127.0.0.1 when it can find another) and listen on every interface.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.temp = root / "r"
        self.token = root / "token"
        self.address = f"127.0.0.1:{_free_port()}"
        self.netns: subprocess.Popen[bytes] | None = None

    def enter(self) -> None:
        """Make the network namespace (a process that holds it open, lo up)."""
        self.netns = subprocess.Popen(
            ["unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec sleep infinity"],
            env=self.env(),
        )
        give_up = time.monotonic() + 10
        while time.monotonic() < give_up:  # bounded: until lo is up in the namespace
            done = subprocess.run(
                [*self.inside(), "ip", "-brief", "addr", "show", "lo"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            if "127.0.0.1" in done.stdout and "DOWN" not in done.stdout:
                return
            time.sleep(0.05)
        pytest.fail("could not make a network namespace with loopback up")

    def inside(self) -> list[str]:
        """The prefix that runs a command in the namespace."""
        assert self.netns is not None
        return ["nsenter", f"--net=/proc/{self.netns.pid}/ns/net", "--"]

    def env(self) -> dict[str, str]:
        # conftest's RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 (one-node Ray on 127.0.0.1) would make
        # `ray start` refuse a second node; in the namespace loopback is all there is anyway.
        dropped = {"RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"}
        dropped.add("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        # A joining node does not pick token mode up by itself: every process is told. The
        # token lives in the test's directory, so ~/.ray/auth_token is neither read nor written.
        env.update(
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN_PATH=str(self.token),
            RAY_USAGE_STATS_ENABLED="0",
            **{MARKER: str(self.root)},
        )
        return env

    def _ray(self, *args: str) -> None:
        cmd = [*self.inside(), sys.executable, "-m", "ray.scripts.scripts", *args]
        done = subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=90)
        if done.returncode != 0:
            pytest.fail(f"{' '.join(args[:2])} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")

    def start(self) -> None:
        fd = os.open(self.token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        port = self.address.rsplit(":", 1)[1]
        self._ray(
            "start",
            "--head",
            f"--port={port}",
            "--labels=zone=a",
            "--include-dashboard=false",
            f"--dashboard-port={_free_port()}",
            *self._node_options(),
        )
        self._ray(
            "start",
            f"--address={self.address}",
            "--labels=zone=b",
            '--resources={"node_b": 4}',
            *self._node_options(),
        )

    def _node_options(self) -> list[str]:
        # Ports of its own for each node where Ray's defaults are fixed, so the two nodes,
        # and any other Ray on this machine, do not collide.
        # Outside a namespace, Ray would turn 127.0.0.1 into the machine's routable address
        # (it refuses loopback for a cluster when it finds another) and listen on every
        # interface: in the test's own network namespace there is only loopback.
        return [
            "--node-ip-address=127.0.0.1",
            "--num-cpus=1",
            f"--temp-dir={self.temp}",
            "--disable-usage-stats",
            "--min-worker-port=0",
            "--max-worker-port=0",
            *(
                f"--{name}-port={_free_port()}"
                for name in (
                    "node-manager",
                    "object-manager",
                    "dashboard-agent-listen",
                    "dashboard-agent-grpc",
                    "runtime-env-agent",
                    "metrics-export",
                )
            ),
        ]

    def processes(self) -> dict[int, str]:
        """This cluster's live processes: what names its directory, and everything below."""
        table: dict[int, int] = {}
        seeds: set[int] = set()
        root = str(self.root).encode()
        mark = f"{MARKER}={self.root}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            pid = int(entry.name)
            st = _stat(pid)
            if st is None or st[0] in "ZX":
                continue
            table[pid] = st[1]
            try:
                cwd = os.readlink(entry / "cwd").encode()
            except OSError:
                cwd = b""
            # Ray renames its agents and workers (their argv and environ are overwritten);
            # those are found as descendants of the raylets.
            if (
                root in _read(f"/proc/{pid}/cmdline")
                or mark in _read(f"/proc/{pid}/environ").split(b"\0")
                or cwd.startswith(root)
            ):
                seeds.add(pid)
        ours = set(seeds)
        grew = True
        while grew:
            below = {pid for pid, ppid in table.items() if ppid in ours} - ours
            ours |= below
            grew = bool(below)
        return {
            pid: _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode(errors="replace")[:200]
            for pid in sorted(ours)
        }

    def stop(self) -> dict[int, str]:
        """`ray stop --force` for this cluster only: SIGKILL by PID; what is left after."""
        for _ in range(3):
            pids = self.processes()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            give_up = time.monotonic() + 10
            while time.monotonic() < give_up and any(
                (st := _stat(p)) is not None and st[0] not in "ZX" for p in pids
            ):
                time.sleep(0.1)
        if self.netns is not None:
            with contextlib.suppress(ProcessLookupError):
                self.netns.kill()
            self.netns.wait(10)
        return self.processes()


def _token_file() -> tuple[int, int] | None:
    path = Path.home() / ".ray" / "auth_token"
    with contextlib.suppress(OSError):
        st = path.stat()
        return st.st_mtime_ns, st.st_size
    return None


@pytest.fixture(scope="module")
def seen() -> Iterator[dict[str, Any]]:
    """Start the cluster, run the driver once, and give its observations."""
    users_token = _token_file()
    # Short on purpose: Ray's Unix sockets live under --temp-dir and must fit in 107 bytes,
    # which pytest's tmp_path would overrun.
    root = Path(tempfile.mkdtemp(prefix="hr-ray-", dir="/tmp"))
    cluster = _Cluster(root)
    try:
        started = time.monotonic()
        cluster.enter()
        cluster.start()
        work = root / "w"
        work.mkdir()
        done = subprocess.run(
            [*cluster.inside(), sys.executable, str(DRIVER), cluster.address, str(work)],
            env=cluster.env(),
            capture_output=True,
            text=True,
            timeout=180,
        )
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith(RESULT)]
        if not lines:
            pytest.fail(f"the driver said nothing:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        seen = json.loads(lines[-1][len(RESULT) :])
        seen["cluster_s"] = round(time.monotonic() - started, 1)
        yield seen
    finally:
        left = cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert left == {}, f"processes of the test cluster outlived it: {left}"
    assert _token_file() == users_token, "~/.ray/auth_token was changed"


def test_two_node_cluster(seen: dict[str, Any]) -> None:
    assert "failed" not in seen, seen["failed"]
    assert seen["zones"] == ["a", "b"]
    assert seen["driver_zone"] == "a"

    # One host per node (hosts=None); a session lands on the node its labels name, and the
    # driver on the head reaches node B's host over TCP, its own node's over the Unix socket.
    assert sorted(h["zone"] for h in seen["hosts"]) == ["a", "b"]
    assert seen["session_b_zone"] == "b"
    assert seen["session_a_zone"] == "a"
    assert seen["session_b_tcp"] is True
    # In the test's network namespace there is nothing but loopback to use.
    assert seen["node_ips"] == ["127.0.0.1"] and seen["session_b_host_ip"] == "127.0.0.1"
    assert seen["session_a_unix"] is True

    # Read-before-edit holds across calls in the remote session; the shell sees the edit.
    files = seen["files"]
    assert [files[k]["ok"] for k in ("write", "read", "edit", "cat")] == [True] * 4, files
    assert files["cat"]["content"] == "alpha\ngamma"

    # A placement group the driver owns puts a pool's host on node B.
    assert seen["pg_host_zone"] == "b"
    assert seen["pg_call"]["ok"], seen["pg_call"]

    # Someone without the secret reaches the host's TCP port with a pickle that would make
    # a file: nothing is unpickled, the connection is dropped, the host serves on.
    assert seen["control_made"] is True  # the payload does make the file when loaded
    assert seen["canary_made"] is False
    assert seen["tamper_hello"]["closed"] is True
    assert seen["tamper_raw"] == {"closed": True, "bytes_back": 0}
    assert seen["b_after_tamper"]["content"] == "1\talpha\n2\tgamma"

    # Node B dies (kill -9 of its raylet) while `sleep 60` runs there: the call ends as
    # SESSION_LOST that may have run, well before the command would have finished.
    assert seen["raylet_is_raylet"] is True
    assert seen["sleep_started"] is True
    assert seen["inflight"]["error"] == "SESSION_LOST", seen["inflight"]
    assert seen["inflight"]["executed"] == "unknown"
    assert seen["session_b_lost"] is True
    # Later calls of that session answer at once, and did not run.
    assert seen["later_b"]["error"] == "SESSION_LOST"
    assert seen["later_b"]["executed"] == "no"
    # The other node is untouched.
    assert seen["a_write"]["ok"], seen["a_write"]
    assert seen["a_cat"]["content"] == "still here"
    # A new session that asks for zone b does not land elsewhere.
    assert seen["reopen_b"]["lost"] == "BACKEND_UNAVAILABLE", seen["reopen_b"]

    # close() removes everything it can reach: only the dead node's host directory is left
    # (the sweep needs the node alive; on a real cluster that disk is on the dead machine).
    pool = f"handrail-ray-{seen['pool_id']}"
    assert seen["dirs_left"] in ([], [pool])
    dead = f"{pool}/host-{seen['dead_host']}"
    assert all(p == dead or p.startswith(dead + "/") for p in seen["pool_dir_left"] or [])


def test_node_loss_leaves_no_command_running(seen: dict[str, Any]) -> None:
    assert "failed" not in seen, seen["failed"]
    assert seen["sleep_started"] is True
    assert seen["sleep_pids_left"] == []
    assert seen["sleep_left"] == []
