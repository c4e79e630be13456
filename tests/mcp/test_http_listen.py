"""The listening sockets of `handrail serve --http`: what the connections they accept get."""

from __future__ import annotations

import asyncio
import socket

from handrail.mcp._http_listen import bind_sockets, close_all


async def test_accepted_connections_send_without_waiting_for_acks() -> None:
    # Without TCP_NODELAY every answer's second write waits for the client's delayed ACK
    # (about 40 ms on Linux): asyncio sets it on accepted sockets only when the listening
    # socket says it is TCP.
    sockets = bind_sockets("127.0.0.1", 0)
    seen: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    try:
        sockets[0].listen()
        server = await asyncio.start_server(accepted, sock=sockets[0])
        async with server:
            port = sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert await asyncio.wait_for(reader.read(), 10) == b"ok"
            writer.close()
            await writer.wait_closed()
    finally:
        close_all(sockets)
    assert len(seen) == 1 and seen[0] != 0


def test_every_address_of_a_name_is_tcp_on_one_port() -> None:
    sockets = bind_sockets("localhost", 0)
    try:
        assert sockets
        assert {s.proto for s in sockets} == {socket.IPPROTO_TCP}
        assert len({s.getsockname()[1] for s in sockets}) == 1
    finally:
        close_all(sockets)
