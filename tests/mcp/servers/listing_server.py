"""An MCP server whose tool list a test writes, for the lazy-start and tool-cache tests.

`python listing_server.py SPEC` reads the JSON file SPEC at start:

```json
{"tools": [{"name": "echo", "inputSchema": {...}, "annotations": {...}}],
 "ttl_ms": 60000, "modern": true, "marker": "/tmp/starts.log", "instructions": "..."}
```

* `tools`: the tools it lists, exactly as written (a test changes the file between sessions);
* `ttl_ms`: the `ttlMs` it sends with `tools/list` (only the 2026-07-28 protocol carries it);
* `modern`: speak 2026-07-28 as well (the default); false speaks only the initialize-handshake
  revisions, which carry no cache hints;
* `marker`: a file it appends a line to each time it starts (`start <pid>`) and for each
  call (`call <tool> <arguments as JSON>`), so a test counts starts and sees what was sent;
* `instructions`: what it sends as its `instructions`.

Every tool answers with the arguments it received, as JSON text, so a test sees what went out.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

spec: dict[str, Any] = json.loads(open(sys.argv[1], encoding="utf-8").read())


def mark(line: str) -> None:
    if spec.get("marker"):
        with open(spec["marker"], "a", encoding="utf-8") as marker:
            marker.write(line + "\n")


mark(f"start {os.getpid()}")


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    tools = [types.Tool.model_validate(t) for t in spec["tools"]]
    if "ttl_ms" in spec:
        return types.ListToolsResult(tools=tools, ttl_ms=spec["ttl_ms"])
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    mark(f"call {params.name} {json.dumps(params.arguments, sort_keys=True)}")
    text = json.dumps({"tool": params.name, "arguments": params.arguments}, sort_keys=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server(
    "listing",
    instructions=spec.get("instructions"),
    on_list_tools=list_tools,
    on_call_tool=call_tool,
)


async def main() -> None:
    options = server.create_initialization_options()
    async with stdio_server() as (read, write):
        if spec.get("modern", True):
            await server.run(read, write, options)
            return
        async with server.lifespan(server) as state:
            await serve_loop(server, read, write, lifespan_state=state, init_options=options)


anyio.run(main)
