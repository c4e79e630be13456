"""run_shell start-up: the read-only sandbox and the isolated view against the previous release.

    python bench/shell_sandbox.py                 # 301 calls per row
    python bench/shell_sandbox.py --quick         # 61 calls per row
    python bench/shell_sandbox.py --base REV      # compare with another release (a git rev)

Every row is `await rt.call("run_shell", {"command": "true"})` through the whole pipeline
(validation, parsing, policy, planning the sandbox, spawn, wait, result), interleaved call by
call (the order turning every round) so that load on the machine hits every row alike:

- `unasked (read-only sandbox)`: this tree, default mode, where `true` runs unasked: no write
  roots, a fresh /proc (PID 1 forked by the setup), the session's /tmp, an empty /run, other
  programs' sockets covered.
- `approved (write roots)`: this tree, bypass mode: the same plus the write roots, `.git`
  found and bound read-only at any depth, hidden paths pinned.
- `previous release`: the same call, default mode, in the release at `--base` (default: the
  commit this work started from), run in a child process from `git archive` of that commit:
  the parent tells it when to make each call, so the rows stay interleaved.

The workspace is a temporary folder with a small git repository in it. Reported: median and p95
per row and the difference to the previous release; the goal is at most 1 ms more per command
for the read-only sandbox with its fresh /proc.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BASE = "7355959"
"""The release before the read-only sandbox (the commit this work started from)."""

_CHILD = r"""
import asyncio, sys, time
from pathlib import Path
from handrail import Registry, Runtime
from handrail.builtin import RunShell

async def main():
    rt = Runtime(Registry([RunShell()]), root=Path(sys.argv[1]))
    for line in sys.stdin:
        t = time.perf_counter()
        r = await rt.call("run_shell", {"command": "true"})
        dt = time.perf_counter() - t
        assert r.ok, r.content
        print(dt, flush=True)
    await rt.aclose()

asyncio.run(main())
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def extract(rev: str, into: Path) -> Path:
    """`src/` of the release at `rev`, from git."""
    repo = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


class Previous:
    """The previous release in a child process, one call per request."""

    def __init__(self, src: Path, root: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )

    def call(self) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


async def measure(runs: int, root: Path, previous: Previous) -> dict[str, list[float]]:
    from handrail import Registry, Runtime
    from handrail.builtin import RunShell

    unasked = Runtime(Registry([RunShell()]), root=root)
    approved = Runtime(Registry([RunShell()]), root=root, mode="bypass")
    expected = {"unasked (read-only sandbox)": "tmpdir", "approved (write roots)": "write_roots"}
    rows: dict[str, Any] = {
        "unasked (read-only sandbox)": unasked,
        "approved (write roots)": approved,
        "previous release": previous,
    }
    times: dict[str, list[float]] = {name: [] for name in rows}

    async def one(name: str) -> float:
        target = rows[name]
        if isinstance(target, Previous):
            return await asyncio.to_thread(target.call)
        t = time.perf_counter()
        r = await target.call("run_shell", {"command": "true"})
        dt = time.perf_counter() - t
        assert r.ok and r.metadata["writes"] == expected[name], (r.content, r.metadata)
        return dt

    for name in rows:  # warm-up: imports, the sandbox probe, the first `.git` search
        for _ in range(3):
            await one(name)
    names = list(rows)
    for i in range(runs):
        # The order turns every round: a call should not always follow the same other row
        # (a command's namespaces are torn down by the kernel after it has returned).
        for name in names[i % 3 :] + names[: i % 3]:
            times[name].append(await one(name))
    await unasked.aclose()
    await approved.aclose()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="61 calls per row instead of 301")
    ap.add_argument("--base", default=BASE, help=f"the release to compare with (default {BASE})")
    args = ap.parse_args()
    runs = 61 if args.quick else 301
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from handrail.sandbox import sandbox_support

    support = sandbox_support()
    print(
        f"# run_shell sandbox start-up — {platform.platform()}, Python {platform.python_version()}"
    )
    print(
        f"# {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; sandbox: "
        f"{support.mechanism} (Landlock ABI {support.landlock}); fresh /proc: "
        f"{support.fresh_proc}; uid {os.geteuid()}; previous release: {args.base}"
    )
    if not support.available:
        print("\nNo OS sandbox on this machine: nothing to compare.")
        return
    tmp = Path(tempfile.mkdtemp(prefix="handrail-bench-sandbox-"))
    previous = None
    try:
        root = tmp / "work"
        root.mkdir()
        (root / "a.txt").write_text("a\n")
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        previous = Previous(extract(args.base, tmp), root)
        times = asyncio.run(measure(runs, root, previous))
    finally:
        if previous is not None:
            previous.close()
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times["previous release"])
    print(f"\n## `true` through Runtime.call ({runs} calls per row, interleaved)\n")
    print("| Row | Median | p95 | Median vs previous | Ratio |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        med, p95 = statistics.median(ts), percentile(ts, 0.95)
        print(
            f"| {name} | {med * 1e3:.2f} ms | {p95 * 1e3:.2f} ms | "
            f"{(med - base) * 1e3:+.2f} ms | {med / base:.2f}x |"
        )
    extra = (statistics.median(times["unasked (read-only sandbox)"]) - base) * 1e3
    verdict = "within" if extra <= 1.0 else "over"
    print(f"\nThe read-only sandbox costs {extra:+.2f} ms per command: {verdict} the 1 ms goal.")


if __name__ == "__main__":
    main()
