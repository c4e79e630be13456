"""edit_file speed on large files: does the time grow linearly with the file's size?

Run it with the repo venv (no extra packages):

    source /work/venv/bin/activate   # or any env with handrail installed
    python bench/edit.py                       # 5, 10, 25, 50 MB; 5 edits per size
    python bench/edit.py --sizes 5 50 --repeat 3

For each size a text file of distinct numbered lines (about 64 bytes each) is generated in a
temporary directory, recorded as read in full in the session (as read_file would), and edited
through `Runtime.call("edit_file", ...)`: one line in the middle changes each time, so every call
really rewrites the file (read, checks, match, encode, atomic write with fsync, diff, record).
Each edit leaves the session's record current, so no re-read is needed between edits.

Three cases per size:
- `exact`: an LF file, old_string copied exactly (the common case);
- `crlf`: a CRLF file edited with an LF old_string (the line-ending rung: the file is normalised
  and positions are mapped back);
- `miss`: a two-line old_string that is not in the file (TEXT_NOT_FOUND, with the search for
  the most similar lines). A one-line miss also compares against parts of lines in files of up
  to 200,000 lines (about 1.5 us a line), so it is slower below that size and not comparable
  across it; two lines keep the work the same at every size.

It prints the median time per call and per MB; the last lines give, per case, time/MB at the
largest size divided by time/MB at the smallest: close to 1 means linear growth. The temporary
directory is removed at the end. Timings on a shared VM move with load: compare within a run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from handrail import FileRecord, Registry, Runtime
from handrail.builtin._edit_file import EditFile

MB = 1024 * 1024
LINE = "line {:09d}: the quick brown fox jumps over the lazy dog {:>4}"


def generate(path: Path, size_mb: int, newline: str) -> int:
    """Write about `size_mb` MB of numbered lines; the number of lines."""
    n = size_mb * MB // (len(LINE.format(0, 0)) + len(newline))
    with path.open("w", encoding="utf-8", newline="") as f:
        chunk: list[str] = []
        for i in range(n):
            chunk.append(LINE.format(i, i % 1000) + newline)
            if len(chunk) == 10_000:
                f.write("".join(chunk))
                chunk.clear()
        f.write("".join(chunk))
    return n


def mark_read(rt: Runtime, path: Path) -> None:
    """Record a full read of `path` in the runtime's session (what read_file records)."""
    data = path.read_bytes()
    st = path.stat()
    rt.session.files[os.path.realpath(path)] = FileRecord(
        mtime_ns=st.st_mtime_ns,
        size=st.st_size,
        sha256=hashlib.sha256(data).hexdigest(),
        complete=True,
    )


async def timed_edits(rt: Runtime, path: Path, middle: int, repeat: int, case: str) -> list[float]:
    times: list[float] = []
    for k in range(repeat):
        current = LINE.format(middle, middle % 1000) if k == 0 else f"edited {k - 1}"
        args = {"file_path": str(path), "old_string": current, "new_string": f"edited {k}"}
        if case == "crlf":
            nxt = LINE.format(middle + 1, (middle + 1) % 1000)
            args["old_string"] += "\n" + nxt  # LF sent for a CRLF file: rung 2
            args["new_string"] += "\n" + nxt
        elif case == "miss":
            nxt = LINE.format(middle + 1, (middle + 1) % 1000)
            args["old_string"] = f"line {middle:09d}: the quick brown cat\n{nxt}"
        gc.collect()
        t0 = time.perf_counter()
        r = await rt.call("edit_file", args)
        times.append(time.perf_counter() - t0)
        expected_ok = case != "miss"
        if r.ok != expected_ok:
            raise SystemExit(f"{case}: unexpected result: {r.error} {r.content[:300]}")
        if case == "crlf" and r.metadata.get("match") != "line_endings":
            raise SystemExit(f"crlf: matched on {r.metadata.get('match')!r}")
    return times


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 25, 50])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cases", nargs="+", default=["exact", "crlf", "miss"])
    opts = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="handrail-bench-edit-"))
    per_mb: dict[str, dict[int, float]] = {c: {} for c in opts.cases}
    try:
        rt = Runtime(Registry([EditFile()]), root=tmp, mode="accept_edits")
        print(f"edit_file through Runtime.call; median of {opts.repeat} calls; dir {tmp}")
        print(f"{'case':<6} {'size':>6} {'median s':>9} {'min s':>7} {'ms/MB':>7}")
        for size in opts.sizes:
            for case in opts.cases:
                path = tmp / f"{case}-{size}mb.txt"
                lines = generate(path, size, "\r\n" if case == "crlf" else "\n")
                mb = path.stat().st_size / MB
                mark_read(rt, path)
                times = await timed_edits(rt, path, lines // 2, opts.repeat, case)
                med = statistics.median(times)
                per_mb[case][size] = med / mb * 1000
                print(
                    f"{case:<6} {mb:>5.1f}M {med:>9.3f} {min(times):>7.3f} "
                    f"{per_mb[case][size]:>7.1f}"
                )
                path.unlink()
        lo, hi = min(opts.sizes), max(opts.sizes)
        if lo != hi:
            print(f"\ntime/MB at {hi} MB / time/MB at {lo} MB (1.0 = linear):")
            for case in opts.cases:
                print(f"  {case:<6} {per_mb[case][hi] / per_mb[case][lo]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
