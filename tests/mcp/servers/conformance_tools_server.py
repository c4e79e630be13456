"""The tools the MCP conformance suite's server scenarios call, served by `handrail.mcp.serve`.

Run `python conformance_tools_server.py ROOT [--token TOKEN | --no-auth]`: streamable HTTP on
127.0.0.1 (a free port); the URL is printed on stdout once listening. Every tool is a handrail
tool made with the public API (`@tool`, `Tool.from_json_schema`, content parts, `ToolFailure`,
`ctx.progress`, `ctx.ask`) and every call goes through handrail's whole pipeline, so the
suite checks what handrail puts on the wire, not what this script does.

The names and outputs are the ones the suite's scenarios ask for (`tools-call-*`,
`json-schema-2020-12`, `server-sse-polling`, `elicitation-sep1034-defaults`,
`elicitation-sep1330-enums`, `tools-call-sampling`).
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import zlib
from typing import Any

from handrail import (
    Approval,
    AudioPart,
    Elicitation,
    ImagePart,
    Registry,
    ResourcePart,
    SamplingMessage,
    SamplingRequest,
    TextPart,
    Tool,
    ToolContext,
    ToolFailure,
    tool,
)
from handrail.mcp import serve

SERVER = "conformance"
"""How the tools that ask name themselves to the person asked."""


def png(width: int = 2, height: int = 2) -> bytes:
    """A real PNG: red pixels, IHDR/IDAT/IEND with their CRCs."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

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


@tool(read_only=True, concurrency_safe=True)
def test_simple_text() -> str:
    """Answer with one line of text."""
    return "This is a simple text response for testing."


@tool(read_only=True, concurrency_safe=True)
def test_image_content() -> ImagePart:
    """Answer with a PNG image."""
    return ImagePart.of(png(), "image/png")


@tool(read_only=True, concurrency_safe=True)
def test_audio_content() -> AudioPart:
    """Answer with a WAV sound."""
    return AudioPart.of(wav(), "audio/wav")


@tool(read_only=True, concurrency_safe=True)
def test_embedded_resource() -> ResourcePart:
    """Answer with an embedded text resource."""
    return ResourcePart(
        uri="test://embedded-resource",
        mime_type="text/plain",
        text="This is an embedded resource content.",
    )


@tool(read_only=True, concurrency_safe=True)
def test_multiple_content_types() -> list[Any]:
    """Answer with text, an image and an embedded resource, in that order."""
    return [
        TextPart(text="Multiple content types test:"),
        ImagePart.of(png(), "image/png"),
        ResourcePart(
            uri="test://mixed-content-resource",
            mime_type="application/json",
            text='{"test": "data", "value": 123}',
        ),
    ]


@tool(read_only=True, concurrency_safe=True)
def test_error_handling() -> str:
    """Always fail, with a message for the model."""
    raise ToolFailure("This tool intentionally returns an error for testing")


@tool(read_only=True, concurrency_safe=True)
async def test_tool_with_progress(ctx: ToolContext) -> str:
    """Report progress three times, then answer."""
    for step in (0, 50, 100):
        ctx.progress(f"{step}% done", percent=step)
        await asyncio.sleep(0)
    return "Progress test completed"


@tool(read_only=True, concurrency_safe=True)
async def test_reconnection() -> str:
    """Answer after a short while (the suite's SSE polling scenario calls it)."""
    await asyncio.sleep(0.05)
    return "Reconnection test completed"


async def _ask(ctx: ToolContext, message: str, schema: dict[str, Any]) -> str:
    question = Elicitation(
        reason=f"{SERVER} asks: {message}", server=SERVER, message=message, schema=schema
    )
    answer: Approval = await ctx.ask(question)
    return f"Elicitation completed: {answer.kind}, content={answer.values}"


@tool(read_only=True)
async def test_elicitation(message: str, ctx: ToolContext) -> str:
    """Ask the user for a name and an e-mail address."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    return await _ask(ctx, message, schema)


@tool(read_only=True)
async def test_elicitation_sep1034_defaults(ctx: ToolContext) -> str:
    """Ask with a default for every primitive type (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verified", "default": True},
        },
        "required": [],
    }
    return await _ask(ctx, "Test client default value handling", schema)


@tool(read_only=True)
async def test_elicitation_sep1330_enums(ctx: ToolContext) -> str:
    """Ask with every enum shape (SEP-1330)."""
    options = ["option1", "option2", "option3"]
    titled = [{"const": o, "title": f"Option {o[-1]}"} for o in options]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "enum": options,
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {"type": "array", "items": {"anyOf": titled}},
        },
        "required": [],
    }
    return await _ask(ctx, "Test enum schemas", schema)


@tool(read_only=True)
async def test_sampling(prompt: str, ctx: ToolContext) -> str:
    """Ask the session's model (here: the MCP client's, through `serve`) to answer `prompt`."""
    sampler = ctx.session.sampler
    if sampler is None:
        raise ToolFailure("this session has no model to sample")
    try:
        answer = await sampler(
            SamplingRequest(
                requester="the tool test_sampling",
                messages=(SamplingMessage(role="user", text=prompt),),
                max_tokens=100,
            )
        )
    except Exception as exc:
        raise ToolFailure(f"sampling failed: {exc}") from exc
    return f"LLM response: {answer.text}"


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def registry() -> Registry:
    """Every tool above, and one with a raw JSON Schema 2020-12 input schema."""
    raw = Tool.from_json_schema(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        JSON_SCHEMA_2020_12,
        lambda args: f"hello {args.get('name', 'nobody')}",
        read_only=True,
    )
    return Registry(
        [
            test_simple_text,
            test_image_content,
            test_audio_content,
            test_embedded_resource,
            test_multiple_content_types,
            test_error_handling,
            test_tool_with_progress,
            test_reconnection,
            test_elicitation,
            test_elicitation_sep1034_defaults,
            test_elicitation_sep1330_enums,
            test_sampling,
            raw,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    auth = parser.add_mutually_exclusive_group(required=True)
    auth.add_argument("--token")
    auth.add_argument("--no-auth", action="store_true")
    opts = parser.parse_args()
    asyncio.run(
        serve(
            registry(),
            root=opts.root,
            http=("127.0.0.1", 0),
            auth=not opts.no_auth,
            token=opts.token,
            token_file=False,
            load_settings=False,
            ready=lambda url: print(url, flush=True),
        )
    )


if __name__ == "__main__":
    main()
