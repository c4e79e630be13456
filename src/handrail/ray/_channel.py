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
    "Connection",
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
_HELD = 1 << 20  # bytes read before the handshake is done, at most (then reading pauses)


class ChannelClosed(ConnectionError):
    """The connection to the host ended (the host died, or the network broke)."""


class RemoteError(RuntimeError):
    """The host refused or failed an operation (not a tool call: those end as results)."""


def _mac(secret: bytes, label: bytes, *parts: bytes) -> bytes:
    return hmac.new(secret, label + b"".join(parts), hashlib.sha256).digest()


TAG = 16
_HEAD = 4 + TAG  # a frame's length and tag, before its pickle


class Seal:
    """One direction's frame tags: HMAC-SHA256 over a sequence number and the frame."""

    __slots__ = ("_keyed", "seq")

    def __init__(self, key: bytes) -> None:
        # Keyed once: a tag copies this state rather than looking up the digest and keying
        # HMAC again, which is most of the cost of a small frame's tag.
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)
        self.seq = 0

    def tag(self, data: bytes | bytearray) -> bytes:
        """The next frame's tag (each tag is used once, in order)."""
        seq = self.seq
        self.seq = seq + 1
        mac = self._keyed.copy()
        mac.update(seq.to_bytes(8, "big"))
        mac.update(data)
        return mac.digest()[:TAG]


def _seals(secret: bytes, client: bytes, host: bytes) -> tuple[Seal, Seal]:
    """(client to host, host to client) for one connection."""
    key = _mac(secret, b"keys", client, host)
    return Seal(_mac(key, b"c2h")), Seal(_mac(key, b"h2c"))


def pack(obj: Any, seal: Seal) -> bytes:
    """One frame: length, tag, then the pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _LEN.pack(len(data)) + seal.tag(data) + data


class Connection(asyncio.Protocol):
    """One connection's bytes: read as they come for the handshake, then cut into frames.

    Once `start`ed, frames are checked, unpickled and handed to `deliver` in `data_received`,
    as their bytes arrive: no reader task and no `StreamReader` stand between the socket and
    the operation waiting for the frame. Each of those was one more turn of the event loop
    per message, on both sides of every call.
    """

    def __init__(self, on_connect: Callable[[Connection], Any] | None = None) -> None:
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self.ended = False
        self._on_connect = on_connect
        self._buf = bytearray()
        self._need = _HEAD  # bytes to hold before a frame can be complete
        self._waiter: asyncio.Future[None] | None = None
        self._seal: Seal | None = None
        self._deliver: Callable[[Any], None] | None = None
        self._lost: Callable[[BaseException | None], None] | None = None
        self._held = False  # reading paused before `start` (the handshake's buffer is full)
        self._writing_paused = False
        self._drained: asyncio.Future[None] | None = None
        self._task: asyncio.Task[Any] | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self._on_connect is not None:  # a host's connection: served by its own task
            self._task = self.loop.create_task(self._on_connect(self))

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        if self._deliver is not None:
            if len(buf) >= self._need:
                self._frames()
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if len(buf) > _HELD and not self._held and self.transport is not None:
            self._held = True  # a peer not yet authenticated does not fill our memory
            self.transport.pause_reading()

    def eof_received(self) -> bool:
        return False  # the peer is done: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)
        self._end(exc)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    # -- the handshake -----------------------------------------------------------------------

    async def readexactly(self, n: int) -> bytes:
        """The next `n` bytes (before `start` only); `IncompleteReadError` at the end."""
        buf = self._buf
        while len(buf) < n:
            if self.ended:
                raise asyncio.IncompleteReadError(bytes(buf), n)
            self._waiter = self.loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = bytes(buf[:n])
        del buf[:n]
        return data

    def write(self, data: bytes) -> None:
        """Send bytes (dropped once the connection is closing)."""
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.write(data)

    async def drain(self) -> None:
        """Wait while the socket's send buffer is over its high-water mark."""
        while self._writing_paused and not self.ended:
            # One future per pause, shared by every waiter (each shielded: one waiter being
            # cancelled must not cancel it for the others).
            if self._drained is None or self._drained.done():
                self._drained = self.loop.create_future()
            await asyncio.shield(self._drained)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        if self.transport is not None:
            self.transport.close()

    # -- frames ------------------------------------------------------------------------------

    def start(
        self,
        seal: Seal,
        deliver: Callable[[Any], None],
        lost: Callable[[BaseException | None], None],
    ) -> None:
        """Hand every frame from now on to `deliver`, in order, once its tag checks out.

        `lost` is called once, when the connection ends or a frame is bad (the connection is
        then closed). Bytes that came before `start` are frames too.
        """
        self._seal = seal
        self._deliver = deliver
        self._lost = lost
        if self._held and not self.ended and self.transport is not None:
            self._held = False
            self.transport.resume_reading()
        if len(self._buf) >= self._need:
            self._frames()
        if self.ended:  # it ended during the handshake, after what it sent
            self._end(None)

    def _frames(self) -> None:
        buf = self._buf
        seal = self._seal
        deliver = self._deliver
        assert seal is not None and deliver is not None
        pos, have = 0, len(buf)
        try:
            while have - pos >= _HEAD:
                (size,) = _LEN.unpack_from(buf, pos)
                if size > MAX_FRAME:
                    raise ChannelClosed(f"frame of {size} bytes is over the limit")
                stop = pos + _HEAD + size
                if stop > have:
                    break
                data = buf[pos + _HEAD : stop]
                if not hmac.compare_digest(buf[pos + 4 : pos + _HEAD], seal.tag(data)):
                    raise ChannelClosed("a frame failed authentication")
                pos = stop
                deliver(pickle.loads(data))
                if self._deliver is None:  # ended by what the frame did
                    return
        except Exception as exc:
            self._end(exc)
            self.close()
            return
        del buf[:pos]
        # A frame only partly here: nothing to do until all of it is (a big one comes in
        # many pieces, and is not looked at again for each).
        self._need = _HEAD + _LEN.unpack_from(buf)[0] if len(buf) >= _HEAD else _HEAD

    def _end(self, exc: BaseException | None) -> None:
        lost = self._lost
        self._deliver = None
        self._lost = None
        if lost is not None:
            lost(exc)


async def client_handshake(conn: Connection, secret: bytes) -> tuple[Seal, Seal]:
    """Prove we hold the secret and check that the host does; raises `ChannelClosed`.

    Returns the seals (for what we send, for what we read).
    """
    mine = os.urandom(NONCE)
    try:
        conn.write(MAGIC + mine)
        async with asyncio.timeout(HANDSHAKE_SECONDS):
            answer = await conn.readexactly(NONCE + 32)
    except (TimeoutError, asyncio.IncompleteReadError, OSError) as exc:
        raise ChannelClosed(f"the host did not complete the handshake: {exc!r}") from None
    theirs, proof = answer[:NONCE], answer[NONCE:]
    if not hmac.compare_digest(proof, _mac(secret, b"host", mine, theirs)):
        raise ChannelClosed("the host failed authentication (wrong secret)")
    if conn.ended:
        raise ChannelClosed("the host hung up during the handshake")
    conn.write(_mac(secret, b"client", theirs, mine))
    return _seals(secret, mine, theirs)


async def _server_handshake(conn: Connection, secret: bytes) -> tuple[Seal, Seal] | None:
    # The seals (for what the host sends, for what it reads), or None: hang up.
    try:
        async with asyncio.timeout(HANDSHAKE_SECONDS):
            hello = await conn.readexactly(len(MAGIC) + NONCE)
            if hello[: len(MAGIC)] != MAGIC:
                return None
            theirs = hello[len(MAGIC) :]
            mine = os.urandom(NONCE)
            conn.write(mine + _mac(secret, b"host", theirs, mine))
            proof = await conn.readexactly(32)
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
    conn: Connection,
    secret: bytes,
    handlers: Mapping[str, Handler],
    streams: Mapping[str, Callable[..., Awaitable[Any]]],
) -> None:
    """Serve one client until it disconnects; its unfinished operations are cancelled."""
    tasks: dict[int, asyncio.Task[Any]] = {}
    try:
        seals = await _server_handshake(conn, secret)
        if seals is None:
            return
        out, into = seals
        transport = conn.transport
        assert transport is not None
        loop = conn.loop
        finished: asyncio.Future[None] = loop.create_future()

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
            transport.write(_LEN.pack(len(data)) + out.tag(data) + data)

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
                await conn.drain()

        def deliver(frame: Any) -> None:
            # Runs as the frame arrives: a handler that answers at once answers from here.
            rid, op, args = frame
            handler = handlers.get(op)
            if handler is not None:
                try:
                    value = handler(*args)
                except Exception as exc:
                    send(rid, ERROR, f"{type(exc).__name__}: {exc}")
                    return
                if asyncio.iscoroutine(value):
                    tasks[rid] = loop.create_task(run(rid, value))
                elif isinstance(value, Extra):
                    send(rid, OK, value.value, value.extra)
                else:
                    send(rid, OK, value)
                return
            opener = streams.get(op)
            if opener is None:
                send(rid, ERROR, f"unknown operation {op!r}")
                return

            def emit(item: Any, *, _rid: int = rid) -> None:
                send(_rid, ITEM, item)

            tasks[rid] = loop.create_task(run(rid, opener(emit, rid, *args), END))

        def lost(exc: BaseException | None) -> None:
            if not finished.done():
                finished.set_result(None)

        conn.start(into, deliver, lost)
        await finished
    finally:
        for task in list(tasks.values()):
            task.cancel()
        conn.close()


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

    def __init__(self, conn: Connection, seals: tuple[Seal, Seal]) -> None:
        self._conn = conn
        self._out, self._in = seals
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[tuple[int, Any, Any]]] = {}
        self._streams: dict[int, asyncio.Queue[tuple[int, Any, Any]]] = {}
        self.loop = conn.loop
        self.closed: BaseException | None = None
        conn.start(self._in, self._arrived, self._ended)

    @classmethod
    async def connect(
        cls, address: tuple[str, int] | str, secret: bytes, *, timeout: float
    ) -> Channel:
        """Connect to a host (a TCP address, or a Unix socket path) and authenticate."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                if isinstance(address, str):
                    _, conn = await loop.create_unix_connection(Connection, address)
                else:
                    _, conn = await loop.create_connection(Connection, *address)
        except (TimeoutError, OSError) as exc:
            raise ChannelClosed(f"could not connect to the host at {address}: {exc!r}") from None
        try:
            seals = await client_handshake(conn, secret)
        except BaseException:
            conn.close()
            raise
        return cls(conn, seals)

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
        self._conn.write(frame)
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
        self._conn.write(frame)
        return rid, queue

    def forget(self, rid: int) -> None:
        """Stop routing a stream's frames (the caller left)."""
        self._streams.pop(rid, None)

    def _arrived(self, frame: Any) -> None:
        # Runs as the frame arrives (see `Connection`): the waiting future gets it now.
        rid, status, value, extra = frame
        future = self._pending.pop(rid, None)
        if future is not None:
            if not future.done():
                future.set_result((status, value, extra))
            return
        queue = self._streams.get(rid)
        if queue is not None:
            queue.put_nowait((status, value, extra))
            if status in (END, ERROR):
                del self._streams[rid]

    def _ended(self, exc: BaseException | None) -> None:
        self.fail(ChannelClosed(f"the connection to the host ended: {exc!r}"))

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
        self._conn.close()

    async def aclose(self) -> None:
        """Close the connection; requests in flight fail with `ChannelClosed`."""
        self.fail(ChannelClosed("the channel was closed"))
