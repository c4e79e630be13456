"""MCP speed: `handrail serve` against the official filesystem MCP server, plus HTTP load.

One command, with the repo's venv (handrail and the `mcp` SDK importable, node and npm on PATH):

    python bench/mcp.py              # full run: about 6 minutes
    python bench/mcp.py --quick      # smoke run: about 1 minute
    python bench/mcp.py --only stdio start load     # any subset of the parts
    python bench/mcp.py --only lazy                 # session start, 10 servers (1-2 minutes)
    python bench/mcp.py --only tasks                # a task-required call vs a direct one

The peer, `@modelcontextprotocol/server-filesystem`, is pinned in `bench/package.json` and
`bench/package-lock.json` and installed with `npm ci` into `bench/.npm/` (gitignored) on first
use. The first run also generates a deterministic source-like tree of 5,000 files (Python, JS,
Markdown and text files in nested package folders; no .git, no .gitignore, so both servers see
exactly the same files) under the cache directory and reuses it (`--tree DIR`, `--regen`).

1. stdio round trips (`stdio`). One client process, the official `mcp` SDK (`ClientSession`
   over `stdio_client`), holds one session to each server at once: handrail as `handrail serve
   --root TREE` (or `python -c "... serve(Registry(coding_tools()), root=TREE)"` with `--server
   api`, or when the console command has no `serve`), the peer as `node .../dist/index.js TREE`.
   Every row times `await session.call_tool(...)` on both, interleaved (the order rotates each
   round), and prints p50 / p99 and the ratio of the p50s; the target (issue 5) is <= 0.8x.
   Every answer is checked outside the timed part; a wrong one stops the run.
   - read: handrail `read_file` vs the peer's `read_text_file` on the same file, a different
     small source file each round (handrail answers a second read of unchanged lines with a short
     note, so no file is read twice by one session);
   - edit: handrail `edit_file` (after an untimed `read_file`, which handrail requires) vs the
     peer's `edit_file` with the same one-line replacement; the file is restored before each call;
   - glob: handrail `list_files` vs the peer's `search_files`, same pattern `**/*.py`. The peer
     returns every match (about 2,500 absolute paths, in walk order); handrail returns the default
     page of 100, newest first, and the total; a second row asks handrail for 1,000;
   - grep: handrail `grep_search` alone (the peer has no content search).
   Reference rows (no target) split handrail's time: a Python MCP server on the same SDK
   machinery as handrail (lowlevel `Server`, stdio, `serve_loop`) with one bare `open().read()`
   tool, in the same rounds as the read row; handrail's `rt.call` in process (no MCP) for read
   and edit; and one fsync of a file and of its folder (handrail's writes are durable).
   Start-up (`start`): process spawn to the answer of the first `tools/list` (spawn, initialize,
   list), median of 11 cold starts of each, interleaved; reference rows show what bare `python`,
   `import mcp`, `import handrail` and `node` cost on this machine.
2. HTTP load (`load`): handrail's streamable-HTTP server (`serve(..., http=("127.0.0.1",
   PORT))`, stopped by its PID at the end) and 200 concurrent clients x 100 `read_file` calls each
   on small files (each client reads 100 different files), all on 127.0.0.1. `--load-client sdk`
   (default) gives each client its own SDK `ClientSession` over `streamable_http_client`;
   `--load-client raw` gives each its own `httpx` client sending plain JSON-RPC POSTs
   (initialize, initialized, tools/call with the session id), lighter on the client side. All
   clients connect first; the clock starts when they all start calling. Reports calls, errors
   (target 0), p50 / p99 and throughput. Client and server share this machine's CPUs.

3. Lazy servers (`lazy`, in `bench/_mcp_lazy.py`): session start with 10 configured stdio
   servers, spawn of a fresh `python` to its tools ready (`McpTools(...).start()` and a
   `Registry` with the coding tools), for no servers, eager (`lazy=False`), lazy with a cold
   cache and lazy with a warm one, interleaved; medians, best, and the ratio to no servers
   (target: warm cache <= 1.1x). It needs neither the tree nor node.
4. Tasks (`tasks`, in `bench/_mcp_tasks.py`): a task-required call (create, `tasks/get`,
   `tasks/result`) against the direct call of the same tool body on the same server,
   interleaved; p50 / p99 of each and of the per-round difference.

Everything is bounded by timeouts. Results print as markdown tables; the raw numbers go to
`bench/out/mcp.json`, server stderr to a temp file. Compare rows within one run, not across
machines; the header prints the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run as `python bench/mcp.py`, this file's folder comes first on sys.path and this file would
# shadow the `mcp` SDK: take the folder off.
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]
NPM_DIR = HERE / ".npm"
PEER_PACKAGE = "@modelcontextprotocol/server-filesystem"
PEER_MAIN = NPM_DIR / "node_modules" / PEER_PACKAGE / "dist" / "index.js"
TREE_VERSION = 1
TARGET = 0.8
CALL_TIMEOUT = 60.0
EDIT_FILE = "file00123.py"  # the file both servers edit (restored before every call)
WORDS = (
    "alpha beta gamma delta value result config handler request response buffer cache index "
    "token parser node tree item record stream session client server module loader"
).split()


# -- the tree ----------------------------------------------------------------------------------


def _line(rng: random.Random) -> str:
    r = rng.random()
    a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
    if r < 0.10:
        return f"def {a}_{b}(self, {b}: int) -> None:"
    if r < 0.20:
        return f"    return self.{a}.{b}({rng.randint(0, 999)})"
    if r < 0.25:
        return f"class {a.capitalize()}{b.capitalize()}:"
    if r < 0.30:
        return f"# {a} {b} {c}" + (" TODO" if rng.random() < 0.05 else "")
    return f"    {a} = {b}.get_{c}({rng.randint(0, 99)})"


def generate(tree: Path, files: int) -> None:
    """A deterministic tree: `files` source-like files in 40 packages x 30 modules."""
    rng = random.Random(20261205)
    tmp = tree.with_name(tree.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i in range(files):
        folder = tmp / f"pkg{i % 40:02d}" / f"mod{(i // 40) % 30:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        ext = rng.choice((".py", ".py", ".py", ".js", ".md", ".txt"))
        lines = [_line(rng) for _ in range(rng.randint(20, 160))]
        if rng.random() < 0.4:
            lines.insert(0, "import os")
        (folder / f"file{i:05d}{ext}").write_text("\n".join(lines) + "\n")
    (tmp / f".complete-{TREE_VERSION}-{files}").write_text("")
    shutil.rmtree(tree, ignore_errors=True)
    tmp.rename(tree)


def ensure_tree(tree: Path, files: int, regen: bool) -> None:
    if not regen and (tree / f".complete-{TREE_VERSION}-{files}").exists():
        return
    print(f"generating {files} files under {tree} (once) ...", flush=True)
    t0 = time.perf_counter()
    generate(tree, files)
    print(f"  done in {time.perf_counter() - t0:.1f} s", flush=True)


def source_files(tree: Path) -> list[Path]:
    """Every generated file, sorted (the marker file excluded)."""
    return sorted(p for p in tree.rglob("file*") if p.is_file())


# -- the servers -------------------------------------------------------------------------------


def ensure_peer() -> str | None:
    """Install the pinned peer into bench/.npm/ (once); None when it is there, else why not."""
    lock = HERE / "package-lock.json"
    stamp = NPM_DIR / ".installed"
    want = (HERE / "package.json").read_text() + lock.read_text()
    if PEER_MAIN.exists() and stamp.exists() and stamp.read_text() == want:
        return None
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "node and npm are needed for the peer"
    NPM_DIR.mkdir(exist_ok=True)
    shutil.copy(HERE / "package.json", NPM_DIR / "package.json")
    shutil.copy(lock, NPM_DIR / "package-lock.json")
    print(f"installing {PEER_PACKAGE} into {NPM_DIR} (npm ci, once) ...", flush=True)
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=NPM_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not PEER_MAIN.exists():
        return f"npm ci failed: {done.stderr.strip()[-500:]}"
    stamp.write_text(want)
    return None


def peer_version() -> str:
    package = PEER_MAIN.parent.parent / "package.json"
    if not package.exists():  # `--only lazy` needs no peer
        return "(not installed)"
    meta = json.loads(package.read_text())
    return str(meta["version"])


def handrail_cli() -> str | None:
    """The `handrail` console script when it has a `serve` command, else None."""
    exe = Path(sys.executable).with_name("handrail")
    if not exe.exists():
        return None
    probe = subprocess.run(
        [str(exe), "serve", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    return str(exe) if probe.returncode == 0 and "--root" in probe.stdout else None


# The API form `handrail serve` wraps: the built-in coding tools, default policy (accept_edits).
SERVE_SNIPPET = """\
import asyncio, sys
from handrail import Registry
from handrail.builtin import coding_tools
from handrail.mcp import serve
root = sys.argv[1]
http = None if len(sys.argv) < 3 else (sys.argv[2], int(sys.argv[3]))
def ready(where):
    if http is not None:
        print("READY", where, flush=True)
# Loopback load test without the bearer token (bench/http_auth.py measures what it costs).
access = {} if http is None else {"auth": False}
asyncio.run(
    serve(Registry(coding_tools(project_dir=root)), root=root, http=http, ready=ready, **access)
)
"""


# Reference, not a peer: the same SDK server machinery handrail uses (lowlevel Server, stdio,
# serve_loop) with one bare tool, `open(path).read()`: what any Python MCP server pays per call.
FLOOR_SNIPPET = """\
import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOL = types.Tool(name="read", description="Read a file.", input_schema=SCHEMA)

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[TOOL])

async def call_tool(ctx, params):
    with open(params.arguments["path"], encoding="utf-8") as f:
        text = f.read()
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

server = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)

async def main():
    async with stdio_server() as (read, write):
        async with server.lifespan(server) as state:
            options = server.create_initialization_options()
            await serve_loop(server, read, write, lifespan_state=state, init_options=options)

anyio.run(main)
"""


def server_env() -> dict[str, str]:
    # stdio_client passes only a few variables (HOME, PATH, ...); make sure the repo's handrail is
    # the one imported, as the editable install would.
    return {"PYTHONPATH": str(ROOT / "src")}


def handrail_stdio_command(tree: Path, cli: str | None) -> list[str]:
    if cli is not None:
        return [cli, "serve", "--root", str(tree)]
    return [sys.executable, "-c", SERVE_SNIPPET, str(tree)]


def peer_stdio_command(tree: Path) -> list[str]:
    return [shutil.which("node") or "node", str(PEER_MAIN), str(tree)]


# -- statistics and output ---------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, in the unit of `values`."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


# -- part 1: stdio round trips -----------------------------------------------------------------


async def open_session(
    stack: contextlib.AsyncExitStack, argv: list[str], errlog: TextIO, tree: Path
) -> Any:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(), cwd=str(tree))
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    await session.list_tools()  # the SDK validates results against listed output schemas
    return session


async def call(session: Any, name: str, args: dict[str, Any]) -> tuple[float, Any]:
    """One timed `tools/call` (seconds, result); a protocol-level failure raises."""
    import anyio

    with anyio.fail_after(CALL_TIMEOUT):
        t0 = time.perf_counter()
        result = await session.call_tool(name, args)
        elapsed = time.perf_counter() - t0
    return elapsed, result


class Row:
    """One comparison row: timings of both sides and what each side was asked."""

    def __init__(self, label: str, ours: str, theirs: str) -> None:
        self.label, self.ours_call, self.theirs_call = label, ours, theirs
        self.ours: list[float] = []
        self.theirs: list[float] = []
        self.notes: list[str] = []
        self.chars = [0, 0]  # the last answer's text length: handrail, peer

    def cells(self) -> list[str]:
        ours = [fmt_ms(statistics.median(self.ours)), fmt_ms(pct(self.ours, 99))]
        sizes = f"{self.chars[0]:,}" + (f" / {self.chars[1]:,}" if self.theirs else "")
        if not self.theirs:
            return [self.label, self.ours_call, self.theirs_call, *ours, "-", "-", "-", "-", sizes]
        ratio = statistics.median(self.ours) / statistics.median(self.theirs)
        theirs = [fmt_ms(statistics.median(self.theirs)), fmt_ms(pct(self.theirs, 99))]
        verdict = "ok" if ratio <= TARGET else "MISSED"
        return [
            self.label,
            self.ours_call,
            self.theirs_call,
            *ours,
            *theirs,
            f"{ratio:.2f}x",
            f"<= {TARGET}x {verdict}",
            sizes,
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "row": self.label,
            "handrail_call": self.ours_call,
            "peer_call": self.theirs_call,
            "handrail_s": self.ours,
            "peer_s": self.theirs,
            "answer_chars": self.chars,
            "notes": self.notes,
        }


def check(ok: bool, row: Row, result: Any, side: int) -> None:
    """Record the answer's size; stop the run on a wrong answer (a fast wrong answer is no win)."""
    body = text_of(result)
    row.chars[side] = len(body)
    if not ok:
        who = ("handrail", "the peer")[side]
        raise RuntimeError(f"{row.label}: wrong answer from {who}: {body[:500]}")


def restore(path: Path, data: bytes) -> None:
    path.write_bytes(data)


async def interleaved(
    runs: int,
    ours: Callable[[int], Awaitable[float]],
    theirs: Callable[[int], Awaitable[float]] | None,
    row: Row,
    extra: tuple[Callable[[int], Awaitable[float]], list[float]] | None = None,
) -> None:
    """`runs` rounds; each round calls every side once, the order rotating round by round."""
    sides: list[tuple[Callable[[int], Awaitable[float]], list[float]]] = [(ours, row.ours)]
    if theirs is not None:
        sides.append((theirs, row.theirs))
    if extra is not None:
        sides.append(extra)
    for i in range(runs):
        k = i % len(sides)
        for side, into in sides[k:] + sides[:k]:
            into.append(await side(i))


async def stdio_rows(
    tree: Path, cli: str | None, opts: argparse.Namespace, log: TextIO
) -> tuple[list[Row], dict[str, list[float]]]:
    files = source_files(tree)
    rng = random.Random(7)
    # Distinct files for the reads, one per round: handrail must never see a re-read.
    read_files = rng.sample([f for f in files if f.name != EDIT_FILE], opts.reads + 10)
    edit_path = next(f for f in files if f.name == EDIT_FILE)
    original = edit_path.read_bytes()
    lines = original.decode().splitlines()
    old_line = next(line for line in lines if lines.count(line) == 1 and len(line) > 20)
    new_line = old_line + "  # edited"
    rows: list[Row] = []
    refs: dict[str, list[float]] = {}
    async with contextlib.AsyncExitStack() as stack:
        hr = await open_session(stack, handrail_stdio_command(tree, cli), log, tree)
        peer = await open_session(stack, peer_stdio_command(tree), log, tree)

        # Warm both sides (imports on first use, JIT, page cache) on files the reads never use.
        for f in read_files[-10:]:
            await call(hr, "read_file", {"file_path": str(f)})
            await call(peer, "read_text_file", {"path": str(f)})
        await call(hr, "list_files", {"pattern": "**/*.py"})
        await call(peer, "search_files", {"path": str(tree), "pattern": "**/*.py"})
        await call(hr, "grep_search", {"pattern": "zzzz-no-such-text"})

        row = Row("read a file", "read_file", "read_text_file")
        rows.append(row)

        async def read_ours(i: int) -> float:
            f = read_files[i]
            t, r = await call(hr, "read_file", {"file_path": str(f)})
            last = f.read_text().splitlines()[-1]
            check(not r.is_error and last in text_of(r), row, r, 0)
            return t

        async def read_theirs(i: int) -> float:
            f = read_files[i]
            t, r = await call(peer, "read_text_file", {"path": str(f)})
            check(not r.is_error and text_of(r) == f.read_text(), row, r, 1)
            return t

        # The floor server takes its turn in the same rounds, so it sees the same conditions.
        floor = await open_session(stack, [sys.executable, "-c", FLOOR_SNIPPET], log, tree)
        for f in read_files[-10:]:
            await call(floor, "read", {"path": str(f)})

        async def read_floor(i: int) -> float:
            f = read_files[i]
            t, r = await call(floor, "read", {"path": str(f)})
            if r.is_error or text_of(r) != f.read_text():
                raise RuntimeError(f"floor server: wrong answer {text_of(r)[:300]}")
            return t

        floor_times: list[float] = []
        await interleaved(opts.reads, read_ours, read_theirs, row, (read_floor, floor_times))
        print(f"  read: {opts.reads} rounds", flush=True)
        refs["read: Python SDK lowlevel server over stdio, bare `open().read()` tool"] = floor_times
        refs["read: handrail `rt.call('read_file')` in process, no MCP"] = await inproc_reads(
            tree, read_files[: opts.reads]
        )

        row = Row("edit a file (one replacement)", "edit_file (after read_file)", "edit_file")
        rows.append(row)

        async def edit_ours(_: int) -> float:
            restore(edit_path, original)
            await call(hr, "read_file", {"file_path": str(edit_path)})  # untimed: required first
            t, r = await call(
                hr,
                "edit_file",
                {"file_path": str(edit_path), "old_string": old_line, "new_string": new_line},
            )
            check(not r.is_error and new_line in edit_path.read_text(), row, r, 0)
            return t

        async def edit_theirs(_: int) -> float:
            restore(edit_path, original)
            t, r = await call(
                peer,
                "edit_file",
                {"path": str(edit_path), "edits": [{"oldText": old_line, "newText": new_line}]},
            )
            check(not r.is_error and new_line in edit_path.read_text(), row, r, 1)
            return t

        try:
            await interleaved(opts.edits, edit_ours, edit_theirs, row)
            refs["edit: handrail `rt.call('edit_file')` in process, no MCP"] = await inproc_edits(
                tree, edit_path, original, old_line, new_line, opts.edits
            )
            refs["edit: fsync of a 4 KB file + fsync of its folder, alone"] = fsync_floor(
                edit_path.parent, opts.edits
            )
        finally:
            restore(edit_path, original)
        print(f"  edit: {opts.edits} rounds", flush=True)

        py_count = sum(1 for f in files if f.suffix == ".py")
        for limit in (None, 1000):
            label = "glob `**/*.py`" + ("" if limit is None else f", handrail limit={limit}")
            ours_call = "list_files" + ("" if limit is None else f" limit={limit}")
            row = Row(label, ours_call, "search_files")
            rows.append(row)
            args: dict[str, Any] = {"pattern": "**/*.py"}
            if limit is not None:
                args["limit"] = limit

            async def glob_ours(_: int, args: dict[str, Any] = args, row: Row = row) -> float:
                t, r = await call(hr, "list_files", args)
                check(not r.is_error and str(py_count) in text_of(r), row, r, 0)
                return t

            async def glob_theirs(_: int, row: Row = row) -> float:
                t, r = await call(peer, "search_files", {"path": str(tree), "pattern": "**/*.py"})
                check(not r.is_error and len(text_of(r).splitlines()) == py_count, row, r, 1)
                return t

            await interleaved(opts.globs, glob_ours, glob_theirs, row)
            row.notes.append(f"{py_count} matching files")
        print(f"  glob: {opts.globs} rounds x 2", flush=True)

        greps = [
            ("grep `import os` (files_with_matches)", {"pattern": "import os"}),
            (
                "grep `def \\w+_cache\\(` (content)",
                {"pattern": "def \\w+_cache\\(", "output_mode": "content"},
            ),
        ]
        for label, args in greps:
            row = Row(label, "grep_search", "(none)")
            rows.append(row)

            async def grep_ours(_: int, args: dict[str, Any] = args, row: Row = row) -> float:
                t, r = await call(hr, "grep_search", args)
                check(not r.is_error and text_of(r).strip() != "", row, r, 0)
                return t

            await interleaved(opts.greps, grep_ours, None, row)
        print(f"  grep: {opts.greps} rounds x 2", flush=True)
    return rows, refs


def inproc_runtime(tree: Path) -> Any:
    from handrail import Registry, Runtime
    from handrail.builtin import coding_tools

    return Runtime(Registry(coding_tools(project_dir=tree)), root=tree, mode="accept_edits")


async def inproc_reads(tree: Path, files: list[Path]) -> list[float]:
    rt = inproc_runtime(tree)  # a fresh session: none of these files was read in it
    await rt.call("read_file", {"file_path": str(files[0])})
    times: list[float] = []
    for f in files[1:]:
        t0 = time.perf_counter()
        r = await rt.call("read_file", {"file_path": str(f)})
        times.append(time.perf_counter() - t0)
        if not r.ok:
            raise RuntimeError(f"in-process read_file: {r.content[:300]}")
    return times


def fsync_floor(folder: Path, runs: int) -> list[float]:
    """What a durable replace adds on this disk (handrail's atomic write fsyncs both)."""
    probe = folder / ".fsync-probe.tmp"
    times: list[float] = []
    try:
        for _ in range(runs):
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            dfd = os.open(folder, os.O_RDONLY)
            try:
                os.write(fd, b"x" * 4096)
                t0 = time.perf_counter()
                os.fsync(fd)
                os.fsync(dfd)
                times.append(time.perf_counter() - t0)
            finally:
                os.close(fd)
                os.close(dfd)
    finally:
        probe.unlink(missing_ok=True)
    return times


async def inproc_edits(
    tree: Path, path: Path, original: bytes, old: str, new: str, runs: int
) -> list[float]:
    rt = inproc_runtime(tree)
    times: list[float] = []
    for _ in range(runs):
        restore(path, original)
        await rt.call("read_file", {"file_path": str(path)})
        t0 = time.perf_counter()
        r = await rt.call(
            "edit_file", {"file_path": str(path), "old_string": old, "new_string": new}
        )
        times.append(time.perf_counter() - t0)
        if not r.ok:
            raise RuntimeError(f"in-process edit_file: {r.content[:300]}")
    restore(path, original)
    return times


# -- part 1b: start-up -------------------------------------------------------------------------


async def first_list(argv: list[str], log: TextIO, tree: Path) -> float:
    """Process spawn to the answer of the first tools/list (the shutdown is not timed)."""
    import anyio

    with anyio.fail_after(CALL_TIMEOUT):
        async with contextlib.AsyncExitStack() as stack:
            # Imported before the clock starts (already in sys.modules after the first run).
            from mcp.client.session import ClientSession
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=argv[0], args=argv[1:], env=server_env(), cwd=str(tree)
            )
            t0 = time.perf_counter()
            read, write = await stack.enter_async_context(stdio_client(params, errlog=log))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            listed = await session.list_tools()
            elapsed = time.perf_counter() - t0
            if not listed.tools:
                raise RuntimeError(f"no tools listed by {argv}")
    return elapsed


def spawn_time(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=cwd, capture_output=True, timeout=CALL_TIMEOUT, check=True)
    return time.perf_counter() - t0


async def start_rows(
    tree: Path, cli: str | None, runs: int, log: TextIO
) -> tuple[list[list[str]], dict[str, Any]]:
    ours_argv = handrail_stdio_command(tree, cli)
    theirs_argv = peer_stdio_command(tree)
    ours: list[float] = []
    theirs: list[float] = []
    await first_list(ours_argv, log, tree)  # warm the page cache for both
    await first_list(theirs_argv, log, tree)
    for i in range(runs):
        pair = [(ours, ours_argv), (theirs, theirs_argv)]
        for into, argv in pair if i % 2 == 0 else pair[::-1]:
            into.append(await first_list(argv, log, tree))
    node = shutil.which("node") or "node"
    refs = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import mcp'": [sys.executable, "-c", "import mcp"],
        "python -c 'import handrail'": [sys.executable, "-c", "import handrail"],
        "node -e 0": [node, "-e", "0"],
    }
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT / "src")
    try:
        ref_times = {
            label: [spawn_time(argv, tree) for _ in range(runs)] for label, argv in refs.items()
        }
    finally:
        if env_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = env_path
    ratio = statistics.median(ours) / statistics.median(theirs)
    shown_ours = "handrail serve" if cli else "python -c serve(...)"
    rows = [
        [
            f"{shown_ours} (handrail)",
            fmt_ms(statistics.median(ours)),
            fmt_ms(min(ours)),
            f"{ratio:.2f}x",
        ],
        [
            "node server-filesystem (peer)",
            fmt_ms(statistics.median(theirs)),
            fmt_ms(min(theirs)),
            "1.00x",
        ],
    ]
    for label, times in ref_times.items():
        rows.append(
            [f"reference: {label}", fmt_ms(statistics.median(times)), fmt_ms(min(times)), ""]
        )
    raw = {"handrail_s": ours, "peer_s": theirs, "reference_s": ref_times, "argv": ours_argv}
    return rows, raw


# -- part 2: HTTP load -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_http_server(tree: Path, log: TextIO) -> tuple[subprocess.Popen[str], str]:
    """handrail's streamable-HTTP server on a free loopback port; (process, url) once ready."""
    port = free_port()
    env = {**os.environ, **server_env()}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE_SNIPPET, str(tree), "127.0.0.1", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=env,
        cwd=tree,
        start_new_session=True,  # its own process group: stopped as a whole, by PID
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    url = None
    # `ready(url)` prints one line; a bounded wait on it (select keeps the read from blocking).
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            if sel.select(timeout=0.2):
                line = proc.stdout.readline()
                if line.startswith("READY "):
                    url = line.split(None, 1)[1].strip()
    if url is None:
        stop_process(proc)
        raise RuntimeError("handrail's HTTP server did not report ready within 60 s (see log)")
    if not url.startswith("http"):
        url = f"http://127.0.0.1:{port}/mcp"
    return proc, url


def stop_process(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the server's process group by its PID, then SIGKILL after 10 s."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    if proc.stdout is not None:
        proc.stdout.close()


class LoadStats:
    """What the load clients saw."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.connected = 0


def small_files(tree: Path, count: int) -> list[str]:
    sized = sorted(source_files(tree), key=lambda p: (p.stat().st_size, p.name))
    return [str(p.relative_to(tree)) for p in sized[:count]]


async def sdk_client(
    url: str, files: list[str], c: int, calls: int, go: asyncio.Event, stats: LoadStats
) -> None:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    try:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session,
        ):
            with anyio.fail_after(CALL_TIMEOUT):
                await session.initialize()
                await session.list_tools()
            stats.connected += 1
            await go.wait()
            for i in range(calls):
                path = files[(c * 7 + i) % len(files)]
                t0 = time.perf_counter()
                try:
                    with anyio.fail_after(CALL_TIMEOUT):
                        result = await session.call_tool("read_file", {"file_path": path})
                    if result.is_error or not text_of(result):
                        stats.errors.append(f"client {c} call {i}: {text_of(result)[:200]}")
                except Exception as exc:
                    stats.errors.append(f"client {c} call {i}: {exc!r}")
                stats.latencies.append(time.perf_counter() - t0)
    except Exception as exc:
        stats.errors.append(f"client {c}: {exc!r}")


def parse_reply(response: Any, want_id: int) -> dict[str, Any]:
    """The JSON-RPC reply with `want_id` from a JSON or an SSE answer."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == want_id:
                return message
    raise RuntimeError(f"no reply {want_id} in a {kind} answer: {response.text[:200]}")


async def raw_client(
    url: str, files: list[str], c: int, calls: int, go: asyncio.Event, stats: LoadStats
) -> None:
    import httpx
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "handrail-bench-raw", "version": "1"},
        },
    }
    try:
        # One client (one keep-alive connection) per simulated client, as with the SDK client.
        async with httpx.AsyncClient(timeout=CALL_TIMEOUT) as http:
            r = await http.post(url, json=init, headers=headers)
            r.raise_for_status()
            headers["mcp-protocol-version"] = parse_reply(r, 0)["result"]["protocolVersion"]
            session_id = r.headers.get("mcp-session-id")
            if session_id:
                headers["mcp-session-id"] = session_id
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            (await http.post(url, json=note, headers=headers)).raise_for_status()
            stats.connected += 1
            await go.wait()
            for i in range(calls):
                path = files[(c * 7 + i) % len(files)]
                body = {
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": "tools/call",
                    "params": {"name": "read_file", "arguments": {"file_path": path}},
                }
                t0 = time.perf_counter()
                try:
                    r = await http.post(url, json=body, headers=headers)
                    r.raise_for_status()
                    reply = parse_reply(r, i + 1)
                    result = reply.get("result") or {}
                    if "error" in reply or result.get("isError") or not result.get("content"):
                        stats.errors.append(f"client {c} call {i}: {json.dumps(reply)[:200]}")
                except Exception as exc:
                    stats.errors.append(f"client {c} call {i}: {exc!r}")
                stats.latencies.append(time.perf_counter() - t0)
            if session_id:
                with contextlib.suppress(Exception):
                    await http.delete(url, headers=headers)
    except Exception as exc:
        stats.errors.append(f"client {c}: {exc!r}")


async def load_run(
    url: str, files: list[str], opts: argparse.Namespace, kind: str
) -> tuple[LoadStats, float, float]:
    """All clients connect, then call at once; (stats, connect seconds, call-phase seconds)."""
    stats = LoadStats()
    go = asyncio.Event()
    client = sdk_client if kind == "sdk" else raw_client
    t0 = time.perf_counter()
    tasks = [
        asyncio.create_task(client(url, files, c, opts.calls, go, stats))
        for c in range(opts.clients)
    ]
    deadline = time.monotonic() + 120
    while stats.connected + len(stats.errors) < opts.clients and time.monotonic() < deadline:
        if all(t.done() for t in tasks):
            break
        await asyncio.sleep(0.01)
    connect = time.perf_counter() - t0
    t1 = time.perf_counter()
    go.set()
    _, pending = await asyncio.wait(tasks, timeout=opts.load_timeout)
    calls = time.perf_counter() - t1
    if pending:
        stats.errors.append(f"{len(pending)} clients still running after {opts.load_timeout} s")
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=30)
    return stats, connect, calls


async def load_rows(
    tree: Path, opts: argparse.Namespace, log: TextIO
) -> tuple[list[list[str]], dict[str, Any]]:
    files = small_files(tree, 200)
    proc, url = start_http_server(tree, log)
    rows: list[list[str]] = []
    raw: dict[str, Any] = {"url": url, "server_pid": proc.pid, "runs": []}
    try:
        for kind in opts.load_client:
            print(f"  load: {opts.clients} x {opts.calls} with the {kind} client ...", flush=True)
            stats, connect, elapsed = await load_run(url, files, opts, kind)
            lat = stats.latencies
            rows.append(
                [
                    f"{opts.clients} x {opts.calls}",
                    "SDK ClientSession" if kind == "sdk" else "raw JSON-RPC (httpx)",
                    str(len(lat)),
                    str(len(stats.errors)),
                    fmt_ms(statistics.median(lat)) if lat else "-",
                    fmt_ms(pct(lat, 99)) if lat else "-",
                    f"{len(lat) / elapsed:.0f}" if lat else "-",
                    f"{elapsed:.1f}",
                    f"{connect:.1f}",
                ]
            )
            raw["runs"].append(
                {
                    "client": kind,
                    "clients": opts.clients,
                    "calls_per_client": opts.calls,
                    "latencies_s": lat,
                    "errors": stats.errors[:50],
                    "error_count": len(stats.errors),
                    "connect_s": connect,
                    "calls_s": elapsed,
                }
            )
            for err in stats.errors[:5]:
                print(f"    error: {err}", flush=True)
            if proc.poll() is not None:
                raise RuntimeError(f"the HTTP server exited with {proc.returncode} (see log)")
    finally:
        stop_process(proc)
    return rows, raw


# -- main --------------------------------------------------------------------------------------


def header_line(cli: str | None) -> str:
    from importlib.metadata import version

    import handrail

    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    server = "`handrail serve`" if cli else "`python -c serve(...)`"
    return (
        f"handrail {handrail.__version__} ({server}) | mcp SDK {version('mcp')} | "
        f"{PEER_PACKAGE} {peer_version()} on node {node.stdout.strip()} | "
        f"Python {platform.python_version()} | {platform.platform()} | nproc {os.cpu_count()} | "
        f"load {os.getloadavg()[0]:.2f}"
    )


async def run(opts: argparse.Namespace, tree: Path, log: TextIO) -> dict[str, Any]:
    cli = handrail_cli() if opts.server == "auto" else None
    if opts.server == "cli":
        cli = handrail_cli()
        if cli is None:
            raise SystemExit("`handrail serve` is not available yet")
    results: dict[str, Any] = {"header": header_line(cli)}
    print(results["header"])
    out: list[str] = []
    if "stdio" in opts.only:
        print(f"\nstdio round trips (tree {tree}) ...", flush=True)
        rows, refs = await stdio_rows(tree, cli, opts, log)
        header = [
            "operation",
            "handrail",
            "peer",
            "handrail p50 ms",
            "p99",
            "peer p50 ms",
            "p99",
            "ratio p50",
            "target",
            "answer chars",
        ]
        out.append(
            f"**MCP round trip over stdio** (`ClientSession.call_tool`, one client, "
            f"{opts.files:,} files; read/edit {opts.reads}/{opts.edits} rounds, glob "
            f"{opts.globs}, grep {opts.greps})\n\n" + table(header, [r.cells() for r in rows])
        )
        peer_read = statistics.median(rows[0].theirs)
        ref_rows = [
            [label, fmt_ms(statistics.median(t)), fmt_ms(pct(t, 99)), ""]
            for label, t in refs.items()
        ]
        for cells, t in zip(ref_rows, refs.values(), strict=True):
            if cells[0].startswith("read"):
                cells[3] = f"{statistics.median(t) / peer_read:.2f}x"
        out.append(
            "**Reference rows** (same run, same files; what the SDK server and the pipeline "
            "cost alone)\n\n"
            + table(["reference", "p50 ms", "p99", "p50 / peer read p50"], ref_rows)
        )
        results["stdio"] = [r.as_json() for r in rows]
        results["stdio_reference_s"] = refs
    if "start" in opts.only:
        print(f"\nstart-up, {opts.starts} cold starts each ...", flush=True)
        rows2, raw = await start_rows(tree, cli, opts.starts, log)
        out.append(
            f"**Spawn to first `tools/list` answer** (median and best of {opts.starts})\n\n"
            + table(["server", "median ms", "best ms", "ratio"], rows2)
        )
        results["start"] = raw
    if "load" in opts.only:
        print("\nHTTP load ...", flush=True)
        rows3, raw = await load_rows(tree, opts, log)
        header = [
            "clients x calls",
            "client",
            "calls",
            "errors",
            "p50 ms",
            "p99 ms",
            "calls/s",
            "call phase s",
            "connect s",
        ]
        out.append(
            "**Streamable HTTP load** (`read_file` on small files, 127.0.0.1, one server "
            "process)\n\n" + table(header, rows3)
        )
        results["load"] = raw
    if "lazy" in opts.only:
        import runpy

        # Loaded by path: this folder is off sys.path (it would shadow the SDK).
        lazy_rows = runpy.run_path(str(HERE / "_mcp_lazy.py"))["lazy_rows"]
        print(f"\nsession start with 10 servers, {opts.lazy_runs} rounds ...", flush=True)
        rows4, raw = await lazy_rows(opts.lazy_runs, log)
        header = ["session", "median ms", "best ms", "start() ms", "ratio", "paired", "target"]
        out.append(
            "**Session start with 10 configured stdio servers** (spawn to tools ready, median "
            f"and best of {opts.lazy_runs}; `start() ms`: `McpTools.start()` and the registry "
            "alone, in the child)\n\n" + table(header, rows4)
        )
        results["lazy"] = raw
    if "tasks" in opts.only:
        import runpy

        task_overhead = runpy.run_path(str(HERE / "_mcp_tasks.py"))["task_overhead"]
        print(f"\ntask-required calls vs direct, {opts.task_rounds} rounds ...", flush=True)
        measured = await task_overhead(opts.task_rounds)
        out.append(
            "**A task-required MCP call vs the direct call of the same tool body** (one "
            f"Python stdio server, {opts.task_rounds} interleaved rounds; a task is three "
            "requests: create, get, result)\n\n" + table(measured.header, measured.rows)
        )
        results["tasks"] = measured.as_json()
    print()
    print(results["header"])
    print()
    print("\n\n".join(out))
    results["markdown"] = "\n\n".join(out)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run with few rounds")
    parser.add_argument(
        "--only", nargs="+", choices=("stdio", "start", "load", "lazy", "tasks"), default=None
    )
    parser.add_argument("--files", type=int, default=5000, help="files in the tree (5000)")
    parser.add_argument("--tree", default=None, help="where the tree lives (cache dir)")
    parser.add_argument("--regen", action="store_true", help="rebuild the tree")
    parser.add_argument(
        "--server",
        choices=("auto", "cli", "api"),
        default="auto",
        help="handrail over stdio as `handrail serve` (cli), `python -c serve(...)` (api), or "
        "the CLI when it has `serve` (auto)",
    )
    parser.add_argument(
        "--load-client",
        nargs="+",
        choices=("sdk", "raw"),
        default=["sdk"],
        help="HTTP load clients to run, in order (default: sdk)",
    )
    parser.add_argument("--clients", type=int, default=None, help="HTTP clients (200)")
    parser.add_argument("--calls", type=int, default=None, help="calls per HTTP client (100)")
    parser.add_argument("--load-timeout", type=float, default=600.0, help="call phase bound, s")
    parser.add_argument("--out", default=str(HERE / "out" / "mcp.json"))
    opts = parser.parse_args()
    quick = opts.quick
    opts.only = opts.only or ["stdio", "start", "load", "lazy", "tasks"]
    opts.reads = 60 if quick else 600
    opts.edits = 30 if quick else 300
    opts.globs = 5 if quick else 25
    opts.greps = 9 if quick else 51
    opts.starts = 3 if quick else 11
    opts.lazy_runs = 3 if quick else 11
    opts.task_rounds = 60 if quick else 400
    opts.clients = opts.clients or (20 if quick else 200)
    opts.calls = opts.calls or (20 if quick else 100)
    if opts.tree is None:
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        if not os.access(cache.parent if not cache.exists() else cache, os.W_OK):
            cache = Path(tempfile.gettempdir())
        opts.tree = str(cache / "handrail-bench" / f"mcp-tree-{opts.files}")
    tree = Path(opts.tree).resolve()
    if "stdio" in opts.only or "start" in opts.only:
        problem = ensure_peer()
        if problem is not None:
            print(f"peer unavailable: {problem}")
            return 1
    try:
        from handrail.mcp import serve  # noqa: F401
    except ImportError as exc:
        print(f"SKIPPED: handrail.mcp.serve does not import ({exc})")
        return 1
    if set(opts.only) - {"lazy"}:
        ensure_tree(tree, opts.files, opts.regen)
    log_path = Path(tempfile.gettempdir()) / f"handrail-bench-mcp-{os.getpid()}.log"
    with open(log_path, "w") as log:
        try:
            results = asyncio.run(run(opts, tree, log))
        except BaseException:
            log.flush()
            print(f"\nserver stderr (tail of {log_path}):")
            print("".join(log_path.read_text().splitlines(keepends=True)[-30:]))
            raise
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"\nraw results: {out}; server stderr: {log_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
