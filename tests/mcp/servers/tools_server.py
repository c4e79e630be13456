"""A small MCP server for the client tests, built on the official SDK.

Run `python tools_server.py` for stdio, or `python tools_server.py --http` for streamable HTTP on
127.0.0.1 (a free port, printed as `PORT <n>` on stdout once listening). `--token T` makes the
HTTP server refuse requests without the header `X-Test-Token: T`.

Tools: echo, add (integer schema), slow (progress, counts cancellations), fail (isError),
refuse (a JSON-RPC error), crash (the process exits), mixed (text, image and resource
content), status (pid, cwd, an environment mark, call counts, cancellations), get.weather (a
name handrail must sanitise), and one whose name is too long once prefixed.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import sys
from collections import Counter
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import Field

server = MCPServer("handrail-test", instructions="Test tools for handrail's MCP client.")
calls: Counter[str] = Counter()
cancelled = 0

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


@server.tool(description="Echo the text back.", annotations=READ_ONLY)
def echo(text: Annotated[str, Field(description="Text to echo.")]) -> str:
    calls["echo"] += 1
    return text


@server.tool(
    description="Add two non-negative integers.",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
def add(a: Annotated[int, Field(ge=0)], b: Annotated[int, Field(ge=0)]) -> str:
    calls["add"] += 1
    return str(a + b)


@server.tool(
    description="Work for a while in steps, reporting progress after each step.",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
async def slow(steps: int, delay: float, ctx: Context, quiet: bool = False) -> str:
    global cancelled
    calls["slow"] += 1
    try:
        for i in range(1, steps + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(i, steps, None if quiet else f"step {i} of {steps}")
        await anyio.sleep(0.05)  # lets the last progress notification land before the result
    except anyio.get_cancelled_exc_class():
        cancelled += 1
        raise
    return f"done after {steps} steps"


@server.tool(
    description="Always fails (with no content for an empty reason).", annotations=READ_ONLY
)
def fail(reason: str) -> CallToolResult:
    calls["fail"] += 1
    content = [TextContent(type="text", text=f"failed: {reason}")] if reason else []
    return CallToolResult(content=content, is_error=True)


@server.tool(description="Answer with a JSON-RPC error instead of a result.", annotations=READ_ONLY)
def refuse() -> str:
    raise MCPError(code=INVALID_PARAMS, message="invoice 42 does not exist")


@server.tool(
    description="Make the server process exit at once.",
    annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False),
)
def crash(code: int = 3) -> str:
    sys.stderr.write("about to crash on purpose\n")
    sys.stderr.flush()
    os._exit(code)


@server.tool(description="Return text, an image, a resource link and an embedded resource.")
def mixed() -> CallToolResult:
    calls["mixed"] += 1
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 24).decode()
    return CallToolResult(
        content=[
            TextContent(type="text", text="first line"),
            TextContent(type="text", text="second line"),
            ImageContent(type="image", data=png, mime_type="image/png"),
            ResourceLink(type="resource_link", name="notes", uri="file:///tmp/notes.txt"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="file:///tmp/readme.md", mime_type="text/markdown", text="# hello"
                ),
            ),
        ],
    )


@server.tool(
    description="Report the server's process id, cwd, mark and call counts.", annotations=READ_ONLY
)
def status() -> str:
    info: dict[str, Any] = {
        "pid": os.getpid(),
        "cwd": os.getcwd(),
        "mark": os.environ.get("HANDRAIL_TEST_MARK"),
        "calls": dict(calls),
        "cancelled": cancelled,
    }
    return json.dumps(info, sort_keys=True)


@server.tool(
    name="get.weather", description="Weather for a city (always sunny).", annotations=READ_ONLY
)
def get_weather(city: str) -> str:
    calls["get.weather"] += 1
    return f"sunny in {city}"


@server.tool(
    name="summarise_the_quarterly_report_for_every_region_and_product_line",
    description="A tool whose name is too long once prefixed.",
    annotations=READ_ONLY,
)
def long_name() -> str:
    return "summary"


def _guard(app: Any, token: str) -> Any:
    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"x-test-token", b"").decode() != token:
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"missing token"})
                return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--token", default=None)
    opts = parser.parse_args()
    if not opts.http:
        server.run("stdio")
        return
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    app: Any = server.streamable_http_app(host="127.0.0.1")
    if opts.token:
        app = _guard(app, opts.token)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main()
