"""Part `lazy` of bench/mcp.py: session start with 10 configured MCP servers, lazy or not.

A session here is what a host pays before the model can be sent its tools: a fresh `python`
process imports handrail, builds `McpTools(configs).start()` and a `Registry` of the coding
tools plus the imported ones, then prints READY. The clock runs from spawning that process to
reading READY (its shutdown is not timed); the child also reports the time of `start()` alone.
Four kinds, interleaved round by round (the order turns each round):

- `no servers`: `McpTools([])`, the floor every other row is compared with;
- `eager`: `McpTools(configs, lazy=False)`, every server started and listed (handrail before
  lazy servers);
- `lazy, cold cache`: `McpTools(configs)` on an empty state folder: every server started,
  listed and its list cached;
- `lazy, warm cache`: `McpTools(configs)` on a state folder whose lists are fresh: no server
  starts (the target: at most 1.1x `no servers`).

`ratio` divides the medians; `paired` is the median over rounds of each round's own ratio,
which load on a shared machine disturbs less (both sessions of a round ran close together).
The target is checked on `paired`.

The servers are small low-level SDK servers over stdio, each listing 8 tools with a `ttlMs` of
one hour (an SDK server that sends none says `ttlMs: 0` on 2026-07-28, which makes its list
stale at once: such a server is started every session, as `eager`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET = 1.1
SERVERS = 10
TIMEOUT = 120.0

SERVER_SNIPPET = """\
import sys
import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

n = sys.argv[1]
TOOLS = [
    types.Tool(
        name=f"tool_{i}",
        description=f"Tool {i} of server {n}: does one small thing with a path and a count.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}, "count": {"type": "integer"}},
            "required": ["path"],
        },
        annotations=types.ToolAnnotations(read_only_hint=i % 2 == 0),
    )
    for i in range(8)
]

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS, ttl_ms=3_600_000)

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

server = Server(f"bench-{n}", on_list_tools=list_tools, on_call_tool=call_tool)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""

SESSION_SNIPPET = """\
import asyncio, json, sys, time
from handrail import Registry
from handrail.builtin import coding_tools
from handrail.mcp import McpServerConfig, McpTools

configs = [McpServerConfig(**c) for c in json.loads(sys.argv[1])]
lazy, root = sys.argv[2] == "lazy", sys.argv[3]

async def main():
    t0 = time.perf_counter()
    mcp = McpTools(configs, root=root, lazy=lazy)
    await mcp.start()
    registry = Registry(coding_tools(project_dir=root), imported=mcp.tools)
    took = time.perf_counter() - t0
    names = [t.name for t in registry.list()]
    print("READY", json.dumps({"start_s": took, "tools": len(names), "cached": len(mcp.cached),
          "failures": mcp.failures}), flush=True)
    await mcp.aclose()

asyncio.run(main())
"""

KINDS = ("no servers", "eager", "lazy, cold cache", "lazy, warm cache")


async def _session(
    configs: list[dict[str, Any]], lazy: bool, state: Path, root: Path, log: Any
) -> tuple[float, dict[str, Any]]:
    """Spawn one session; (seconds from spawn to READY, what the child reported)."""
    env = {**os.environ, "HANDRAIL_STATE_DIR": str(state)}
    argv = [sys.executable, "-c", SESSION_SNIPPET, json.dumps(configs)]
    argv += ["lazy" if lazy else "eager", str(root)]
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=root, stdout=asyncio.subprocess.PIPE, stderr=log
    )
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)
        elapsed = time.perf_counter() - t0
        if not line.startswith(b"READY "):
            raise RuntimeError(f"the session did not get ready: {line[:300]!r}")
        report: dict[str, Any] = json.loads(line[len(b"READY ") :])
        await asyncio.wait_for(proc.wait(), TIMEOUT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return elapsed, report


async def lazy_rows(runs: int, log: Any) -> tuple[list[list[str]], dict[str, Any]]:
    """The session-start table (median, best, ratio to no servers, target) and raw numbers."""
    work = Path(tempfile.mkdtemp(prefix="handrail-bench-lazy-"))
    try:
        root = work / "project"
        root.mkdir()
        server = work / "server.py"
        server.write_text(SERVER_SNIPPET)
        configs = [
            {"name": f"s{i}", "command": sys.executable, "args": [str(server), str(i)]}
            for i in range(SERVERS)
        ]
        warm, eager_state = work / "warm", work / "eager"
        # Fills the warm cache; also warms the page cache for every kind.
        _, first = await _session(configs, True, warm, root, log)
        if first["failures"] or first["cached"]:
            raise RuntimeError(f"the cold session went wrong: {first}")
        expected = first["tools"]
        times: dict[str, list[float]] = {k: [] for k in KINDS}
        starts: dict[str, list[float]] = {k: [] for k in KINDS}
        for i in range(runs):
            order = list(KINDS) if i % 2 == 0 else list(reversed(KINDS))
            order = order[i % 4 :] + order[: i % 4]
            for kind in order:
                cold = work / f"cold-{i}"
                state = {"eager": eager_state, "lazy, cold cache": cold}.get(kind, warm)
                chosen = [] if kind == "no servers" else configs
                elapsed, report = await _session(chosen, kind != "eager", state, root, log)
                want_cached = SERVERS if kind == "lazy, warm cache" else 0
                if report["failures"] or report["cached"] != want_cached:
                    raise RuntimeError(f"{kind}: unexpected session {report}")
                if kind != "no servers" and report["tools"] != expected:
                    raise RuntimeError(f"{kind}: {report['tools']} tools, not {expected}")
                times[kind].append(elapsed)
                starts[kind].append(report["start_s"])
                shutil.rmtree(cold, ignore_errors=True)
        floor = statistics.median(times["no servers"])
        rows: list[list[str]] = []
        paired_ratios: dict[str, float] = {}
        for kind in KINDS:
            median = statistics.median(times[kind])
            paired = statistics.median(
                t / base for t, base in zip(times[kind], times["no servers"], strict=True)
            )
            paired_ratios[kind] = paired
            target = ""
            if kind == "lazy, warm cache":
                target = f"<= {TARGET}x {'✓' if paired <= TARGET else '✗'}"
            rows.append(
                [
                    kind,
                    f"{median * 1000:.0f}",
                    f"{min(times[kind]) * 1000:.0f}",
                    f"{statistics.median(starts[kind]) * 1000:.1f}",
                    f"{median / floor:.2f}x",
                    f"{paired:.2f}x",
                    target,
                ]
            )
        raw = {
            "session_s": times,
            "start_s": starts,
            "paired_ratio": paired_ratios,
            "servers": SERVERS,
            "tools": expected,
        }
        return rows, raw
    finally:
        shutil.rmtree(work, ignore_errors=True)
