"""Checkpoints: the time they add to each call that changes files, restore time, bytes stored.

One command, with the repo's venv (handrail importable; git, and Linux for inotify):

    python bench/checkpoints.py            # full run: 200 calls per row and side, 1.5-3 minutes
    python bench/checkpoints.py --quick    # smoke run: 30 calls per row, about 1 minute

The workspace is generated, deterministic, shaped like a real repository: 5,000 tracked files
(about 70% Python in nested packages, 15% Markdown docs, 15% JSON fixtures; 1-40 KB each,
log-uniform, tiny `__init__.py` files aside), a `.gitignore`, a `node_modules/` of 2,000 small
files and a `build/` folder that it ignores, `__pycache__` folders; then `git init`, one commit
and a repack, so it is a real git repository. It lives in a temporary folder with a temporary
`HANDRAIL_STATE_DIR`; each runtime gets its own copy (`cp -a`; the generated tree itself is the
"off" side's), and everything is removed at the end (`--keep` leaves it). No network.

Every runtime is `Runtime(coding_tools(), root=COPY, mode="bypass", checkpoints=ON)` with its
own copy, so a change on one side is never seen by the other. Per row, each iteration makes the
same call on the "off" and the "on" copy (same file, same arguments), the order alternating,
and times `await rt.call(...)` alone; p50 / p99 per side, added = on - off (of the p50s, of the
p99s) and the ratio of the p50s. Every iteration changes a different file.

- `edit_file`: a one-line replacement, after an untimed full `read_file` of the file;
- `run_shell sed -i`: `sed -i 's/OLD/NEW/' FILE` (sed writes a temporary file and renames it);
- `run_shell echo >>`: `echo '# ...' >> FILE` (an append in place);
- `write_file`: a new 4 KB file in an existing package folder;
- `edit_file, inotify off`: the edit row on a runtime whose `ChangeWatch` was made with
  `handrail.sandbox._change_watch._inotify` patched to return None, so every `begin` and `end`
  compares the whole tree by stat keys (the fallback when inotify is missing or overflowed);
  `--fallback-iterations` calls (50; 10 with `--quick`).

The "on" runtimes' `Checkpoints.begin` and `end` are wrapped to time them (p50 in the table):
`begin` runs in a worker thread (`asyncio.to_thread`), `end` on the loop; the rest of the added
time is the thread hop and the runtime's bookkeeping. Each "on" call is checked: its checkpoint
must list exactly the file the call changed.

One-time and storage rows:
- baseline: the first call of a session with checkpoints on walks the workspace and copies
  every tracked file into the store. Timed on the first edit of the "on" copy, and for a second
  session on a workspace whose store already holds every content (the restore sessions);
- store size after the baseline (content bytes, blobs, the session log, disk usage);
- bytes stored per checkpoint: growth of the store's contents plus the session log per "on"
  call, against the size of the file the call changed (a whole new content is kept per change:
  the goal is storage proportional to the changed files, not the workspace);
- restore: a fresh copy, then sessions of 50 mixed calls (20 edit_file, 10 sed -i, 5 echo >>,
  10 write_file, 3 rm, 2 mv); `await rt.restore(1)` timed (it must give back the pristine tree,
  checked file by file), then `await rt.restore(result.undo)` (it must give back the state after
  the 50 calls); then an untimed restore(1) to start the next session from the pristine tree.

Goals (the issue): <= 5 ms p50 added per edit_file and per run_shell line; restore <= 1 s;
storage proportional to what changed. Raw samples go to `bench/out/checkpoints.json`. The VM is
shared: compare within one run; the header and the footer print the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

# The state folder must be set before handrail reads it: a temporary one, removed at the end.
TMP = Path(tempfile.mkdtemp(prefix="handrail-bench-checkpoints-"))
os.environ["HANDRAIL_STATE_DIR"] = str(TMP / "state")

import handrail  # noqa: E402
import handrail.sandbox._change_watch as change_watch  # noqa: E402
from handrail import Runtime  # noqa: E402
from handrail.builtin import coding_tools  # noqa: E402
from handrail.sandbox import Checkpoints  # noqa: E402

GOAL_ADDED_MS = 5.0
GOAL_RESTORE_MS = 1000.0
GOAL_STORED_RATIO = 2.0
"""Bytes stored per checkpoint (contents + log) at most this many times the changed file's size."""

WORDS = (
    "alpha beta gamma delta value result config handler request response buffer cache index "
    "token parser node tree item record stream session client server module loader schema "
    "field user order invoice payment queue worker event metric report export import"
).split()


# -- the workspace -----------------------------------------------------------------------------


def _py_lines(rng: random.Random, n: int) -> list[str]:
    out: list[str] = []
    for _ in range(n):
        r = rng.random()
        a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
        if r < 0.08:
            out.append("")
            out.append(f"def {a}_{b}(self, {c}: int = {rng.randint(0, 99)}) -> dict[str, Any]:")
        elif r < 0.11:
            out.append("")
            out.append(f"class {a.capitalize()}{b.capitalize()}({c.capitalize()}Base):")
        elif r < 0.18:
            out.append(f'    """Return the {a} of the {b} for {c}."""')
        elif r < 0.26:
            out.append(f"    return self.{a}.{b}({c}, timeout={rng.randint(1, 60)})")
        elif r < 0.33:
            out.append(f"    # {a} {b} {c}: see the {rng.choice(WORDS)} notes")
        elif r < 0.40:
            out.append(f"    if {a} is None or {b} > {rng.randint(0, 999)}:")
        else:
            out.append(f"        {a}_{b} = {c}.get_{rng.choice(WORDS)}({rng.randint(0, 99)})")
    return out


def _md(rng: random.Random, size: int, marker: str) -> str:
    parts = [f"# {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}", "", f"<!-- {marker} -->"]
    total = 60
    while total < size:
        if rng.random() < 0.15:
            line = f"\n## {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}\n"
        elif rng.random() < 0.2:
            line = (
                f"- `{rng.choice(WORDS)}_{rng.choice(WORDS)}`: {' '.join(rng.choices(WORDS, k=8))}"
            )
        else:
            line = " ".join(rng.choices(WORDS, k=rng.randint(6, 12))).capitalize() + "."
        parts.append(line)
        total += len(line) + 1
    return "\n".join(parts) + "\n"


def _json(rng: random.Random, size: int, marker: str) -> str:
    records: list[dict[str, Any]] = []
    total = 40
    while total < size:
        rec = {
            "id": rng.randint(1, 10**6),
            "name": f"{rng.choice(WORDS)}-{rng.choice(WORDS)}",
            "value": round(rng.random() * 1000, 3),
            "tags": rng.sample(WORDS, 3),
        }
        records.append(rec)
        total += 110
    rows = ",\n".join("    " + json.dumps(r) for r in records)
    return f'{{\n  "rev": "{marker}",\n  "records": [\n{rows}\n  ]\n}}\n'


def _size(rng: random.Random) -> int:
    """1-40 KB, log-uniform (median about 6 KB)."""
    return int(math.exp(rng.uniform(math.log(1024), math.log(40 * 1024))))


def generate(tree: Path, files: int) -> list[str]:
    """Write the workspace; returns the tracked files' paths (relative), each with a marker."""
    rng = random.Random(20270311)
    tree.mkdir(parents=True)
    (tree / ".gitignore").write_text(
        "node_modules/\nbuild/\n__pycache__/\n*.pyc\n.env\ndist/\n*.egg-info/\n"
    )
    top = {
        "README.md": _md(rng, 6000, "REV-readme-0"),
        "LICENSE": "MIT License\n\nCopyright (c) bench\n" + "Permission is hereby granted.\n" * 30,
        "pyproject.toml": '[project]\nname = "app"\nversion = "1.0.0"\n',
        "Makefile": "test:\n\tpytest -q\n",
        "package.json": '{"name": "app", "private": true}\n',
    }
    for name, text in top.items():
        (tree / name).write_text(text)
    tracked: list[str] = []
    count = len(top) + 1
    n = 0
    while count < files:
        r = rng.random()
        if r < 0.70:
            pkg, sub = n % 24, (n // 24) % 8
            folder = Path("src/app") / f"pkg{pkg:02d}" / f"sub{sub}"
            if not (tree / folder).exists():
                (tree / folder).mkdir(parents=True)
                for level in (folder, folder.parent):
                    init = tree / level / "__init__.py"
                    if not init.exists() and count < files:
                        init.write_text(f'"""{level.name}."""\n' if rng.random() < 0.6 else "")
                        count += 1
                pyc = tree / folder / "__pycache__"
                pyc.mkdir()
                for k in range(3):
                    (pyc / f"module{k}.cpython-311.pyc").write_bytes(rng.randbytes(2048))
            rel = folder / f"{rng.choice(WORDS)}_{n:05d}.py"
            marker = f"REV-{n}-0"
            size = _size(rng)
            lines = [f'"""{rng.choice(WORDS).capitalize()} module ({marker})."""', ""]
            lines += ["from __future__ import annotations", "", "from typing import Any", ""]
            body = _py_lines(rng, max(1, size // 42))
            text = "\n".join(lines + body) + "\n"
        elif r < 0.85:
            rel = Path("docs") / f"section{n % 12:02d}" / f"{rng.choice(WORDS)}_{n:05d}.md"
            marker = f"REV-{n}-0"
            text = _md(rng, _size(rng), marker)
        else:
            rel = Path("tests/fixtures") / f"set{n % 16:02d}" / f"{rng.choice(WORDS)}_{n:05d}.json"
            marker = f"REV-{n}-0"
            text = _json(rng, _size(rng), marker)
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
        tracked.append(str(rel))
        count += 1
        n += 1
    # Ignored: node_modules (3,000 small files), build output.
    for p in range(100):
        pkg = tree / "node_modules" / f"pkg-{rng.choice(WORDS)}-{p}"
        (pkg / "lib").mkdir(parents=True)
        (pkg / "package.json").write_text(f'{{"name": "pkg-{p}", "version": "1.{p}.0"}}\n')
        for k in range(19):  # 20 files a package
            (pkg / "lib" / f"f{k}.js").write_text(f"module.exports = {p * 100 + k};\n" * 40)
    (tree / "build").mkdir()
    for k in range(50):
        (tree / "build" / f"out{k}.o").write_bytes(rng.randbytes(4096))
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    git += ["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    steps = [["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]]
    # One pack instead of 5,000 loose objects: every copy of the tree is cheaper to make and remove.
    steps += [["repack", "-a", "-d", "-q"], ["prune-packed", "-q"]]
    for args in steps:
        subprocess.run([*git, *args], cwd=tree, env=env, check=True, capture_output=True)
    return tracked


def tree_stats(tree: Path) -> dict[str, Any]:
    """Tracked files and bytes (what checkpoints keep), ignored files, folders, the commit."""
    tracked = tracked_bytes = ignored = folders = 0
    for folder, dirs, names in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git"]
        rel = os.path.relpath(folder, tree)
        skip = rel.split(os.sep)[0] in ("node_modules", "build") or "__pycache__" in rel
        folders += not skip
        for name in names:
            if skip:
                ignored += 1
            else:
                tracked += 1
                tracked_bytes += os.lstat(os.path.join(folder, name)).st_size
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True
    ).stdout.strip()
    return {
        "tracked": tracked,
        "tracked_bytes": tracked_bytes,
        "ignored": ignored,
        "folders": folders,
        "commit": head,
    }


def manifest(tree: Path) -> dict[str, tuple[str, int]]:
    """path -> (sha256, mode) of every file and folder outside `.git`: what a restore must match."""
    out: dict[str, tuple[str, int]] = {}
    for folder, dirs, names in os.walk(tree):
        dirs[:] = [d for d in dirs if d != ".git"]
        for d in dirs:
            path = os.path.join(folder, d)
            out[os.path.relpath(path, tree) + "/"] = ("dir", os.lstat(path).st_mode)
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(path, tree)] = (digest, os.lstat(path).st_mode)
    return out


def copy_tree(src: Path, dst: Path) -> Path:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return dst


# -- runtimes ----------------------------------------------------------------------------------


@dataclass
class Side:
    """One runtime on its own copy of the workspace."""

    name: str
    root: Path
    rt: Runtime
    tracker: Checkpoints | None = None
    begin_s: list[float] = field(default_factory=list[float])
    end_s: list[float] = field(default_factory=list[float])
    markers: dict[str, str] = field(default_factory=dict[str, str])

    def marker(self, rel: str) -> str:
        return self.markers.get(rel, f"REV-{marker_id(rel)}-0")

    def stored_bytes(self) -> int:
        """The store's content bytes plus this workspace's session logs."""
        keeper = self.rt.pipeline.checkpointing
        if keeper is None:
            return 0
        logs = sum(p.stat().st_size for p in keeper.folder.glob("*.jsonl"))
        return keeper.store.size() + logs


def marker_id(rel: str) -> str:
    return rel.rsplit("_", 1)[1].split(".")[0].lstrip("0") or "0"


def make_side(name: str, root: Path, *, checkpoints: bool, inotify: bool = True) -> Side:
    rt = Runtime(coding_tools(project_dir=root), root=root, mode="bypass", checkpoints=checkpoints)
    side = Side(name, root, rt)
    keeper = rt.pipeline.checkpointing
    if keeper is None:
        return side
    real = change_watch._inotify  # pyright: ignore[reportPrivateUsage]
    if not inotify:
        change_watch._inotify = lambda: None  # pyright: ignore[reportPrivateUsage]
    try:
        tracker = keeper.of(rt.session)  # its ChangeWatch is made here
    finally:
        change_watch._inotify = real  # pyright: ignore[reportPrivateUsage]
    side.tracker = tracker
    tracker.begin = _timed(tracker.begin, side.begin_s)  # type: ignore[method-assign]
    tracker.end = _timed(tracker.end, side.end_s)  # type: ignore[method-assign]
    return side


def _timed(fn: Callable[..., Any], into: list[float]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            into.append(time.perf_counter() - t0)

    return wrapper


# -- the calls ---------------------------------------------------------------------------------


class CallFailed(Exception):
    pass


SPAWN_FAILURES: list[str] = []
"""Shell commands whose sandbox could not be set up (nothing ran): made again, and reported."""


async def call(side: Side, tool: str, args: dict[str, Any]) -> float:
    for _ in range(3):
        t0 = time.perf_counter()
        result = await side.rt.call(tool, args)
        elapsed = time.perf_counter() - t0
        if result.ok:
            return elapsed
        if "could not be started" not in result.content:
            break
        SPAWN_FAILURES.append(f"{side.name}: {args}: {result.content[:200]}")
    raise CallFailed(f"{side.name}: {tool} {args}: {result.content[:400]}")


async def prepare_edit(side: Side, rel: str) -> None:
    """The untimed read_file that edit_file requires."""
    args = {"file_path": str(side.root / rel), "limit": 10_000}  # all of it, in one page
    result = await side.rt.call("read_file", args)
    if not result.ok:
        raise CallFailed(f"{side.name}: read_file {rel}: {result.content[:400]}")


def _bump(side: Side, rel: str) -> tuple[str, str]:
    old = side.marker(rel)
    base, k = old.rsplit("-", 1)
    new = f"{base}-{int(k) + 1}"
    side.markers[rel] = new
    return old, new


def op_args(kind: str, side: Side, rel: str, i: int) -> tuple[str, dict[str, Any]]:
    """The call of one iteration of a row: (tool, arguments)."""
    path = side.root / rel
    if kind == "edit_file":
        old, new = _bump(side, rel)
        return "edit_file", {"file_path": str(path), "old_string": old, "new_string": new}
    if kind == "sed":
        old, new = _bump(side, rel)
        return "run_shell", {"command": f"sed -i 's/{old}/{new}/' {rel}"}
    if kind == "echo":
        return "run_shell", {"command": f"echo '# appended line {i}' >> {rel}"}
    if kind == "write_file":
        folder = Path(rel).parent
        text = f'"""New module {i}."""\n\n' + "\n".join(_py_lines(random.Random(i), 95)) + "\n"
        return "write_file", {
            "file_path": str(side.root / folder / f"new_{i:05d}.py"),
            "content": text,
        }
    if kind == "rm":
        return "run_shell", {"command": f"rm {rel}"}
    if kind == "mv":
        return "run_shell", {"command": f"mv {rel} {rel}.moved"}
    raise ValueError(kind)


async def one_call(side: Side, kind: str, rel: str, i: int) -> tuple[float, str]:
    """Make the call (after its untimed preparation); returns (seconds, the changed path)."""
    if kind == "edit_file":
        await prepare_edit(side, rel)
    tool, args = op_args(kind, side, rel, i)
    elapsed = await call(side, tool, args)
    target = str(Path(args["file_path"]).relative_to(side.root)) if kind == "write_file" else rel
    return elapsed, target


# -- rows --------------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    kind: str
    goal: bool
    off: list[float] = field(default_factory=list[float])
    on: list[float] = field(default_factory=list[float])
    begin: list[float] = field(default_factory=list[float])
    end: list[float] = field(default_factory=list[float])
    stored: list[int] = field(default_factory=list[int])
    changed_bytes: list[int] = field(default_factory=list[int])
    wrong: list[str] = field(default_factory=list[str])


async def run_row(row: Row, off: Side, on: Side, files: list[str], n: int) -> None:
    assert on.tracker is not None
    for i in range(n):
        rel = files[i % len(files)]
        b0, e0 = len(on.begin_s), len(on.end_s)
        for side in (off, on) if i % 2 == 0 else (on, off):
            if side is on:
                before = on.stored_bytes()
                marks = len(on.tracker.list())
            elapsed, target = await one_call(side, row.kind, rel, i)
            if side is off:
                row.off.append(elapsed)
                continue
            row.on.append(elapsed)
            row.stored.append(on.stored_bytes() - before)
            row.changed_bytes.append(os.lstat(on.root / target).st_size)
            cps = on.tracker.list()
            if len(cps) != marks + 1 or cps[-1].changed != (target,):
                got = cps[-1].changed if len(cps) > marks else "no new checkpoint"
                row.wrong.append(f"{row.kind} {target}: checkpoint lists {got}")
        row.begin.extend(on.begin_s[b0:])
        row.end.extend(on.end_s[e0:])


async def baseline(off: Side, on: Side, rel: str) -> dict[str, float]:
    """The first edit with checkpoints on (the workspace is recorded) and off, alone."""
    out: dict[str, float] = {}
    for side in (off, on):
        before = time.perf_counter()
        elapsed, _ = await one_call(side, "edit_file", rel, 0)
        out[side.name] = elapsed
        out[side.name + "_with_read"] = time.perf_counter() - before
    return out


def store_stats(side: Side) -> dict[str, int]:
    keeper = side.rt.pipeline.checkpointing
    assert keeper is not None
    blobs = content = disk = 0
    for folder, _, names in os.walk(keeper.store.objects):
        for name in names:
            st = os.lstat(os.path.join(folder, name))
            blobs += 1
            content += st.st_size
            disk += st.st_blocks * 512
    logs = sum(p.stat().st_size for p in keeper.folder.glob("*.jsonl"))
    return {"blobs": blobs, "content": content, "disk": disk, "log": logs}


# -- restore -----------------------------------------------------------------------------------

SESSION_PLAN = ["edit_file"] * 20 + ["sed"] * 10 + ["echo"] * 5 + ["write_file"] * 10
SESSION_PLAN += ["rm"] * 3 + ["mv"] * 2


async def restore_sessions(root: Path, files: list[str], sessions: int) -> dict[str, Any]:
    clean = manifest(root)
    rng = random.Random(7)
    out: dict[str, Any] = {"restore": [], "undo": [], "first_call": [], "paths": [], "errors": []}
    for s in range(sessions):
        side = make_side(f"restore{s}", root, checkpoints=True)
        plan = SESSION_PLAN[:]
        rng.shuffle(plan)
        chosen = rng.sample(files, len(plan))
        for j, (kind, rel) in enumerate(zip(plan, chosen, strict=True)):
            elapsed, _ = await one_call(side, kind, rel, 10_000 * (s + 1) + j)
            if j == 0:
                out["first_call"].append(elapsed)
        after = manifest(root)
        t0 = time.perf_counter()
        done = await side.rt.restore(1)
        out["restore"].append(time.perf_counter() - t0)
        out["paths"].append(len(done.changed))
        if not done.ok or done.left or manifest(root) != clean:
            out["errors"].append(f"session {s}: restore(1) did not give back the tree: {done}")
        if done.undo is None:
            out["errors"].append(f"session {s}: restore(1) has no undo")
            break
        t0 = time.perf_counter()
        undone = await side.rt.restore(done.undo)
        out["undo"].append(time.perf_counter() - t0)
        if not undone.ok or undone.left or manifest(root) != after:
            diff = _diff(manifest(root), after)
            out["errors"].append(f"session {s}: undo did not give back the 50 calls' state: {diff}")
        again = await side.rt.restore(1)  # untimed: the next session starts from the pristine tree
        if not again.ok or manifest(root) != clean:
            diff = _diff(manifest(root), clean)
            out["errors"].append(f"session {s}: a second restore(1) did not: {diff}")
            break
        await side.rt.aclose()
    return out


def _diff(got: dict[str, Any], want: dict[str, Any]) -> str:
    keys = sorted(k for k in got.keys() | want.keys() if got.get(k) != want.get(k))
    return f"{len(keys)} paths differ: {keys[:5]}"


# -- output ------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, in the unit of `values`."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    return sign + (f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 else f"{ms:.0f}")


def fmt_bytes(n: float) -> str:
    if n >= 10 << 20:
        return f"{n / (1 << 20):.0f} MB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n:.0f} B"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


# -- main --------------------------------------------------------------------------------------


async def run(opts: argparse.Namespace) -> int:
    t_start = time.perf_counter()
    pristine = TMP / "pristine"
    print(f"generating a {opts.files}-file workspace in {pristine} ...", flush=True)
    t0 = time.perf_counter()
    tracked = generate(pristine, opts.files)
    stats = tree_stats(pristine)
    print(f"  done in {time.perf_counter() - t0:.1f} s", flush=True)
    print(
        f"handrail {handrail.__version__} | Python {platform.python_version()} | "
        f"{platform.platform()} | nproc {os.cpu_count()} | load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print(
        f"workspace: {stats['tracked']:,} tracked files ({fmt_bytes(stats['tracked_bytes'])}) in "
        f"{stats['folders']} folders; {stats['ignored']:,} ignored files (node_modules/, build/, "
        f"__pycache__/); a git repository at commit {stats['commit']}"
    )
    print(
        f"{opts.iterations} calls per row and side (inotify-off row: {opts.fallback_iterations}), "
        "checkpoints off / on alternating; restore: "
        f"{opts.sessions} sessions of {len(SESSION_PLAN)} calls",
        flush=True,
    )

    rng = random.Random(11)
    files = tracked[:]
    rng.shuffle(files)
    py_files = [f for f in files if f.endswith(".py")]
    # Copies first; the generated tree itself is then the "off" side's.
    on_root, fallback_root = copy_tree(pristine, TMP / "on"), copy_tree(pristine, TMP / "fallback")
    restore_root = copy_tree(pristine, TMP / "restore")
    off = make_side("off", pristine, checkpoints=False)
    on = make_side("on", on_root, checkpoints=True)
    fallback = make_side("on-no-inotify", fallback_root, checkpoints=True, inotify=False)
    assert on.tracker is not None and fallback.tracker is not None

    # Warm the page cache of every copy (and the code paths of the off side) before timing.
    for side in (off, on, fallback):
        manifest(side.root)
    for k in range(3):
        await one_call(off, "edit_file", files[-1 - k], k)

    first = await baseline(off, on, files[-10])
    after_base = store_stats(on)
    await baseline(off, fallback, files[-11])
    watched = on.tracker._watch.active  # pyright: ignore[reportPrivateUsage]
    fallback_watched = fallback.tracker._watch.active  # pyright: ignore[reportPrivateUsage]
    on.begin_s.clear(), on.end_s.clear(), fallback.begin_s.clear(), fallback.end_s.clear()

    n = opts.iterations
    chunks = [files[k * n : (k + 1) * n] for k in range(4)]
    rows = [
        Row("`edit_file` (after an untimed read_file)", "edit_file", True),
        Row("`run_shell`: `sed -i 's/OLD/NEW/' FILE`", "sed", True),
        Row("`run_shell`: `echo ... >> FILE`", "echo", True),
        Row("`write_file`, a new 4 KB file", "write_file", False),
    ]
    targets = [chunks[0], chunks[1], chunks[2], py_files[:n]]
    for row, row_files in zip(rows, targets, strict=True):
        print(f"  {row.kind} ...", flush=True)
        await run_row(row, off, on, row_files, n)
    fb = Row("`edit_file`, inotify off (whole-tree stat fallback)", "edit_file", False)
    print("  edit_file, inotify off ...", flush=True)
    await run_row(fb, off, fallback, chunks[3], opts.fallback_iterations)
    rows.append(fb)

    print("  restore sessions ...", flush=True)
    rest = await restore_sessions(restore_root, files[: opts.files // 2], opts.sessions)

    # -- tables --
    print()
    print(
        f"**Added time per call** ({stats['tracked']:,}-file workspace; p50 / p99 of "
        "`await rt.call(...)`; added = on - off; begin / end = the on side's "
        "`Checkpoints.begin` (worker thread) and `end` (loop), p50)"
    )
    print()
    header = [
        "call",
        "off p50 ms",
        "off p99",
        "on p50 ms",
        "on p99",
        "added p50 ms",
        "added p99",
        "ratio p50",
        "begin / end p50 ms",
        "begin+end, first 20 -> last 20 calls",
        "goal",
        "result",
    ]
    out_rows: list[list[str]] = []
    misses = 0
    reference_misses: list[str] = []
    for row in rows:
        work = [b + e for b, e in zip(row.begin, row.end, strict=True)]
        k = min(20, max(1, len(work) // 4))
        add50 = statistics.median(row.on) - statistics.median(row.off)
        add99 = pct(row.on, 99) - pct(row.off, 99)
        ok = add50 * 1000 <= GOAL_ADDED_MS and not row.wrong
        if row.goal:
            misses += not ok
        elif not ok:
            reference_misses.append(f"{row.label} (+{fmt_ms(add50)} ms)")
        out_rows.append(
            [
                row.label,
                fmt_ms(statistics.median(row.off)),
                fmt_ms(pct(row.off, 99)),
                fmt_ms(statistics.median(row.on)),
                fmt_ms(pct(row.on, 99)),
                ("+" if add50 >= 0 else "") + fmt_ms(add50),
                ("+" if add99 >= 0 else "") + fmt_ms(add99),
                f"{statistics.median(row.on) / statistics.median(row.off):.2f}x",
                f"{fmt_ms(statistics.median(row.begin))} / {fmt_ms(statistics.median(row.end))}",
                f"{fmt_ms(statistics.median(work[:k]))} -> {fmt_ms(statistics.median(work[-k:]))}",
                f"<= +{GOAL_ADDED_MS:.0f} ms" if row.goal else f"(<= +{GOAL_ADDED_MS:.0f} ms)",
                verdict(ok) if row.goal else ("(" + verdict(ok) + ")"),
            ]
        )
    print(table(header, out_rows))
    print()
    print(
        "A goal in parentheses is not the issue's (it names edit_file and run_shell): shown for "
        "comparison, not counted. `begin+end` p50 over a row's first and last calls: a cost that "
        "grows with the calls made in the session shows here."
    )

    print()
    print("**One-time cost, storage, restore**")
    print()
    storage_rows: list[list[str]] = []
    base_added = first["on"] - first["off"]
    storage_rows.append(
        [
            "baseline: the first edit_file of a session, checkpoints on (store empty)",
            f"{fmt_ms(first['on'])} ms (the same first edit off: {fmt_ms(first['off'])} ms; "
            f"added {fmt_ms(base_added)} ms)",
            "-",
            "-",
        ]
    )
    if rest["first_call"][1:]:
        later = rest["first_call"][1:]
        storage_rows.append(
            [
                "baseline of a later session (store holds every content already)",
                f"p50 {fmt_ms(statistics.median(later))} ms, max {fmt_ms(max(later))} ms "
                f"(first call, {len(later)} sessions)",
                "-",
                "-",
            ]
        )
    storage_rows.append(
        [
            "store after the baseline",
            f"{fmt_bytes(after_base['content'])} of contents in {after_base['blobs']:,} blobs "
            f"({fmt_bytes(after_base['disk'])} on disk) + session log "
            f"{fmt_bytes(after_base['log'])}; workspace tracked: "
            f"{fmt_bytes(stats['tracked_bytes'])} in {stats['tracked']:,} files",
            "-",
            "-",
        ]
    )
    for row in rows[:4]:
        ratios = [s / max(1, c) for s, c in zip(row.stored, row.changed_bytes, strict=True)]
        ok = statistics.median(ratios) <= GOAL_STORED_RATIO
        misses += not ok
        storage_rows.append(
            [
                f"bytes stored per checkpoint: {row.label}",
                f"p50 {fmt_bytes(statistics.median(row.stored))}, max {fmt_bytes(max(row.stored))}"
                f" (changed file p50 {fmt_bytes(statistics.median(row.changed_bytes))}; "
                f"stored / changed p50 {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x)",
                f"<= {GOAL_STORED_RATIO:.0f}x the changed file",
                verdict(ok),
            ]
        )
    for key, what in (("restore", "`await rt.restore(1)`"), ("undo", "its undo")):
        samples = rest[key]
        if not samples:
            storage_rows.append([f"{what} after {len(SESSION_PLAN)} calls", "not measured", "", ""])
            misses += 1
            continue
        ok = max(samples) * 1000 <= GOAL_RESTORE_MS and not rest["errors"]
        misses += not ok
        storage_rows.append(
            [
                f"{what} after a {len(SESSION_PLAN)}-call session"
                f" ({statistics.median(rest['paths']):.0f} paths put back)",
                f"p50 {fmt_ms(statistics.median(samples))} ms, max {fmt_ms(max(samples))} ms "
                f"({len(samples)} sessions)",
                f"<= {GOAL_RESTORE_MS:.0f} ms",
                verdict(ok),
            ]
        )
    print(table(["what", "measured", "goal", "result"], storage_rows))

    problems = [w for row in rows for w in row.wrong] + rest["errors"]
    print()
    print(
        f"inotify: {'on' if watched else 'NOT active'} for the on side, "
        f"{'on (the patch did not take)' if fallback_watched else 'off'} for the fallback side"
    )
    if SPAWN_FAILURES:
        print(
            f"{len(SPAWN_FAILURES)} shell call(s) failed to start (the sandbox could not be set "
            "up; nothing ran) and were made again, e.g. " + SPAWN_FAILURES[0]
        )
    if problems:
        print(f"{len(problems)} problem(s):")
        for p in problems[:20]:
            print("  - " + p)
    print(
        f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} | "
        f"{time.perf_counter() - t_start:.0f} s in all"
    )
    print("all goals met" if not misses else f"{misses} goal(s) missed")
    if reference_misses:
        print("over +5 ms p50 on rows without a goal: " + "; ".join(reference_misses))

    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(  # noqa: ASYNC240
        json.dumps(
            {
                "workspace": stats,
                "baseline": first,
                "store_after_baseline": after_base,
                "rows": {
                    r.label: {
                        "off": r.off,
                        "on": r.on,
                        "begin": r.begin,
                        "end": r.end,
                        "stored": r.stored,
                        "changed_bytes": r.changed_bytes,
                        "wrong": r.wrong,
                    }
                    for r in rows
                },
                "restore": rest,
            },
            indent=1,
        )
    )
    print(f"raw samples: {out}")
    for side in (off, on, fallback):
        await side.rt.aclose()
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="30 calls per row, 2 sessions")
    parser.add_argument("--iterations", type=int, default=None, help="calls per row and side")
    parser.add_argument(
        "--fallback-iterations", type=int, default=None, help="calls of the inotify-off row (50)"
    )
    parser.add_argument("--sessions", type=int, default=None, help="restore sessions (5)")
    parser.add_argument("--files", type=int, default=5000, help="tracked files (5000)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "checkpoints.json"))
    parser.add_argument("--keep", action="store_true", help=f"keep {TMP}")
    opts = parser.parse_args()
    opts.iterations = opts.iterations or (30 if opts.quick else 200)
    opts.fallback_iterations = opts.fallback_iterations or (10 if opts.quick else 50)
    opts.sessions = opts.sessions or (2 if opts.quick else 5)
    if opts.iterations * 5 > opts.files * 0.6:
        parser.error("--iterations: at most 60% of --files / 5 (every call changes its own file)")
    try:
        return asyncio.run(run(opts))
    finally:
        if opts.keep:
            print(f"kept {TMP}")
        else:
            t0 = time.perf_counter()
            subprocess.run(["rm", "-rf", "--", str(TMP)], check=False)
            if TMP.exists():
                shutil.rmtree(TMP, ignore_errors=True)
            print(f"removed the temporary folder in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
