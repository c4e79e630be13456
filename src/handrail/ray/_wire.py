"""The hot path between a client and a session host: authenticated frames over a socket.

Ray places the hosts, supervises them and reports their deaths; the calls themselves travel
over a socket the host serves. An actor method round trip costs about 1 ms on a small machine,
this channel about 0.1 ms (`bench/ray.py` measures both).

Nothing is unpickled before a mutual challenge-response with the pool's secret (HMAC-SHA256
over both sides' nonces): a process that does not hold the secret can neither make a host run a
call nor feed a client a pickle. Each side then derives a key per direction from the secret and
both nonces, and every frame carries a tag (HMAC-SHA256 over its sequence number and its bytes,
16 bytes kept), checked before the frame is unpickled: whoever sits on the path cannot inject,
replay or reorder frames either. A frame is a 4-byte big-endian length, the tag, the pickle.
The secret reaches the hosts through Ray (the actor's constructor), like everything else Ray
carries; the channel is authenticated, not encrypted, as Ray's own gRPC is by default.

Client to host: `(rid, op, args)`. Host to client: `(rid, status, value, extra)`, where status
is `OK`, `ERROR` (value: the exception's text), `ITEM` (one streamed item) or `END`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import os
import pickle
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from .._contract import ToolResult

__all__ = [
    "END",
    "ERROR",
    "ITEM",
    "OK",
    "Channel",
    "ChannelClosed",
    "Extra",
    "RemoteError",
    "client_handshake",
    "serve_connection",
]

MAGIC = b"HRW1"
NONCE = 32
MAX_FRAME = 1 << 30
HANDSHAKE_SECONDS = 10.0
OK, ERROR, ITEM, END = 0, 1, 2, 3
_LEN = struct.Struct(">I")
_HIGH_WATER = 1 << 20


class ChannelClosed(ConnectionError):
    """The connection to the host ended (the host died, or the network broke)."""


class RemoteError(RuntimeError):
    """The host refused or failed an operation (not a tool call: those end as results)."""


def _mac(secret: bytes, label: bytes, *parts: bytes) -> bytes:
    return hmac.new(secret, label + b"".join(parts), hashlib.sha256).digest()


TAG = 16


class Seal:
    """One direction's frame tags: HMAC-SHA256 over a sequence number and the frame."""

    __slots__ = ("key", "seq")

    def __init__(self, key: bytes) -> None:
        self.key = key
        self.seq = 0

    def tag(self, data: bytes) -> bytes:
        """The next frame's tag (each tag is used once, in order)."""
        seq = self.seq
        self.seq = seq + 1
        return hmac.digest(self.key, seq.to_bytes(8, "big") + data, "sha256")[:TAG]


def _seals(secret: bytes, client: bytes, host: bytes) -> tuple[Seal, Seal]:
    """(client to host, host to client) for one connection."""
    key = _mac(secret, b"keys", client, host)
    return Seal(_mac(key, b"c2h")), Seal(_mac(key, b"h2c"))


def pack(obj: Any, seal: Seal) -> bytes:
    """One frame: length, tag, then the pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(data)) + seal.tag(data) + data


async def read_frame(reader: asyncio.StreamReader, seal: Seal) -> Any:
    """The next frame's object, once its tag checks out.

    EOF and short reads raise `asyncio.IncompleteReadError`; a bad tag or size `ChannelClosed`.
    """
    (size,) = _LEN.unpack(await reader.readexactly(4))
    if size > MAX_FRAME:
        raise ChannelClosed(f"frame of {size} bytes is over the limit")
    block = await reader.readexactly(TAG + size)
    data = block[TAG:]
    if not hmac.compare_digest(block[:TAG], seal.tag(data)):
        raise ChannelClosed("a frame failed authentication")
    return pickle.loads(data)


async def client_handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, secret: bytes
) -> tuple[Seal, Seal]:
    """Prove we hold the secret and check that the host does; raises `ChannelClosed`.

    Returns the seals (for what we send, for what we read).
    """
    mine = os.urandom(NONCE)
    try:
        writer.write(MAGIC + mine)
        async with asyncio.timeout(HANDSHAKE_SECONDS):
            answer = await reader.readexactly(NONCE + 32)
    except (TimeoutError, asyncio.IncompleteReadError, OSError) as exc:
        raise ChannelClosed(f"the host did not complete the handshake: {exc!r}") from None
    theirs, proof = answer[:NONCE], answer[NONCE:]
    if not hmac.compare_digest(proof, _mac(secret, b"host", mine, theirs)):
        raise ChannelClosed("the host failed authentication (wrong secret)")
    try:
        writer.write(_mac(secret, b"client", theirs, mine))
        await writer.drain()
    except OSError as exc:
        raise ChannelClosed(f"the host hung up during the handshake: {exc!r}") from None
    return _seals(secret, mine, theirs)


async def _server_handshake(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, secret: bytes
) -> tuple[Seal, Seal] | None:
    # The seals (for what the host sends, for what it reads), or None: hang up.
    try:
        async with asyncio.timeout(HANDSHAKE_SECONDS):
            hello = await reader.readexactly(len(MAGIC) + NONCE)
            if hello[: len(MAGIC)] != MAGIC:
                return None
            theirs = hello[len(MAGIC) :]
            mine = os.urandom(NONCE)
            writer.write(mine + _mac(secret, b"host", theirs, mine))
            proof = await reader.readexactly(32)
    except (TimeoutError, asyncio.IncompleteReadError, OSError):
        return None
    if not hmac.compare_digest(proof, _mac(secret, b"client", mine, theirs)):
        return None
    to_host, to_client = _seals(secret, theirs, mine)
    return to_client, to_host


Handler = Callable[..., Any]
"""A host operation: returns a value, or an awaitable of one. A handler whose name ends in
`_stream` gets a `send(item)` callable first and streams items before its final value."""


async def serve_connection(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    secret: bytes,
    handlers: Mapping[str, Handler],
    streams: Mapping[str, Callable[..., Awaitable[Any]]],
) -> None:
    """Serve one client until it disconnects; its unfinished operations are cancelled."""
    tasks: dict[int, asyncio.Task[Any]] = {}
    try:
        seals = await _server_handshake(reader, writer, secret)
        if seals is None:
            return
        out, into = seals
        transport = writer.transport

        def send(rid: int, status: int, value: Any, extra: Any = None) -> None:
            if transport.is_closing():
                return
            try:
                data = pickle.dumps((rid, status, value, extra), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # a tool put something pickle cannot carry in a result
                value = _sendable(value, exc)
                try:
                    data = pickle.dumps((rid, status, value, extra), pickle.HIGHEST_PROTOCOL)
                except Exception:
                    data = pickle.dumps((rid, ERROR, f"the host could not send: {exc!r}", None))
            writer.write(_LEN.pack(len(data)) + out.tag(data) + data)

        async def run(rid: int, coro: Awaitable[Any], done: int = OK) -> None:
            # An operation's final answer (OK, or END after a stream's items), or its error.
            try:
                value = await coro
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                send(rid, ERROR, f"{type(exc).__name__}: {exc}")
            else:
                if isinstance(value, Extra):
                    send(rid, done, value.value, value.extra)
                else:
                    send(rid, done, value)
            finally:
                tasks.pop(rid, None)
            if transport.get_write_buffer_size() > _HIGH_WATER:
                await writer.drain()

        while True:
            try:
                rid, op, args = await read_frame(reader, into)
            except (asyncio.IncompleteReadError, ConnectionError, OSError):
                return
            handler = handlers.get(op)
            if handler is not None:
                try:
                    value = handler(*args)
                except Exception as exc:
                    send(rid, ERROR, f"{type(exc).__name__}: {exc}")
                    continue
                if asyncio.iscoroutine(value):
                    tasks[rid] = asyncio.create_task(run(rid, value))
                elif isinstance(value, Extra):
                    send(rid, OK, value.value, value.extra)
                else:
                    send(rid, OK, value)
                continue
            opener = streams.get(op)
            if opener is None:
                send(rid, ERROR, f"unknown operation {op!r}")
                continue

            def emit(item: Any, *, _rid: int = rid) -> None:
                send(_rid, ITEM, item)

            tasks[rid] = asyncio.create_task(run(rid, opener(emit, rid, *args), END))
    finally:
        for task in list(tasks.values()):
            task.cancel()
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


def _sendable(value: Any, exc: Exception) -> Any:
    # A result whose metadata or structured content will not pickle still reaches the model:
    # its text is what matters, and the note says what was left behind.
    if isinstance(value, ToolResult):
        note = {"unsendable": f"metadata and structured content left in the host: {exc!r}"}
        return replace(value, metadata=note, structured=None)
    return value


class Extra:
    """A handler's answer with something on the side (the session's new tool state)."""

    __slots__ = ("extra", "value")

    def __init__(self, value: Any, extra: Any) -> None:
        self.value = value
        self.extra = extra


class Channel:
    """The client end of one connection: many requests in flight, matched by id."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seals: tuple[Seal, Seal]
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._out, self._in = seals
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[tuple[int, Any, Any]]] = {}
        self._streams: dict[int, asyncio.Queue[tuple[int, Any, Any]]] = {}
        self.loop = asyncio.get_running_loop()
        self.closed: BaseException | None = None
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def connect(
        cls, address: tuple[str, int] | str, secret: bytes, *, timeout: float
    ) -> Channel:
        """Connect to a host (a TCP address, or a Unix socket path) and authenticate."""
        try:
            async with asyncio.timeout(timeout):
                if isinstance(address, str):
                    reader, writer = await asyncio.open_unix_connection(address, limit=1 << 20)
                else:
                    reader, writer = await asyncio.open_connection(*address, limit=1 << 20)
        except (TimeoutError, OSError) as exc:
            raise ChannelClosed(f"could not connect to the host at {address}: {exc!r}") from None
        try:
            seals = await client_handshake(reader, writer, secret)
        except BaseException:
            writer.close()
            raise
        return cls(reader, writer, seals)

    def request(self, op: str, *args: Any) -> asyncio.Future[tuple[int, Any, Any]]:
        """Send one operation; the future gets `(status, value, extra)`."""
        return self.send(op, *args)[1]

    def send(self, op: str, *args: Any) -> tuple[int, asyncio.Future[tuple[int, Any, Any]]]:
        """Send one operation; its id, and the future that gets `(status, value, extra)`."""
        if self.closed is not None:
            raise ChannelClosed(str(self.closed))
        rid = next(self._ids)
        frame = pack((rid, op, args), self._out)  # before anything is registered: may raise
        future: asyncio.Future[tuple[int, Any, Any]] = self.loop.create_future()
        self._pending[rid] = future
        self._writer.write(frame)
        return rid, future

    def rewait(self, rid: int) -> asyncio.Future[tuple[int, Any, Any]]:
        """A new future for an operation whose first one was given up (cancelled)."""
        if self.closed is not None:
            raise ChannelClosed(str(self.closed))
        future: asyncio.Future[tuple[int, Any, Any]] = self.loop.create_future()
        self._pending[rid] = future
        return future

    def open_stream(self, op: str, *args: Any) -> tuple[int, asyncio.Queue[tuple[int, Any, Any]]]:
        """Start a streamed operation: items, then `END` (or `ERROR`), arrive on the queue."""
        if self.closed is not None:
            raise ChannelClosed(str(self.closed))
        rid = next(self._ids)
        frame = pack((rid, op, args), self._out)
        queue: asyncio.Queue[tuple[int, Any, Any]] = asyncio.Queue()
        self._streams[rid] = queue
        self._writer.write(frame)
        return rid, queue

    def forget(self, rid: int) -> None:
        """Stop routing a stream's frames (the caller left)."""
        self._streams.pop(rid, None)

    async def _read(self) -> None:
        reader = self._reader
        pending, streams = self._pending, self._streams
        try:
            while True:
                rid, status, value, extra = await read_frame(reader, self._in)
                future = pending.pop(rid, None)
                if future is not None:
                    if not future.done():
                        future.set_result((status, value, extra))
                    continue
                queue = streams.get(rid)
                if queue is not None:
                    queue.put_nowait((status, value, extra))
                    if status in (END, ERROR):
                        del streams[rid]
        except asyncio.CancelledError:
            self._fail(ChannelClosed("the channel was closed"))
            raise
        except BaseException as exc:
            self._fail(ChannelClosed(f"the connection to the host ended: {exc!r}"))

    def fail(self, exc: ChannelClosed) -> None:
        """End the channel: every request and stream waiting on it gets `exc`."""
        if self.closed is None:
            self._fail(exc)

    def _fail(self, exc: ChannelClosed) -> None:
        self.closed = exc
        for future in self._pending.values():
            if not future.done():
                future.set_exception(exc)
        self._pending.clear()
        for queue in self._streams.values():
            queue.put_nowait((ERROR, exc, None))
        self._streams.clear()
        self._writer.close()

    async def aclose(self) -> None:
        """Close the connection; requests in flight fail with `ChannelClosed`."""
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
