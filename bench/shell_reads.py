"""run_shell start-up with read confinement on and off, in one run.

    python bench/shell_reads.py            # full run: 301 calls per row
    python bench/shell_reads.py --quick    # smoke run: 61 calls per row

Every row is `await rt.call("run_shell", {"command": "true"})` through the whole pipeline
(validation, parsing the command, policy, planning the sandbox, spawn, wait, result), rows
interleaved call by call so that load on the machine hits them alike:

- `reads unconfined`: today's sandbox before read confinement (Landlock for writes, PID, mount
  and network namespaces; no read view): the baseline.
- `reads confined`: the default. On top of the baseline, in the command's mount namespace: a
  tmpfs over the home, the workspace (here inside the home, the case that needs a bind), the
  toolchains on PATH under the home and the default read paths cloned back on top, the hidden
  paths the command could still reach (`/etc/shadow`...) and readable block devices covered,
  and, as root, six capabilities dropped.
- `confine_reads=false`: the home stays visible; only the hidden paths are covered.

The workspace lives in a temporary home (HOME points there for the run), holding a few of the
secrets the hidden list names, so the covers are real; the toolchains on PATH (e.g. pyenv) live
in the real home and are bound back as usual. Reported: median and p95 per row, and the
difference to the baseline in ms and as a ratio; the goal is at most 2 ms more per command.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handrail import Runtime


def make_runtime(root: Path, **options: Any) -> Runtime:
    from handrail import Registry, Runtime
    from handrail.builtin import RunShell

    return Runtime(Registry([RunShell(**options)]), root=root, mode="bypass")


def unconfined_runtime(root: Path) -> Runtime:
    """run_shell as it was before read confinement: no read view at all."""
    from handrail import Registry, Runtime
    from handrail.builtin import RunShell

    class NoReadView(RunShell):
        @staticmethod
        def _read_view(*_: object) -> None:  # type: ignore[override]  # no view: as before
            return None

    return Runtime(Registry([NoReadView()]), root=root, mode="bypass")


def plant_secrets(home: Path) -> None:
    for rel in (".ssh/id_rsa", ".aws/credentials", ".netrc", ".bash_history"):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("bench secret\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(runs: int, root: Path) -> dict[str, list[float]]:
    rows: list[tuple[str, Any]] = [
        ("reads unconfined (before)", unconfined_runtime(root)),
        ("reads confined (default)", make_runtime(root)),
        ("confine_reads=false (secrets hidden)", make_runtime(root, confine_reads=False)),
    ]
    calls: list[tuple[str, Callable[[], Awaitable[object]]]] = []
    expected = {rows[0][0]: "unconfined", rows[1][0]: "confined", rows[2][0]: "secrets_hidden"}
    for name, rt in rows:

        async def call(rt: Any = rt, name: str = name) -> None:
            r = await rt.call("run_shell", {"command": "true"})
            assert r.ok, r.content
            assert r.metadata["reads"] == expected[name], r.metadata

        calls.append((name, call))
    times: dict[str, list[float]] = {name: [] for name, _ in calls}
    for _, fn in calls:  # warm-up: imports, the sandbox probe, the shared network namespace
        for _ in range(3):
            await fn()
    for _ in range(runs):
        for name, fn in calls:
            t = time.perf_counter()
            await fn()
            times[name].append(time.perf_counter() - t)
    for _, rt in rows:
        await rt.aclose()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="61 calls per row instead of 301")
    args = ap.parse_args()
    runs = 61 if args.quick else 301
    from handrail.sandbox import sandbox_support

    support = sandbox_support()
    print(
        f"# run_shell read confinement — {platform.platform()}, Python {platform.python_version()}"
    )
    print(
        f"# {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}; sandbox: "
        f"{support.mechanism} (Landlock ABI {support.landlock}); paths hidden by mounts: "
        f"{support.hides_paths}; uid {os.geteuid()}"
    )
    if not support.available:
        print("\nNo OS sandbox on this machine: nothing to compare.")
        return
    tmp = Path(tempfile.mkdtemp(prefix="handrail-bench-reads-"))
    old_home = os.environ.get("HOME")
    try:
        home = tmp / "home"
        root = home / "work"
        root.mkdir(parents=True)
        plant_secrets(home)
        os.environ["HOME"] = str(home)
        times = asyncio.run(measure(runs, root))
    finally:
        if old_home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old_home
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times["reads unconfined (before)"])
    print(f"\n## `true` through Runtime.call ({runs} calls per row, interleaved)\n")
    print("| Row | Median | p95 | Median vs before | Ratio |")
    print("|---|---|---|---|---|")
    for name, ts in times.items():
        med, p95 = statistics.median(ts), percentile(ts, 0.95)
        print(
            f"| {name} | {med * 1e3:.2f} ms | {p95 * 1e3:.2f} ms | "
            f"{(med - base) * 1e3:+.2f} ms | {med / base:.2f}x |"
        )
    extra = (statistics.median(times["reads confined (default)"]) - base) * 1e3
    verdict = "within" if extra <= 2.0 else "over"
    print(f"\nReads confined costs {extra:+.2f} ms per command: {verdict} the 2 ms goal.")


if __name__ == "__main__":
    main()
