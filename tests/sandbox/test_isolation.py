"""A sandboxed command sees only its own session.

Each probe plants something another process, session or program owns — a token on a process's
command line and in its environment, a file and a listening socket in the host's /tmp, a
socket under /run, an abstract socket, another session's spilled result — and asserts that a
command cannot read it or connect to it (the listeners count connections: zero means zero),
while what the session needs (its workspace under /tmp, its own /tmp across commands, its
results folder, a socket the user allowed) keeps working.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail import Registry, Runtime, Session
from handrail.builtin import RunShell
from handrail.sandbox import sandbox_support

SUPPORT = sandbox_support()
pytestmark = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.fresh_proc and SUPPORT.hides_paths),
    reason="this machine cannot give a command its own /proc and /tmp",
)


def runtime(ws: Path, **shell: object) -> Runtime:
    return Runtime(Registry([RunShell(**shell)]), root=ws, mode="bypass")


class Listener:
    """A Unix socket server that counts the connections it accepts."""

    def __init__(self, address: str | bytes) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        for _ in range(10_000):  # bounded: about 1000 s at most, stopped long before
            if self._stop.is_set():
                return
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@contextlib.contextmanager
def listening(address: str | bytes) -> Iterator[Listener]:
    listener = Listener(address)
    try:
        yield listener
    finally:
        listener.close()
        if isinstance(address, str):
            with contextlib.suppress(OSError):
                os.unlink(address)


def connect_line(path: str, abstract: bool = False) -> str:
    address = f"'\\0{path}'" if abstract else repr(path)
    return (
        f'{sys.executable} -c "import socket; s = socket.socket(socket.AF_UNIX); '
        f"s.connect({address}); print('CONNECTED')\""
    )


async def test_proc_shows_no_other_process(tmp_path: Path) -> None:
    token = f"TOKEN-CANARY-{uuid.uuid4().hex}"
    # An MCP server with a token on its command line and in its environment.
    other = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import time; time.sleep(30)",
        token,
        env={**os.environ, "SERVER_SECRET": token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with runtime(tmp_path) as rt:
            r = await rt.call(
                "run_shell",
                {
                    "command": (
                        "cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' ' '; "
                        f"ls /proc/{other.pid}/fd; ps -eo pid,args; echo pid1=$(cat /proc/1/comm)"
                    )
                },
            )
    finally:
        assert other.returncode is None  # it was running all along
        other.kill()
        await other.wait()
    assert token not in r.content
    assert "pid1=bash" in r.content
    # Only the command's own processes: a handful, not the machine's.
    ps_lines = [line for line in r.content.splitlines() if line.strip()[:1].isdigit()]
    assert len(ps_lines) <= 6, r.content


async def test_tmp_is_the_sessions_own_and_lasts_for_the_session(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "in_ws.txt").write_text("workspace\n")
    host_tmp_secret = Path("/tmp") / f"handrail-canary-{uuid.uuid4().hex}"
    host_tmp_secret.write_text("HOST-TMP-CANARY\n")
    try:
        # Another session spilled a result holding a secret.
        other = Session()
        (other.results_path() / "call_9.txt").write_text("OTHER-SESSION-CANARY\n")
        async with runtime(ws) as rt:
            first = await rt.call(
                "run_shell",
                {
                    "command": (
                        f"cat {host_tmp_secret}; cat {other.results_path()}/call_9.txt; "
                        "ls /tmp; echo kept > /tmp/note.txt; cat in_ws.txt; pwd"
                    )
                },
            )
            second = await rt.call("run_shell", {"command": "cat /tmp/note.txt; echo $TMPDIR"})
        await other.aclose()
    finally:
        host_tmp_secret.unlink()
    assert "HOST-TMP-CANARY" not in first.content
    assert "OTHER-SESSION-CANARY" not in first.content
    assert "workspace" in first.content and str(ws) in first.content
    assert "kept" in second.content and "/tmp" in second.content
    # The note went to the session's folder, not the host's /tmp.
    assert (
        not (Path("/tmp") / "note.txt").exists()
        or "kept" not in (Path("/tmp") / "note.txt").read_text()
    )


async def test_the_sessions_results_stay_readable_not_writable(tmp_path: Path) -> None:
    async with runtime(tmp_path) as rt:
        big = await rt.call("run_shell", {"command": "seq 1 40000"})
        spill = big.metadata["output_file"]
        r = await rt.call(
            "run_shell", {"command": f"tail -n 1 {spill}; echo x >> {spill} || echo refused"}
        )
    assert "40000" in r.content
    assert "refused" in r.content


async def test_other_programs_unix_sockets_cannot_be_reached(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:12]
    in_tmp = f"/tmp/handrail-sock-{tag}"
    run_dir = Path("/run") / f"handrail-test-{tag}"
    if not os.access("/run", os.W_OK):
        pytest.skip("cannot create a socket under /run here")
    run_dir.mkdir()
    in_run = str(run_dir / "agent.sock")
    elsewhere_dir = Path("/var/lib") / f"handrail-test-{tag}"
    if not os.access("/var/lib", os.W_OK):
        pytest.skip("cannot create a socket under /var/lib here")
    elsewhere_dir.mkdir()
    elsewhere = str(elsewhere_dir / "ide.sock")
    try:
        with (
            listening(in_tmp) as a,
            listening(in_run) as b,
            listening(elsewhere) as c,
            listening(f"\0handrail-abstract-{tag}".encode()) as d,
        ):
            for network in (False, True):
                async with runtime(tmp_path, network=network) as rt:
                    r = await rt.call(
                        "run_shell",
                        {
                            "command": "; ".join(
                                [
                                    connect_line(in_tmp),
                                    connect_line(in_run),
                                    connect_line(elsewhere),
                                    connect_line(f"handrail-abstract-{tag}", abstract=True),
                                ]
                            )
                        },
                    )
                assert "CONNECTED" not in r.content, r.content
            await asyncio.sleep(0.2)
            assert (a.accepted, b.accepted, c.accepted, d.accepted) == (0, 0, 0, 0)
    finally:
        with contextlib.suppress(OSError):
            run_dir.rmdir()
        with contextlib.suppress(OSError):
            elsewhere_dir.rmdir()


async def test_a_socket_the_user_allowed_is_reachable(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:12]
    if not os.access("/run", os.W_OK):
        pytest.skip("cannot create a socket under /run here")
    run_dir = Path("/run") / f"handrail-test-{tag}"
    run_dir.mkdir()
    path = str(run_dir / "db.sock")
    try:
        with listening(path) as server:
            async with runtime(tmp_path, unix_sockets=[path]) as rt:
                r = await rt.call("run_shell", {"command": connect_line(path)})
            assert "CONNECTED" in r.content, r.content
            await asyncio.sleep(0.2)
            assert server.accepted == 1
    finally:
        with contextlib.suppress(OSError):
            run_dir.rmdir()


async def test_run_is_empty_but_the_resolver_files(tmp_path: Path) -> None:
    async with runtime(tmp_path) as rt:
        r = await rt.call("run_shell", {"command": "ls -A /run /var/tmp /dev/shm; cat /etc/hosts"})
    listed = r.content.split("/var/tmp:")[0]
    for name in ("user", "dbus", "postgresql", "lock"):
        assert f"\n{name}\n" not in listed, r.content
    assert "localhost" in r.content


KERNEL_PROBE = r"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
seg = libc.shmget(KEY, 0, 0)
if seg >= 0:
    addr = libc.shmat(seg, None, 0)
    print("SHM", ctypes.string_at(addr, 40))
else:
    print("no segment")
print("add_key", libc.syscall(248, b"user", b"handrail-probe", b"v", 1, -4))
try:
    socket.socket(40, socket.SOCK_STREAM)
    print("VSOCK-OPEN")
except OSError:
    print("no vsock")
for dev in ("/dev/pts/0", "/dev/loop-control", "/dev/kmsg", "/dev/vda", "/dev/sda"):
    print(dev, os.path.exists(dev))
print(open("/proc/self/status").read().split("CapBnd:")[1].split()[0])
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the probe uses x86_64 syscall numbers")
async def test_host_kernel_state_is_out_of_reach(tmp_path: Path) -> None:
    # A System V segment of the host's holding a canary, the keyring, a vsock to the
    # hypervisor, other terminals and devices: none reachable from a confined command.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    key = 0x4A5D0000 + uuid.uuid4().int % 0xFFFF
    seg = libc.shmget(key, 4096, 0o1600)  # IPC_CREAT | 0600
    assert seg >= 0
    addr = libc.shmat(seg, None, 0)
    ctypes.memmove(addr, b"HOST-SHM-CANARY", 15)
    try:
        probe = tmp_path / "probe.py"
        probe.write_text(KERNEL_PROBE.replace("KEY", str(key)))
        async with runtime(tmp_path) as rt:
            r = await rt.call("run_shell", {"command": f"{sys.executable} {probe}"})
    finally:
        libc.shmdt(ctypes.c_void_p(addr))
        libc.shmctl(seg, 0, None)  # IPC_RMID
    assert "HOST-SHM-CANARY" not in r.content and "no segment" in r.content, r.content
    assert "add_key -1" in r.content and "no vsock" in r.content
    assert all(f"{dev} False" in r.content for dev in ("/dev/pts/0", "/dev/loop-control"))
    if os.geteuid() == 0:  # root keeps only what acting on its own files needs
        assert "00000000000004fb" in r.content


async def test_an_unasked_line_reaches_no_socket_not_even_in_the_workspace(tmp_path: Path) -> None:
    # A dev server, a language server or an approved background job listening in the
    # workspace: a line nobody approved cannot drive it (an approved one can).
    ws = tmp_path / "ws"
    ws.mkdir()
    path = str(ws / "dev.sock")

    class Misjudging(RunShell):  # a classifier that called the line read-only
        @staticmethod
        def read_only(args: object) -> bool:
            return True

    with listening(path) as server:
        async with Runtime(Registry([Misjudging()]), root=ws) as rt:  # default mode: unasked
            unasked = await rt.call("run_shell", {"command": connect_line(path)})
        async with runtime(ws) as rt:  # bypass: the write roots, and the workspace's sockets
            approved = await rt.call("run_shell", {"command": connect_line(path)})
        await asyncio.sleep(0.2)
    assert unasked.metadata["writes"] == "tmpdir" and "CONNECTED" not in unasked.content
    assert "CONNECTED" in approved.content
    assert server.accepted == 1
