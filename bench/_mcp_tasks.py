"""What running a tool as an MCP task costs over calling it directly, through handrail.

    python bench/_mcp_tasks.py            # 400 rounds
    python bench/_mcp_tasks.py --quick    # 60 rounds

One server process (`tests/mcp/servers/tasks_server.py`, stdio) offers the same tool body
(echo a text) twice: `quick` requires MCP tasks, `quick_direct` is called directly. Each round
times `await rt.call(...)` on both through one `Runtime` and one `McpTools` (validation,
policy, the MCP round trips, result shaping), the order turning every round so load on the
machine hits both alike. A task call is three requests (`tools/call` with `task`, one
`tasks/get` at once, `tasks/result`) where a direct call is one; the server's suggested
`pollInterval` (50 ms) costs nothing here because its task is done before the first poll.
Rows: p50 / p99 of each, and of the per-round difference (task - direct). Every answer is
checked outside the timed part; a wrong one stops the run.

`task_overhead(rounds)` is what `bench/mcp.py` calls; it returns the table's header and rows.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    del sys.path[0]  # this folder holds mcp.py, which would shadow the SDK

SERVER = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "servers" / "tasks_server.py"
CALL_TIMEOUT = 30.0
WARMUP = 20


@dataclass
class TaskOverhead:
    """The measured rounds, as a printable table and as raw numbers."""

    rounds: int
    direct: list[float] = field(default_factory=list[float])
    task: list[float] = field(default_factory=list[float])

    @property
    def header(self) -> list[str]:
        """The table's column names."""
        return ["call", "p50 ms", "p99 ms"]

    @property
    def rows(self) -> list[list[str]]:
        """One row per series: direct, task, and the per-round difference."""
        diffs = [t - d for t, d in zip(self.task, self.direct, strict=True)]
        return [
            ["direct (`quick_direct`, taskSupport optional)", *_p50_p99(self.direct)],
            ["as a task (`quick`, taskSupport required)", *_p50_p99(self.task)],
            ["overhead per call (task - direct, same round)", *_p50_p99(diffs)],
        ]

    def as_json(self) -> dict[str, Any]:
        """The raw seconds of every round."""
        return {"rounds": self.rounds, "direct_s": self.direct, "task_s": self.task}


async def task_overhead(rounds: int) -> TaskOverhead:
    """Time `rounds` interleaved direct and task calls of the same tool body."""
    from handrail import Runtime
    from handrail.mcp import McpServerConfig, McpTools

    out = TaskOverhead(rounds)
    config = McpServerConfig(name="tasks", command=sys.executable, args=(str(SERVER),))
    with tempfile.TemporaryDirectory(prefix="bench-mcp-tasks-") as root:
        async with McpTools([config], root=root, call_timeout=CALL_TIMEOUT) as mcp:
            if mcp.failures:
                raise SystemExit(f"the tasks server did not start: {mcp.failures}")
            rt = Runtime(mcp.registry(), root=root, mode="bypass")
            calls = {"direct": "mcp__tasks__quick_direct", "task": "mcp__tasks__quick"}
            for i in range(WARMUP + rounds):
                order = ["direct", "task"] if i % 2 == 0 else ["task", "direct"]
                for kind in order:
                    text = f"round {i} {kind}"
                    t0 = time.perf_counter()
                    result = await rt.call(calls[kind], {"text": text})
                    elapsed = time.perf_counter() - t0
                    if not result.ok or result.content != text:
                        raise SystemExit(f"{calls[kind]} answered wrongly: {result.content!r}")
                    if i >= WARMUP:
                        getattr(out, kind).append(elapsed)
            await rt.aclose()
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def _p50_p99(values: list[float]) -> list[str]:
    return [f"{statistics.median(values) * 1000:.2f}", f"{_pct(values, 99) * 1000:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 rounds instead of 400")
    parser.add_argument("--rounds", type=int, default=None)
    opts = parser.parse_args()
    rounds = opts.rounds or (60 if opts.quick else 400)
    result = asyncio.run(task_overhead(rounds))
    header, rows = result.header, result.rows
    print(f"MCP task-required call vs direct call, {rounds} rounds, interleaved\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
