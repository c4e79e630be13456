"""Reference for bench/mcp_content.py: the thinnest MCP proxy the SDK allows.

A low-level SDK server over stdio whose `tools/call` forwards to one upstream stdio server
through the SDK client and hands back the result as it came (no validation, no permissions,
no sandbox). Its cost over a direct call is the floor any proxy on this SDK pays for the hop.

    python bench/_mcp_proxy.py UPSTREAM_COMMAND [ARGS...]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]  # this folder holds mcp.py, which would shadow the SDK

import anyio
import mcp_types as types
from mcp.client.stdio import StdioServerParameters
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

from mcp import Client


async def main() -> None:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with Client(params, mode="legacy") as upstream:
        listed = await upstream.list_tools()
        tools = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed.tools]

        async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
            return {"tools": tools}

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
            result = await upstream.call_tool(params.name, params.arguments or {})
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")

        server: Server[Any] = Server("proxy")
        server.add_request_handler("tools/list", types.PaginatedRequestParams, list_tools)
        server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
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
    anyio.run(main)
