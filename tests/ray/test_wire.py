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

from handrail.ray._host import HostConfig, HostCore
from handrail.ray._wire import MAGIC, NONCE, OK, Channel, ChannelClosed
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
