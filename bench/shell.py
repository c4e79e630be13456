"""run_shell speed and memory: handrail's shell tool against a bare subprocess, in one run.

One command, with the repo's venv (handrail importable):

    python bench/shell.py            # full run: 41 spawns per row, 1 GB of output
    python bench/shell.py --quick    # smoke run: 11 spawns per row, 200 MB of output

Rows:
- Spawn overhead for `true`. `bare exec` is `asyncio.create_subprocess_exec("true")` (the floor:
  one fork+exec); `bare bash -c` adds the shell run_shell always uses. The handrail rows are
  `await rt.call("run_shell", {"command": "true"})` through the whole pipeline (validation,
  parsing the command, policy, spawn, wait, result), sandboxed (Landlock + PID, mount and
  network namespaces) and with `sandbox=False` (a PID namespace only, so nothing outlives the
  call). Interleaved, medians, ratio against `bare bash -c`.
- A command writing N bytes to stdout (`head -c N /dev/zero | tr '\\0' 'x' | fold -w 100`):
  the same command with `> /dev/null` as a bare subprocess, against run_shell capturing it
  (head + tail for the model, full copy on disk); `> file` shows what the disk write alone
  costs. Each run happens in a fresh Python process,
  which reports its wall time and its peak RSS growth (VmHWM after - VmRSS before).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


async def bare_exec() -> None:
    p = await asyncio.create_subprocess_exec("true")
    await p.wait()


async def bare_bash() -> None:
    p = await asyncio.create_subprocess_exec("bash", "-c", "true")
    await p.wait()


def make_runtime(root: Path, sandbox: bool):  # type: ignore[no-untyped-def]
    from handrail import Registry, Runtime
    from handrail.builtin import RunShell

    return Runtime(Registry([RunShell(sandbox=sandbox)]), root=root, mode="bypass")


async def spawn_rows(runs: int, root: Path) -> list[tuple[str, float]]:
    from handrail.sandbox import sandbox_support

    support = sandbox_support()
    rows: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("bare exec `true`", bare_exec),
        ("bare `bash -c true`", bare_bash),
    ]
    unsandboxed = make_runtime(root, sandbox=False)

    async def call_plain() -> None:
        r = await unsandboxed.call("run_shell", {"command": "true"})
        assert r.ok, r.content

    rows.append(("handrail run_shell, sandbox=False", call_plain))
    if support.available:
        sandboxed = make_runtime(root, sandbox=True)

        async def call_sandboxed() -> None:
            r = await sandboxed.call("run_shell", {"command": "true"})
            assert r.ok, r.content

        rows.append((f"handrail run_shell, sandboxed ({support.mechanism})", call_sandboxed))
    times: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _, fn in rows:  # warm-up
        await fn()
    for _ in range(runs):
        for name, fn in rows:
            t = time.perf_counter()
            await fn()
            times[name].append(time.perf_counter() - t)
    await unsandboxed.aclose()
    return [(name, statistics.median(ts)) for name, ts in times.items()]


CHILD = r"""
import asyncio, json, sys, time
sys.path[:0] = [SRC]
mode, nbytes, root = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cmd = f"head -c {nbytes} /dev/zero | tr '\\0' 'x' | fold -w 100"
def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
async def main():
    if mode in ("bare", "bare_file"):
        sink = "/dev/null" if mode == "bare" else root + "/bare-output.txt"
        before = rss("VmRSS")
        t = time.perf_counter()
        p = await asyncio.create_subprocess_exec("bash", "-c", cmd + " > " + sink)
        await p.wait()
        return time.perf_counter() - t, before, True, "" if mode == "bare" else sink
    from handrail import Registry, Runtime
    from handrail.builtin import RunShell
    rt = Runtime(Registry([RunShell(sandbox=(mode == "sandboxed"))]), root=root, mode="bypass")
    await rt.call("run_shell", {"command": "true"})  # warm: imports, probes, parser
    before = rss("VmRSS")
    t = time.perf_counter()
    r = await rt.call("run_shell", {"command": cmd, "timeout_seconds": 600})
    took = time.perf_counter() - t
    await rt.aclose()
    return took, before, r.ok, r.metadata.get("output_file", "")
took, before, ok, spill = asyncio.run(main())
print(json.dumps({"seconds": took, "growth_kib": rss("VmHWM") - before, "ok": ok, "spill": spill}))
"""


def output_run(mode: str, nbytes: int, root: Path) -> dict[str, object]:
    code = CHILD.replace("SRC", repr(str(HERE.parent / "src")))
    out = subprocess.run(
        [sys.executable, "-c", code, mode, str(nbytes), str(root)],
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    data: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    spill = data.get("spill")
    if isinstance(spill, str) and spill:
        Path(spill).unlink(missing_ok=True)  # 1 GB of x's need not stay on disk
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs, 200 MB instead of 1 GB")
    args = ap.parse_args()
    runs = 11 if args.quick else 41
    nbytes = 200_000_000 if args.quick else 1_000_000_000
    repeats = 1 if args.quick else 3
    from handrail.sandbox import sandbox_support

    support = sandbox_support()
    print(f"# run_shell benchmark — {platform.platform()}, Python {platform.python_version()}")
    print(
        f"# {os.cpu_count()} CPUs; sandbox: {support.mechanism} (Landlock ABI {support.landlock})"
    )
    with tempfile.TemporaryDirectory(prefix="handrail-bench-shell-") as tmp:
        root = Path(tmp)
        rows = asyncio.run(spawn_rows(runs, root))
        base = dict(rows)["bare `bash -c true`"]
        print(f"\n## Spawn overhead for `true` (median of {runs}, interleaved)\n")
        print("| Row | Median | vs bare `bash -c true` |")
        print("|---|---|---|")
        for name, t in rows:
            print(f"| {name} | {t * 1e3:.2f} ms | {t / base:.2f}x |")

        print(f"\n## {nbytes / 1e9:g} GB to stdout (best of {repeats}, fresh process each)\n")
        print("| Row | Wall time | vs bare `> /dev/null` | Peak RSS growth |")
        print("|---|---|---|---|")
        modes = ["bare", "bare_file", "unsandboxed"] + (["sandboxed"] if support.available else [])
        best: dict[str, dict[str, object]] = {}
        for _ in range(repeats):
            for mode in modes:
                d = output_run(mode, nbytes, root)
                assert d["ok"], d
                if mode not in best or float(d["seconds"]) < float(best[mode]["seconds"]):  # type: ignore[arg-type]
                    best[mode] = d
        bare = float(best["bare"]["seconds"])  # type: ignore[arg-type]
        labels = {
            "bare": "bare `bash -c '... > /dev/null'`",
            "bare_file": "bare `bash -c '... > file'` (the same disk write as the full copy)",
            "unsandboxed": "handrail run_shell, sandbox=False",
            "sandboxed": "handrail run_shell, sandboxed",
        }
        for mode in modes:
            d = best[mode]
            secs = float(d["seconds"])  # type: ignore[arg-type]
            growth = int(d["growth_kib"]) / 1024  # type: ignore[arg-type]
            print(f"| {labels[mode]} | {secs:.2f} s | {secs / bare:.2f}x | {growth:.1f} MiB |")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
