"""The host's socket, attacked: nothing is unpickled or run for a peer without the secret.

A host serves on a Unix socket and on TCP; whoever reaches the port could ask it to run
commands, and a fake host could feed a client a pickle. Both sides prove the secret first.
These tests run a host in this process (no Ray needed) and play the attacker.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import socket
import struct
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from handrail.ray._channel import (
    MAGIC,
    NONCE,
    OK,
    Channel,
    ChannelClosed,
    Connection,
    client_handshake,
    pack,
)
from handrail.ray._host import HostConfig, HostCore
from handrail.ray._workspace import EmptyWorkspace

from .conftest import TOOLS

SECRET = os.urandom(32)


class _Canary:
    """Unpickling this creates a file: proof that a pickle was loaded."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (Path(self.path), "pwned"))


@pytest.fixture
async def host() -> AsyncIterator[tuple[HostCore, dict[str, Any]]]:
    short = tempfile.mkdtemp(prefix="hrw", dir="/tmp")  # the socket's path must fit sun_path
    core = HostCore(
        HostConfig(
            pool_id="wiretest" + os.urandom(3).hex(),
            index=0,
            tools=TOOLS.coding,
            secret=SECRET,
            max_sessions=4,
            command_slots=1,
            base_dir=short,
        )
    )
    where = await core.start()
    try:
        yield core, where
    finally:
        await core.shutdown()
        os.rmdir(short)


def frame(obj: object) -> bytes:
    data = pickle.dumps(obj)
    return struct.pack(">I", len(data)) + data


async def attack(address: Any, payload: bytes) -> bytes:
    """Send `payload` as an unauthenticated peer; what came back before the host hung up."""
    if isinstance(address, str):
        reader, writer = await asyncio.open_unix_connection(address)
    else:
        reader, writer = await asyncio.open_connection(*address)
    writer.write(payload)
    await writer.drain()
    got = b""
    try:
        async with asyncio.timeout(15):
            while chunk := await reader.read(65536):
                got += chunk
    finally:
        writer.close()
    return got


async def test_a_peer_without_the_secret_gets_nothing_unpickled_or_run(
    host: tuple[HostCore, dict[str, Any]], tmp_path: Path
) -> None:
    core, where = host
    canary = tmp_path / "canary"
    sid = "s1"
    info = await core.open(sid, EmptyWorkspace(), {"mode": "bypass"}, None, None)
    touched = Path(info["root"]) / "touched"
    run = (1, "call", (sid, "run_shell", {"command": "touch touched"}, "c1", None))
    for address in (where["unix"], tuple(where["tcp"])):
        # Skipping the handshake: frames straight away.
        await attack(address, frame(_Canary(str(canary))) + frame(run))
        # The magic and a nonce, then a made-up proof, then the frames.
        await attack(
            address, MAGIC + os.urandom(NONCE) + os.urandom(32) + frame(_Canary(str(canary)))
        )
    assert not canary.exists()
    assert not touched.exists()
    assert core.calls == 0

    # The real client, with the secret, is served.
    channel = await Channel.connect(where["unix"], SECRET, timeout=5)
    status, result, _ = await channel.request(*run[1:2], *run[2])
    assert status == OK and result.ok
    assert touched.exists()
    await channel.aclose()


async def test_a_client_refuses_a_host_that_does_not_know_the_secret(tmp_path: Path) -> None:
    canary = tmp_path / "canary"

    served: list[asyncio.StreamWriter] = []

    async def fake_host(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(writer)
        await reader.readexactly(len(MAGIC) + NONCE)
        writer.write(os.urandom(NONCE) + os.urandom(32))  # a proof it cannot make
        writer.write(frame((1, OK, _Canary(str(canary)), None)))
        await writer.drain()
        await reader.read()  # until the client hangs up

    server = await asyncio.start_server(fake_host, "127.0.0.1", 0)
    address = server.sockets[0].getsockname()[:2]
    try:
        with pytest.raises(ChannelClosed, match="failed authentication"):
            await Channel.connect(address, SECRET, timeout=5)
    finally:
        server.close()
        for writer in served:
            writer.close()
            await writer.wait_closed()
    assert not canary.exists()


async def test_a_long_base_dir_falls_back_to_an_abstract_socket_that_still_authenticates(
    tmp_path: Path,
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    core = HostCore(
        HostConfig(
            pool_id="wirelong",
            index=0,
            tools=TOOLS.coding,
            secret=SECRET,
            max_sessions=1,
            command_slots=1,
            base_dir=str(deep),
        )
    )
    where = await core.start()
    try:
        assert where["unix"].startswith("\0")
        await attack(where["unix"], frame((1, "stats", ())))
        assert core.calls == 0
        channel = await Channel.connect(where["unix"], SECRET, timeout=5)
        status, stats, _ = await channel.request("stats")
        assert status == OK and stats["sessions"] == 0
        await channel.aclose()
    finally:
        await core.shutdown()
    assert not (deep / "handrail-ray-wirelong").exists()


async def test_the_host_socket_is_private_to_its_user(
    host: tuple[HostCore, dict[str, Any]],
) -> None:
    _, where = host
    mode = os.stat(where["unix"]).st_mode & 0o777
    assert mode == 0o600
    assert os.stat(Path(where["unix"]).parent).st_mode & 0o077 == 0
    tcp_host = where["tcp"][0]
    assert tcp_host == "127.0.0.1"
    assert socket.inet_aton(tcp_host)


async def authenticated(
    address: str,
) -> tuple[Connection, Any, asyncio.Queue[Any], asyncio.Future[None]]:
    """A raw connection that passed the handshake: (conn, seal for sending, answers, ended)."""
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_unix_connection(Connection, address)
    out, into = await client_handshake(conn, SECRET)
    answers: asyncio.Queue[Any] = asyncio.Queue()
    ended: asyncio.Future[None] = loop.create_future()
    conn.start(into, answers.put_nowait, lambda exc: ended.done() or ended.set_result(None))
    return conn, out, answers, ended


async def test_frames_cut_anywhere_or_run_together_are_each_answered_in_order(
    host: tuple[HostCore, dict[str, Any]],
) -> None:
    # A socket delivers bytes, not frames: one frame may come a byte at a time, several in one
    # piece. Each must be answered once, in order, whatever the cut.
    _, where = host
    conn, out, answers, _ = await authenticated(where["unix"])
    try:
        sent = b"".join(pack((rid, "ping", ()), out) for rid in range(1, 7))
        cuts = [1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, len(sent)]
        at = 0
        for size in cuts:  # ragged pieces, the last one holding several frames
            conn.write(sent[at : at + size])
            at += size
            await asyncio.sleep(0.01)
        got = [await asyncio.wait_for(answers.get(), 15) for _ in range(6)]
        assert [a[0] for a in got] == [1, 2, 3, 4, 5, 6]
        assert {a[1] for a in got} == {OK}
    finally:
        conn.close()


@pytest.mark.parametrize("attack_kind", ["replayed", "tampered"])
async def test_a_replayed_or_tampered_frame_ends_the_connection_unrun(
    host: tuple[HostCore, dict[str, Any]], attack_kind: str
) -> None:
    # Someone on the path between a client and its host (TCP across nodes) can copy a frame
    # or flip its bytes: the host must run neither, and must hang up.
    core, where = host
    info = await core.open("s1", EmptyWorkspace(), {"mode": "bypass"}, None, None)
    marker = Path(info["root"]) / "count"
    conn, out, answers, ended = await authenticated(where["unix"])
    try:
        first = pack(
            (1, "call", ("s1", "run_shell", {"command": "echo x >> count"}, "c1", None)), out
        )
        conn.write(first)
        answer = await asyncio.wait_for(answers.get(), 30)
        assert answer[1] == OK and marker.read_text() == "x\n"
        if attack_kind == "replayed":
            bad = first
        else:
            again = pack(
                (2, "call", ("s1", "run_shell", {"command": "echo y >> count"}, "c2", None)), out
            )
            bad = again.replace(b"echo y", b"echo z")  # still a valid pickle
        conn.write(bad)
        await asyncio.wait_for(ended, 15)
        assert answers.empty()
        assert marker.read_text() == "x\n"
    finally:
        conn.close()


async def test_every_writer_waiting_for_the_socket_is_woken() -> None:
    # Two answers finishing while the send buffer is full both wait in drain(): both must go
    # on once the peer reads (a waiter left behind would hold its result for the host's life).
    loop = asyncio.get_running_loop()
    ours, peer = socket.socketpair()
    _, conn = await loop.create_unix_connection(Connection, sock=ours)
    try:
        conn.write(b"x" * (4 << 20))  # over the transport's high-water mark
        waiters = [asyncio.create_task(conn.drain()) for _ in range(3)]
        waiters[0].cancel()  # one caller giving up leaves the others waiting, not cancelled
        await asyncio.sleep(0.01)
        peer.setblocking(False)
        got = 0
        for _ in range(2000):  # bounded: at most ~2 s
            try:
                got += len(peer.recv(1 << 20))
            except BlockingIOError:
                await asyncio.sleep(0.001)
            if got >= 4 << 20:
                break
        await asyncio.wait_for(asyncio.gather(*waiters[1:]), 10)
    finally:
        conn.close()
        peer.close()
