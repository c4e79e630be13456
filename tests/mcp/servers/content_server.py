"""An MCP server that answers with every kind of content, on the SDK's low-level `Server`.

Run `python content_server.py` (stdio). The low-level server is used so the test controls
every byte of `tools/list` and `tools/call` (task support, output schemas, annotations, _meta).

Tools:
- everything: text (with _meta), an image (with annotations), audio, an embedded text
  resource, an embedded blob resource and a resource link, in that order;
- picture: one PNG image; blob(size): one embedded blob resource of `size` bytes;
- weather(city): structured content matching its output schema; bad_weather: breaks it;
- failing_picture: isError with text and an image;
- long_job: requires MCP tasks; maybe_task: tasks optional (answers directly);
- sleep(seconds): answers after a delay; freeze: blocks the whole process; pid; echo(text).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import struct
import time
import zlib
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server


def png(width: int = 4, height: int = 3) -> bytes:
    """A real PNG: red pixels, IHDR/IDAT/IEND with their CRCs."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def wav(samples: int = 64) -> bytes:
    """A real 8-bit mono WAV of silence."""
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 8000, 1, 8)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


def blob_bytes(size: int) -> bytes:
    """`size` deterministic bytes covering every byte value."""
    return (bytes(range(251)) * (size // 251 + 1))[:size]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@functools.lru_cache(maxsize=8)
def blob_b64(size: int) -> str:
    """The base64 of `blob_bytes(size)`, made once (a benchmark times the transport, not this)."""
    return b64(blob_bytes(size))


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
    "required": ["city", "temperature"],
}

TOOLS: list[dict[str, Any]] = [
    {"name": "everything", "description": "Every content type.", "inputSchema": {"type": "object"}},
    {"name": "picture", "description": "A PNG image.", "inputSchema": {"type": "object"}},
    {
        "name": "blob",
        "description": "An embedded blob resource of `size` bytes.",
        "inputSchema": {
            "type": "object",
            "properties": {"size": {"type": "integer", "minimum": 0}},
            "required": ["size"],
        },
    },
    {
        "name": "weather",
        "description": "The weather in a city, as structured content.",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        "outputSchema": WEATHER_SCHEMA,
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "bad_weather",
        "description": "Structured content that breaks its own output schema.",
        "inputSchema": {"type": "object"},
        "outputSchema": WEATHER_SCHEMA,
    },
    {
        "name": "failing_picture",
        "description": "An error that carries an image.",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "long_job",
        "description": "Runs only as an MCP task.",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "required"},
    },
    {
        "name": "maybe_task",
        "description": "May run as a task; answers directly when called directly.",
        "inputSchema": {"type": "object"},
        "execution": {"taskSupport": "optional"},
    },
    {
        "name": "sleep",
        "description": "Answer after `seconds`.",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number", "minimum": 0}},
            "required": ["seconds"],
        },
    },
    {
        "name": "freeze",
        "description": "Block the whole server (a hung process: not even pings are answered).",
        "inputSchema": {"type": "object"},
    },
    {"name": "pid", "description": "The server's process id.", "inputSchema": {"type": "object"}},
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
    },
]


def everything() -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": "a picture, a sound and two files", "_meta": {"k": "v"}},
        {
            "type": "image",
            "data": b64(png()),
            "mimeType": "image/png",
            "annotations": {"audience": ["user"], "priority": 0.5},
        },
        {"type": "audio", "data": b64(wav()), "mimeType": "audio/wav"},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///notes/readme.md",
                "mimeType": "text/markdown",
                "text": "# hi",
            },
        },
        {
            "type": "resource",
            "resource": {
                "uri": "file:///notes/data.bin",
                "mimeType": "application/octet-stream",
                "blob": b64(blob_bytes(100)),
            },
        },
        {
            "type": "resource_link",
            "uri": "file:///notes/big.csv",
            "name": "big.csv",
            "title": "Big table",
            "description": "A table too big to embed.",
            "mimeType": "text/csv",
            "size": 123456,
        },
    ]


async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> dict[str, Any]:
    return {"tools": TOOLS}


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> dict[str, Any]:
    args = params.arguments or {}
    name = params.name
    if name == "everything":
        return {"content": everything(), "isError": False}
    if name == "picture":
        return {"content": [{"type": "image", "data": b64(png()), "mimeType": "image/png"}]}
    if name == "blob":
        size = int(args.get("size", 0))
        resource = {
            "uri": f"file:///blob/{size}",
            "mimeType": "application/octet-stream",
            "blob": blob_b64(size),
        }
        return {"content": [{"type": "resource", "resource": resource}]}
    if name == "weather":
        data = {"city": str(args.get("city", "")), "temperature": 21.5}
        return {
            "content": [{"type": "text", "text": f"{data['city']}: {data['temperature']} C"}],
            "structuredContent": data,
        }
    if name == "bad_weather":
        return {
            "content": [{"type": "text", "text": "warm"}],
            "structuredContent": {"city": "Oslo", "temperature": "warm"},
        }
    if name == "failing_picture":
        return {
            "content": [
                {"type": "text", "text": "the camera jammed"},
                {"type": "image", "data": b64(png(1, 1)), "mimeType": "image/png"},
            ],
            "isError": True,
        }
    if name == "maybe_task":
        return {"content": [{"type": "text", "text": "done directly"}]}
    if name == "long_job":
        return {
            "content": [{"type": "text", "text": "long_job must run as a task"}],
            "isError": True,
        }
    if name == "sleep":
        await asyncio.sleep(float(args.get("seconds", 0)))
        return {"content": [{"type": "text", "text": "awake"}]}
    if name == "freeze":
        time.sleep(3600)  # blocks the event loop on purpose
    if name == "pid":
        return {"content": [{"type": "text", "text": str(os.getpid())}]}
    if name == "echo":
        return {"content": [{"type": "text", "text": str(args.get("text", ""))}]}
    return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}


def make_server() -> Server[Any]:
    server: Server[Any] = Server("content-test", instructions="Every kind of MCP content.")
    server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    return server


async def run_stdio() -> None:
    server = make_server()
    async with stdio_server() as (read, write):
        async with server.lifespan(server) as state:
            await serve_loop(
                server,
                read,
                write,
                lifespan_state=state,
                init_options=server.create_initialization_options(),
            )


if __name__ == "__main__":
    asyncio.run(run_stdio())
