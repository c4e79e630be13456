"""The stdio wire for `handrail serve` without a thread per message.

The SDK's `stdio_server` reads and writes through `anyio.wrap_file`, which runs every line read
and every write on a worker thread: two thread hops per request, a large part of a round trip
on a small machine. Here the same framing (one JSON-RPC message per line, UTF-8) runs on the
event loop through non-blocking pipes, and the SDK's `stdio_server` is handed these streams, so
parsing, validation and sessions stay the SDK's. As in the SDK, fds 0 and 1 point at the null
device and at stderr while serving (a stray print or a child process cannot corrupt the wire)
and are restored afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import stat
from collections.abc import AsyncGenerator

__all__ = ["PipeLines", "PipeWriter", "pipe_stdio"]

MAX_LINE = 256 * 1024 * 1024
"""Longest message accepted (a write_file with a large content is one line)."""


class PipeLines:
    """The lines of a pipe, as text (what `stdio_server` iterates over)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class PipeWriter:
    """Writes to a pipe without blocking the loop (what `stdio_server` writes to)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        """Queue `text`; it goes out on the next `flush` (or earlier)."""
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        """Wait until the pipe has taken what was written (backpressure from a slow client)."""
        await self._writer.drain()


def _is_stream(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.asynccontextmanager
async def pipe_stdio() -> AsyncGenerator[tuple[PipeLines, PipeWriter] | None]:
    """Claim fds 0 and 1 for the wire; yields None when they are not pipes (use the SDK's)."""
    if not (_is_stream(0) and _is_stream(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    saved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)]
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    writer: asyncio.StreamWriter | None = None
    read_transport: asyncio.BaseTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
        yield PipeLines(reader), PipeWriter(writer)
    finally:
        if writer is not None:
            with contextlib.suppress(Exception):
                await writer.drain()
            writer.close()
        if read_transport is not None:
            read_transport.close()
        for fd, copy in zip((0, 1), saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(copy, fd)
            os.close(copy)
