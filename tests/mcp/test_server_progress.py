"""Progress through `handrail serve`: the numbers a tool reports reach the MCP client.

An upstream MCP server's progress (server-everything's `trigger-long-running-operation`, which
sends `progress` and `total` with no message) reaches a client behind `serve` with the same
numbers the official client gets directly; a handrail tool's own `ctx.progress(progress=...,
total=...)` goes out as reported, and the values never go back, as MCP requires.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import anyio
from inline_snapshot import snapshot
from mcp.client.stdio import StdioServerParameters

from mcp import Client

WAIT = 60.0
"""Seconds any single wait may take: a bound, never a speed threshold."""

Seen = list[tuple[float, float | None, str | None]]


async def call_with_progress(
    params: StdioServerParameters, tool: str, arguments: dict[str, Any], count: int
) -> Seen:
    """Call `tool`, keeping every progress notification; waits (bounded) for `count` of them."""
    seen: Seen = []
    all_seen = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        if len(seen) >= count:
            all_seen.set()

    with anyio.fail_after(WAIT):
        async with Client(params, mode="legacy") as client:
            r = await client.call_tool(tool, arguments, progress_callback=on_progress)
            assert r.is_error is False, r.content
            await all_seen.wait()  # notifications may be handled after the result
    return seen


async def test_an_upstream_servers_progress_keeps_its_total(tmp_path: Path, mcp_peers: Any) -> None:
    node, *args = mcp_peers.everything
    root = tmp_path / "ws"
    root.mkdir()
    xdg = tmp_path / "xdg"
    (xdg / "handrail").mkdir(parents=True)
    servers = {"mcpServers": {"everything": {"command": node, "args": args}}}
    (xdg / "handrail" / "mcp.json").write_text(json.dumps(servers))
    served = StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "serve", "--root", str(root), "--mode", "bypass"],
        env={"XDG_CONFIG_HOME": str(xdg)},
        cwd=str(tmp_path),
    )
    arguments = {"duration": 0.4, "steps": 4}
    tool = "trigger-long-running-operation"
    direct = await call_with_progress(
        StdioServerParameters(command=node, args=args), tool, arguments, 4
    )
    through = await call_with_progress(served, f"mcp__everything__{tool}", arguments, 4)
    assert [(p, t) for p, t, _ in through] == [(p, t) for p, t, _ in direct]
    assert through == snapshot(
        [(1.0, 4.0, "1 of 4"), (2.0, 4.0, "2 of 4"), (3.0, 4.0, "3 of 4"), (4.0, 4.0, "4 of 4")]
    )


SCRIPT = """\
import asyncio, sys
from handrail import Registry, ToolContext, tool
from handrail.mcp import serve

@tool(read_only=True)
def count(ctx: ToolContext) -> str:
    \"\"\"Report progress, once going back.\"\"\"
    ctx.progress("connecting")
    ctx.progress("row 1", progress=1, total=3)
    ctx.progress("row 2", progress=2, total=3)
    ctx.progress("rewound", progress=1, total=3)
    ctx.progress("still row 2")
    ctx.progress("row 3", progress=3, total=3)
    ctx.progress("open-ended", progress=10)
    return "counted"

asyncio.run(serve(Registry([count]), root=sys.argv[1], load_settings=False))
"""


async def test_a_tools_own_progress_goes_out_as_reported_and_never_back(tmp_path: Path) -> None:
    script = tmp_path / "serve_count.py"
    script.write_text(SCRIPT)
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(tmp_path)])
    seen = await call_with_progress(params, "count", {}, 7)
    values = [p for p, _, _ in seen]
    assert all(a < b for a, b in itertools.pairwise(values))
    # A report that would go back (or carries no number) keeps the bar where it was: the
    # value rises by the least a float can, and the total stays.
    assert [(round(p, 9), t, m) for p, t, m in seen] == snapshot(
        [
            (1.0, None, "connecting"),
            (1.0, 3.0, "row 1"),
            (2.0, 3.0, "row 2"),
            (2.0, 3.0, "rewound"),
            (2.0, 3.0, "still row 2"),
            (3.0, 3.0, "row 3"),
            (10.0, None, "open-ended"),
        ]
    )
