"""MCP content round trips: an image and a 1 MB resource, through `handrail serve` vs direct.

    python bench/mcp_content.py            # 60 rounds per row, about a minute
    python bench/mcp_content.py --quick    # 15 rounds

One client process, the official `mcp` SDK client, holds two stdio sessions at once: one to the
test suite's content server (tests/mcp/servers/content_server.py, the SDK's low-level server)
and one to `handrail serve`, which has the same server configured as an upstream MCP server, so
every handrail call is client -> handrail -> server -> handrail -> client. A third session goes
to the thinnest proxy the SDK allows (bench/_mcp_proxy.py: forwards the call, returns the
result as it came, no checks): the floor any proxy pays for the extra hop. Each round times one
call on each, interleaved (the order rotates), for: `picture` (a PNG image block), `blob`
with 1 MiB (an embedded blob resource, 1.4 MB of base64) and, for scale, `echo` (text). Every
answer is compared with the direct one outside the timed part (same blocks, same bytes); a
difference stops the run. Prints p50 / p99 per side and the ratio of the p50s; the goal
(issue 12) is <= 1.2x for the image and the resource. Raw numbers go to
bench/out/mcp_content.json. Compare rows within one run; the header prints the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]  # this folder holds mcp.py, which would shadow the SDK

import anyio  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from mcp import Client  # noqa: E402

SERVER = ROOT / "tests" / "mcp" / "servers" / "content_server.py"
ROWS = [
    ("image (PNG block)", "picture", {}),
    ("1 MiB embedded blob resource", "blob", {"size": 1 << 20}),
    ("text (echo), for scale", "echo", {"text": "hello"}),
]
GOAL = 1.2


def blocks(result: Any) -> list[dict[str, Any]]:
    return [b.model_dump(by_alias=True, exclude_none=True, mode="json") for b in result.content]


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.2f} / {pct(values, 0.99) * 1e3:.2f}"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(rounds: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-mcp-content-"))
    (work / "ws").mkdir()
    (work / "xdg" / "handrail").mkdir(parents=True)
    upstream = {"command": sys.executable, "args": [str(SERVER)]}
    (work / "xdg" / "handrail" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"content": upstream}})
    )
    direct = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    served = StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "serve", "--root", str(work / "ws"), "--mode", "bypass"],
        env={**os.environ, "XDG_CONFIG_HOME": str(work / "xdg")},
        cwd=str(work),
    )
    proxy = StdioServerParameters(
        command=sys.executable, args=[str(HERE / "_mcp_proxy.py"), sys.executable, str(SERVER)]
    )
    times: dict[str, dict[str, list[float]]] = {}
    async with (
        Client(direct, mode="legacy") as a,
        Client(served, mode="legacy") as h,
        Client(proxy, mode="legacy") as p,
    ):
        await a.list_tools()
        await h.list_tools()
        await p.list_tools()
        for label, name, args in ROWS:
            want = await a.call_tool(name, args)
            got = await h.call_tool(f"mcp__content__{name}", args)
            if blocks(got) != blocks(want):
                raise SystemExit(f"{label}: handrail's answer differs from the server's")
            side: dict[str, list[float]] = {"direct": [], "handrail": [], "proxy": []}
            for i in range(rounds + 3):
                order = [
                    ("direct", a, name),
                    ("handrail", h, f"mcp__content__{name}"),
                    ("proxy", p, name),
                ]
                order = order[i % 3 :] + order[: i % 3]  # rotate who goes first
                for key, client, tool in order:
                    t0 = time.perf_counter()
                    await client.call_tool(tool, args)
                    if i >= 3:  # the first rounds warm both paths up
                        side[key].append(time.perf_counter() - t0)
            times[label] = side
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    opts = parser.parse_args()
    rounds = opts.rounds or (15 if opts.quick else 60)
    print(
        f"# MCP content round trips ({rounds} rounds; load average {os.getloadavg()[0]:.2f}; "
        f"{os.cpu_count()} CPUs)\n"
    )
    times = anyio.run(run, rounds)
    print(
        "| content | direct p50 / p99 ms | through handrail p50 / p99 ms | ratio p50 "
        "| reference: bare SDK proxy p50 ms | its ratio |"
    )
    print("|---|---|---|---|---|---|")
    out: dict[str, Any] = {}
    for label, side in times.items():
        d, h, p = side["direct"], side["handrail"], side["proxy"]
        ratio = statistics.median(h) / statistics.median(d)
        floor = statistics.median(p) / statistics.median(d)
        mark = "" if label.startswith("text") else (" ✓" if ratio <= GOAL else " ✗")
        print(
            f"| {label} | {ms(d)} | {ms(h)} | {ratio:.2f}x{mark} | "
            f"{statistics.median(p) * 1e3:.2f} | {floor:.2f}x |"
        )
        out[label] = {"direct_s": d, "handrail_s": h, "proxy_s": p, "ratio_p50": ratio}
    target = HERE / "out" / "mcp_content.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(out, indent=1))
    print(f"\nraw results: {target}")


if __name__ == "__main__":
    main()
