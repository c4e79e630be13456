"""A small Server-Sent Events reader: lines in, `(event, data)` pairs out.

Follows the WHATWG event-stream rules the providers rely on: `data:` lines of one event are
joined with newlines, a blank line ends the event, lines starting with `:` are comments (keep-
alives), one optional space after the colon is dropped, and `id:` / `retry:` are ignored
(nothing here reconnects). An event still open when the stream ends is delivered too: whether
the stream was complete is the decoder's call (each provider has its own final marker).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

__all__ = ["SseEvent", "read_sse"]


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One event: its name (`message` when the stream gave none) and its data text."""

    event: str
    data: str


async def read_sse(lines: AsyncIterable[str]) -> AsyncIterator[SseEvent]:
    """Decode an event stream from its lines (without line endings, as httpx yields them)."""
    name = ""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield SseEvent(name or "message", "\n".join(data))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if data:
        yield SseEvent(name or "message", "\n".join(data))
