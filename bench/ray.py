"""handrail.ray against in-process sessions and `handrail serve --http` replicas, in one run.

One command, in the dev environment (`pip install -e ".[dev]"` brings Ray, httpx and the MCP SDK):

    python bench/ray.py                       # full run, about 30 minutes on 2 vCPUs
    python bench/ray.py --quick               # smoke run: 64 sessions x 20 calls, about 3 min
    python bench/ray.py --sizes 64,512 --calls 50 --only overhead throughput

Ray runs on this machine only: `ray.init(num_cpus=<cpu count>, _node_ip_address="127.0.0.1")`
with `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` (without it Ray on Linux swaps 127.0.0.1 for the
machine's outward address), no dashboard, and every socket (hosts, serve replicas) is on
127.0.0.1. Every session has its
own workspace, a copy of a small generated repo (four .py files of about 50 lines): in process a
`shutil.copytree`, for handrail.ray a `DirWorkspace(source)` that the host copies, for serve a
subdirectory `sN/` of the replica's root (serve has one root per server, so the paths the
client sends point into the session's subdirectory).

The paths compared:
- in-process: `Runtime(coding_tools(project_dir=root), root=root, mode="accept_edits",
  allow=[...])` per session, in this process;
- handrail.ray: `SessionPool(hosts=H, host_cpus=1, mode="accept_edits", allow=[...])`,
  `await pool.open(DirWorkspace(source))`, `await rt.call(...)` (the authenticated socket);
- ray actor method (part 1 only): the same host operation through a plain Ray actor call,
  `await link.actor.rpc.remote("call", (sid, name, args, call_id, None))`, another session
  on the same host, to show what the socket saves;
- serve --http: `handrail serve --http 127.0.0.1:0 --root DIR --mode accept_edits --allow ...
  --no-settings` replicas (bearer token on), raw JSON-RPC MCP over httpx: `initialize`,
  `notifications/initialized`, then `tools/call`; one MCP session per workload session.

The allow rules are `run_shell(true)`, `run_shell(grep:*)`, `run_shell(sleep:*)` everywhere.

Parts:
1. Overhead per call: one session per path, calls one after the other, after a warm-up, in
   blocks of n/10 calls per path whose order rotates from block to block; p50/p99 per path and
   "over in-process" = remote p50 - in-process p50. Rows: `read_file` re-read of a small file
   (the "unchanged since you read it" answer), `read_file` with invalid arguments
   (`INVALID_ARGS`), `edit_file` after a read (two edits alternate, so each one succeeds),
   `run_shell "true"` (sandboxed). Goal: handrail.ray <= 0.3 ms p50 over in-process. Then the
   round trip alone: the host's `ping` over the socket and as a Ray actor call.
2. Throughput: N sessions at once, each a coroutine making its calls one after the other, a
   fixed seeded order of 60% `read_file` (one of the four files), 20% `edit_file` (the first
   call reads the edited file), 20% `run_shell "grep -c def *.py"`. handrail.ray uses H =
   cpu count hosts of 1 CPU each; serve uses one replica per core, sessions spread evenly, an
   httpx client (one keep-alive connection) per session. calls/s over the calls phase (sessions
   already open), CPU seconds of this process plus the hosts or replicas including their
   reaped children (`os.times()`, `pool.stats()`, /proc/PID/stat) over the same window, and
   calls per CPU second; Ray's own processes (raylet, GCS, idle workers) are shown apart.
   Goal: handrail.ray >= 0.8x in-process in calls per CPU second at 64 sessions. Memory:
   host PSS (/proc/PID/smaps_rollup) before and after opening the sessions, per session; for
   in-process, this process's PSS. 4096 sessions make `--big-calls` calls each (default 5:
   3 reads, 1 edit, 1 shell).
3. Session churn (one host): open + close one at a time (p50/p99 of each, sessions/s), then
   32 openers at once, against copytree + Runtime in this process; then 512 sessions held
   open: host PSS per session; closed; again: what is left (PSS, workspace directories).
4. Fault recovery: K = 32 sessions on one host (command slots = K), each with
   `run_shell "sleep 30.NNNNNN"` in flight (a mark of this run, so other programs' sleeps do
   not count); kill -9 of the host's PID; time until each call returned (p50, max) and which
   error; then `pool.close()` and a count of what is left: processes whose cwd is under the
   pool's directory or whose command line has the sleep, and `handrail-ray-<pool id>`
   directories in the temp dir. Goal: all `SESSION_LOST`, nothing left.

Raw numbers go to `bench/out/ray.json`. serve replicas are stopped by PID (their own process
group), the pools by `close()`, Ray by `ray.shutdown()`.
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
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# bench/ holds scripts named like packages (mcp.py would shadow the `mcp` SDK that serve uses).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT / "src"))

OUT = HERE / "out" / "ray.json"
ALLOW = ["run_shell(true)", "run_shell(grep:*)", "run_shell(sleep:*)"]
MODE = "accept_edits"
FILES = ["app.py", "models.py", "utils.py", "cli.py"]
EDITED = "app.py"
GREP = "grep -c def {prefix}*.py"
TOKEN = "bench-ray-token-" + "x" * 32
# the fault test's command: `sleep 30` with a mark of this run, so other programs' sleeps on a
# shared machine are not counted as ours
SLEEP = f"sleep 30.{random.randrange(10**5, 10**6)}"
CLK = os.sysconf("SC_CLK_TCK")
START_TIMEOUT = 60.0
CPUS = os.cpu_count() or 1
PATHS = ("in-process", "handrail.ray", "serve --http")


# -- small helpers ----------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile, in the unit of `values`."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def ms(seconds: float) -> str:
    v = seconds * 1000
    return f"{v:.3f}" if abs(v) < 1 else f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def pss_kb(pid: int | str) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


def self_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def proc_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of a live process, in seconds (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / CLK


def children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def ray_daemons_cpu(exclude: set[int]) -> float:
    """CPU seconds of this process's descendants (Ray's raylet, GCS, workers), hosts excluded."""
    kids = children_map()
    total, todo = 0.0, list(kids.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        if pid in exclude:
            continue
        total += proc_cpu(pid)
        todo += kids.get(pid, [])
    return total


def make_source(folder: Path) -> None:
    """A small repo: four .py files of about 50 lines; app.py starts with `VALUE = 0`."""
    folder.mkdir(parents=True)
    for n, name in enumerate(FILES):
        lines = ["VALUE = 0", ""] if name == EDITED else [f'"""Module {name}."""', ""]
        for k in range(8):
            lines += [
                f"def func_{n}_{k}(items, scale={k}):",
                f'    """Scale the items of group {k}."""',
                "    out = []",
                "    for item in items:",
                "        out.append(item * scale)",
                "    return out",
            ]
        (folder / name).write_text("\n".join(lines) + "\n")


def copy_tree(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest)


# -- the clients: one session each, the same small surface for every path ---------------------


class Outcome:
    __slots__ = ("error", "ok", "text")

    def __init__(self, ok: bool, error: str | None, text: str) -> None:
        self.ok, self.error, self.text = ok, error, text


def from_result(r: Any) -> Outcome:
    r = getattr(r, "value", r) if type(r).__name__ == "Extra" else r
    if not hasattr(r, "ok"):  # an Interrupted: the call asked for approval
        return Outcome(False, type(r).__name__, str(r)[:200])
    err = r.error.value if r.error is not None else None
    return Outcome(bool(r.ok), err, str(r.content))


class Client:
    """One session; `prefix` is where its files are, relative to the tools' root."""

    prefix = ""
    edits = 0

    async def call(self, name: str, args: dict[str, Any]) -> Outcome:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass

    # the workload's operations
    def read(self, name: str = EDITED) -> Awaitable[Outcome]:
        return self.call("read_file", {"file_path": self.prefix + name})

    def bad(self) -> Awaitable[Outcome]:
        return self.call("read_file", {"bad": 1})

    def edit(self) -> Awaitable[Outcome]:
        v = self.edits % 2
        self.edits += 1
        args = {
            "file_path": self.prefix + EDITED,
            "old_string": f"VALUE = {v}",
            "new_string": f"VALUE = {1 - v}",
        }
        return self.call("edit_file", args)

    def shell(self, command: str) -> Awaitable[Outcome]:
        return self.call("run_shell", {"command": command.format(prefix=self.prefix)})


class LocalClient(Client):
    def __init__(self, root: Path) -> None:
        from handrail import Runtime
        from handrail.builtin import coding_tools

        self.rt = Runtime(coding_tools(project_dir=root), root=root, mode=MODE, allow=ALLOW)

    async def call(self, name: str, args: dict[str, Any]) -> Outcome:
        return from_result(await self.rt.call(name, args))

    async def aclose(self) -> None:
        await self.rt.aclose()


class RayClient(Client):
    def __init__(self, rt: Any) -> None:
        self.rt = rt

    async def call(self, name: str, args: dict[str, Any]) -> Outcome:
        return from_result(await self.rt.call(name, args))

    async def aclose(self) -> None:
        await self.rt.aclose()


class ActorClient(Client):
    """The plain Ray actor call into the same host operation (`HostActor.rpc`)."""

    def __init__(self, rt: Any, actor: Any) -> None:
        self.rt = rt  # a session opened through the pool; its calls go through `rpc`
        self.actor = actor  # `pool.links[rt.host].actor`
        self.n = 0

    async def call(self, name: str, args: dict[str, Any]) -> Outcome:
        self.n += 1
        value = await self.actor.rpc.remote(
            "call", (self.rt.session_id, name, args, f"rpc_{self.n}", None)
        )
        return from_result(value)

    async def aclose(self) -> None:
        await self.rt.aclose()


class HttpClient(Client):
    """One MCP session on a serve replica, raw JSON-RPC over its own httpx client."""

    def __init__(self, http: Any, url: str, prefix: str) -> None:
        self.http, self.url, self.prefix = http, url, prefix
        self.headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "authorization": f"Bearer {TOKEN}",
        }
        self.ids = 0

    async def open(self) -> HttpClient:
        from mcp_types.version import LATEST_HANDSHAKE_VERSION

        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-ray", "version": "1"},
            },
        }
        r = await self.http.post(self.url, json=init, headers=self.headers)
        r.raise_for_status()
        self.headers["mcp-protocol-version"] = reply_of(r, 0)["result"]["protocolVersion"]
        self.headers["mcp-session-id"] = r.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        (await self.http.post(self.url, json=note, headers=self.headers)).raise_for_status()
        return self

    async def call(self, name: str, args: dict[str, Any]) -> Outcome:
        self.ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": name, "arguments": args},
        }
        r = await self.http.post(self.url, json=body, headers=self.headers)
        message = reply_of(r, self.ids)
        if "error" in message:
            return Outcome(False, "JSONRPC", json.dumps(message["error"])[:300])
        result = message["result"]
        meta = (result.get("_meta") or {}).get("handrail/result") or {}
        text = "".join(b.get("text", "") for b in result.get("content", []))
        return Outcome(not result.get("isError"), meta.get("error"), text)

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self.http.delete(self.url, headers=self.headers)


def reply_of(response: Any, want_id: int) -> dict[str, Any]:
    """The JSON-RPC reply with `want_id`, from a JSON or an SSE answer."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    for line in response.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == want_id:
                return message
    raise RuntimeError(f"no reply {want_id}: {response.status_code} {response.text[:200]}")


# -- serve --http replicas --------------------------------------------------------------------


class Replica:
    """`handrail serve --http 127.0.0.1:0` over `root`, in its own process group."""

    def __init__(self, root: Path, state: Path) -> None:
        self.root = root
        self.log_path = state / f"serve-{root.parent.name}-{root.name}.log"
        env = dict(os.environ)
        env.update(
            PYTHONPATH=str(ROOT / "src"),
            HANDRAIL_STATE_DIR=str(state),
            XDG_CONFIG_HOME=str(state / "xdg"),
            HANDRAIL_SERVE_TOKEN=TOKEN,
        )
        args = [sys.executable, "-m", "handrail", "serve", "--http", "127.0.0.1:0"]
        args += ["--root", str(root), "--mode", MODE, "--no-settings"]
        for rule in ALLOW:
            args += ["--allow", rule]
        self.log = open(self.log_path, "w")  # closed in stop()
        self.proc = subprocess.Popen(
            args,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env=env,
            start_new_session=True,
        )
        self.url = ""

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.proc.poll() is None:
            for line in self.log_path.read_text().splitlines():
                if line.startswith("handrail: serving MCP on "):
                    self.url = line.split()[4]
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"serve did not start within {START_TIMEOUT} s (see {self.log_path})")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


def start_replicas(roots: list[Path], state: Path) -> list[Replica]:
    reps = [Replica(r, state) for r in roots]
    try:
        for rep in reps:
            rep.wait_ready()
    except BaseException:
        for rep in reps:
            rep.stop()
        raise
    return reps


def http_client(connections: int) -> Any:
    import httpx

    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(timeout=httpx.Timeout(600.0, pool=None), limits=limits)


# -- part 1: overhead per call ----------------------------------------------------------------

ROWS: list[tuple[str, str]] = [
    ("read", "`read_file` re-read (unchanged)"),
    ("bad", "`read_file` invalid args"),
    ("edit", "`edit_file` after read"),
    ("shell", '`run_shell "true"`'),
]


def row_op(row: str) -> Callable[[Client], Awaitable[Outcome]]:
    if row == "read":
        return lambda c: c.read()
    if row == "bad":
        return lambda c: c.bad()
    if row == "edit":
        return lambda c: c.edit()
    return lambda c: c.shell("true")


def expected(row: str, o: Outcome) -> bool:
    if row == "bad":
        return not o.ok and o.error == "INVALID_ARGS"
    if row == "edit":
        return o.ok and "Edited" in o.text
    return o.ok


async def overhead(opts: argparse.Namespace, base: Path, pools: list[Any]) -> dict[str, Any]:
    from handrail.ray import DirWorkspace, SessionPool

    source = base / "source"
    work = base / "p1"
    copy_tree(source, work / "inproc")
    (work / "http").mkdir()
    copy_tree(source, work / "http" / "s0")
    state = base / "state"
    reps = start_replicas([work / "http"], state)
    # Like for like with the in-process runtime, which keeps no checkpoints (`serve` does).
    pool = SessionPool(hosts=1, host_cpus=1, mode=MODE, allow=ALLOW, checkpoints=False)
    pools.append(pool)
    clients: dict[str, Client] = {}
    https = [http_client(1)]
    try:
        clients["in-process"] = LocalClient(work / "inproc")
        clients["handrail.ray"] = RayClient(await pool.open(DirWorkspace(str(source))))
        rt = await pool.open(DirWorkspace(str(source)))
        clients["ray actor method"] = ActorClient(rt, pool.links[rt.host].actor)
        clients["serve --http"] = await HttpClient(https[0], reps[0].url, "s0/").open()
        names = list(clients)
        for c in clients.values():  # the first read: later reads are re-reads, edits may run
            o = await c.read()
            assert o.ok, o.text
        samples: dict[str, dict[str, list[float]]] = {}
        errors: dict[str, dict[str, list[str]]] = {}
        for row, label in ROWS:
            n, warm = (opts.shell_calls, 10) if row == "shell" else (opts.calls_seq, 100)
            block = max(1, n // 10)
            op = row_op(row)
            samples[row] = {k: [] for k in names}
            errors[row] = {k: [] for k in names}
            print(f"  {label}: {warm} warm-up + {n} calls per path ...", flush=True)
            for name in names:
                for _ in range(warm):
                    await op(clients[name])
            # blocks of n/10 calls per path, the paths' order rotating from block to block:
            # drift of the machine spreads over every path, and no path's call runs right after
            # another path's (whose process may still be finishing its answer)
            for b in range(math.ceil(n / block)):
                k0 = b % len(names)
                for name in names[k0:] + names[:k0]:
                    c = clients[name]
                    for _ in range(min(block, n - b * block)):
                        t0 = time.perf_counter()
                        o = await op(c)
                        dt = time.perf_counter() - t0
                        if expected(row, o):
                            samples[row][name].append(dt)
                        else:
                            errors[row][name].append(f"{o.error}: {o.text[:200]}")
        floors = await round_trip_floors(pool, opts.calls_seq)
        for c in clients.values():
            await c.aclose()
    finally:
        for http in https:
            await http.aclose()
        for rep in reps:
            rep.stop()
        await pool.close()
    paths = list(samples["read"])
    return {"paths": paths, "samples": samples, "errors": errors, "floors": floors}


async def round_trip_floors(pool: Any, n: int) -> dict[str, list[float]]:
    """The host's `ping` (its PID, no session) over the socket and as a Ray actor call."""
    link = pool.links[0]
    channel = await link.connect()

    async def socket_ping() -> None:
        status, _, _ = await channel.request("ping")
        assert status == 0

    async def actor_ping() -> None:
        await link.actor.ping.remote()

    found: dict[str, list[float]] = {"socket ping": [], "Ray actor ping": []}
    calls: dict[str, Callable[[], Awaitable[None]]] = {
        "socket ping": socket_ping,
        "Ray actor ping": actor_ping,
    }
    for fn in calls.values():
        for _ in range(100):
            await fn()
    block = max(1, n // 10)
    for b in range(10):
        for name in list(calls)[b % 2 :] + list(calls)[: b % 2]:
            for _ in range(block):
                t0 = time.perf_counter()
                await calls[name]()
                found[name].append(time.perf_counter() - t0)
    return found


def report_overhead(found: dict[str, Any]) -> tuple[str, list[list[str]], int]:
    samples: dict[str, dict[str, list[float]]] = found["samples"]
    paths: list[str] = found["paths"]
    rows: list[list[str]] = []
    summary: list[list[str]] = []
    met_rows = 0
    for row, label in ROWS:
        base = statistics.median(samples[row]["in-process"])
        cells = [label]
        for p in paths:
            xs = samples[row][p]
            cells.append(f"{ms(statistics.median(xs))} / {ms(pct(xs, 99))}" if xs else "FAIL")
        deltas = []
        for p in paths[1:]:
            xs = samples[row][p]
            deltas.append(f"{(statistics.median(xs) - base) * 1e3:+.3f}" if xs else "-")
        ray_xs = samples[row]["handrail.ray"]
        delta = statistics.median(ray_xs) - base if ray_xs else math.inf
        met = delta <= 0.0003
        met_rows += met
        errs = sum(len(v) for v in found["errors"][row].values())
        rows.append(cells + deltas + ["met" if met else "NOT met", str(errs)])
        summary.append(cells + deltas + ["met" if met else "NOT met"])
    header = ["row (p50 / p99 ms)", *paths]
    header += [f"{p} - in-process p50 ms" for p in paths[1:]]
    header += ["goal ray <= +0.3 ms", "errors"]
    floors = found["floors"]
    text = (
        table(header, rows)
        + "\n\nround trip alone (the host's `ping`, no session): "
        + ", ".join(
            f"{k} p50 {ms(statistics.median(v))} ms / p99 {ms(pct(v, 99))} ms"
            for k, v in floors.items()
        )
    )
    return text, summary, met_rows


# -- part 2: throughput -----------------------------------------------------------------------


def workload(seed: int, calls: int) -> list[tuple[str, str]]:
    """A session's calls: 60% reads, 20% edits, 20% shell, shuffled; the first reads EDITED."""
    rng = random.Random(seed)
    reads = round(calls * 0.6)
    edits = round(calls * 0.2)
    ops = [("read", rng.choice(FILES)) for _ in range(reads)]
    ops += [("edit", EDITED)] * edits + [("shell", "")] * (calls - reads - edits)
    rng.shuffle(ops)
    first = next(i for i, op in enumerate(ops) if op[0] == "read")
    ops[0], ops[first] = ops[first], ops[0]
    ops[0] = ("read", EDITED)
    return ops


async def run_session(c: Client, ops: list[tuple[str, str]], errors: list[str]) -> None:
    for kind, name in ops:
        try:
            if kind == "read":
                o = await c.read(name)
            elif kind == "edit":
                o = await c.edit()
            else:
                o = await c.shell(GREP)
            ok = o.ok and (kind != "edit" or "Edited" in o.text)
        except Exception as exc:
            o, ok = Outcome(False, type(exc).__name__, str(exc)), False
        if not ok:
            errors.append(f"{kind}: {o.error}: {o.text[:200]}")


async def gather_limited(coros: list[Awaitable[Any]], limit: int) -> list[Any]:
    gate = asyncio.Semaphore(limit)

    async def one(c: Awaitable[Any]) -> Any:
        async with gate:
            return await c

    return await asyncio.gather(*(one(c) for c in coros))


async def throughput_one(
    path: str, n: int, calls: int, base: Path, pools: list[Any]
) -> dict[str, Any]:
    from handrail.ray import DirWorkspace, SessionPool

    source = base / "source"
    slug = "".join(ch for ch in path if ch.isalnum())
    work = base / f"p2-{slug}-{n}"
    plans = [workload(1000 + i, calls) for i in range(n)]
    errors: list[str] = []
    extra: dict[str, Any] = {}
    clients: list[Client] = []
    pool: Any = None
    reps: list[Replica] = []
    https: list[Any] = []
    t_open = time.perf_counter()
    try:
        if path == "in-process":
            work.mkdir()
            await asyncio.to_thread(lambda: [copy_tree(source, work / f"s{i}") for i in range(n)])
            pss0 = pss_kb("self")
            clients = [LocalClient(work / f"s{i}") for i in range(n)]
            extra["pss_kb_before"], extra["pss_kb_after"] = pss0, pss_kb("self")

            async def others() -> float:
                return 0.0
        elif path == "handrail.ray":
            pool = SessionPool(
                hosts=CPUS, host_cpus=1, max_sessions_per_host=n, mode=MODE, allow=ALLOW
            )
            pools.append(pool)
            await pool.start()
            pids = await host_pids(pool)
            pss0 = [pss_kb(p) for p in pids]
            ws = DirWorkspace(str(source))
            rts = await gather_limited([pool.open(ws) for _ in range(n)], 64)
            clients = [RayClient(rt) for rt in rts]
            extra["host_pss_kb_before"] = pss0
            extra["host_pss_kb_after"] = [pss_kb(p) for p in pids]
            extra["sessions_per_host"] = [s["sessions"] for s in await pool.stats()]
            lost = [rt for rt in rts if rt.lost is not None]
            if lost:
                errors.append(f"{len(lost)} sessions did not open: {lost[0].lost.content[:200]}")

            async def others() -> float:
                return sum(s.get("cpu_seconds", 0.0) for s in await pool.stats())
        else:
            work.mkdir()
            roots = [work / f"r{j}" for j in range(CPUS)]
            for r in roots:
                r.mkdir()
            await asyncio.to_thread(
                lambda: [copy_tree(source, roots[i % CPUS] / f"s{i}") for i in range(n)]
            )
            reps = start_replicas(roots, base / "state")
            https = [http_client(1) for _ in range(n)]
            clients = await gather_limited(
                [HttpClient(https[i], reps[i % CPUS].url, f"s{i}/").open() for i in range(n)],
                64,
            )
            extra["replica_pss_kb_after_open"] = [pss_kb(r.pid) for r in reps]

            async def others() -> float:
                return sum(proc_cpu(r.pid) for r in reps)

        open_s = time.perf_counter() - t_open
        exclude = set(await host_pids(pool)) if pool is not None else set()
        o0, d0 = await others(), ray_daemons_cpu(exclude)
        c0, t0 = self_cpu(), time.perf_counter()
        await asyncio.gather(*(run_session(c, plans[i], errors) for i, c in enumerate(clients)))
        wall = time.perf_counter() - t0
        c1 = self_cpu()
        o1, d1 = await others(), ray_daemons_cpu(exclude)
        extra["driver_cpu_s"], extra["hosts_or_replicas_cpu_s"] = c1 - c0, o1 - o0
        cpu_s = (c1 - c0) + (o1 - o0)
        await gather_limited([c.aclose() for c in clients], 64)
    finally:
        for h in https:
            await h.aclose()
        for rep in reps:
            rep.stop()
        if pool is not None:
            await pool.close()
        if work.exists():
            await asyncio.to_thread(shutil.rmtree, work, True)
    done = n * calls
    return {
        "path": path,
        "sessions": n,
        "calls_per_session": calls,
        "calls": done,
        "errors": len(errors),
        "error_samples": errors[:5],
        "open_s": round(open_s, 3),
        "wall_s": wall,
        "calls_per_s": done / wall,
        "cpu_s": cpu_s,
        "calls_per_cpu_s": done / cpu_s if cpu_s > 0 else math.nan,
        "ray_daemons_cpu_s": d1 - d0,
        "load": os.getloadavg()[0],
        **extra,
    }


async def host_pids(pool: Any) -> list[int]:
    """The hosts' PIDs from `pool.stats()`; a host that does not answer is waited for (60 s)."""
    deadline = time.monotonic() + 60
    while True:
        stats = await pool.stats()
        if all("pid" in s for s in stats):
            return [int(s["pid"]) for s in stats]
        print(f"    pool.stats() without a PID: {stats}", flush=True)
        if time.monotonic() > deadline:
            raise RuntimeError(f"a host did not report its PID within 60 s: {stats}")
        await asyncio.sleep(1)


def report_throughput(runs: list[dict[str, Any]]) -> tuple[str, list[str]]:
    rows: list[list[str]] = []
    notes: list[str] = []
    base: dict[int, dict[str, Any]] = {r["sessions"]: r for r in runs if r["path"] == "in-process"}
    for r in runs:
        b = base.get(r["sessions"])
        if r.get("skipped"):
            rows.append([str(r["sessions"]), "-", r["path"], "skipped", "", "", "", "", "", "", ""])
            notes.append(f"{r['sessions']} sessions, {r['path']} skipped: {r['skipped']}")
            continue
        ratio_s = r["calls_per_s"] / b["calls_per_s"] if b else math.nan
        ratio_c = r["calls_per_cpu_s"] / b["calls_per_cpu_s"] if b else math.nan
        rows.append(
            [
                str(r["sessions"]),
                str(r["calls_per_session"]),
                r["path"],
                f"{r['wall_s']:.1f}",
                f"{r['calls_per_s']:.0f}",
                f"{r['cpu_s']:.1f}",
                f"{r['calls_per_cpu_s']:.0f}",
                "1.00x" if r["path"] == "in-process" else f"{ratio_s:.2f}x" if b else "-",
                "1.00x" if r["path"] == "in-process" else f"{ratio_c:.2f}x" if b else "-",
                f"{r['ray_daemons_cpu_s']:.1f}" if r["path"] == "handrail.ray" else "-",
                str(r["errors"]),
            ]
        )
        if r["errors"]:
            notes.append(
                f"{r['sessions']} sessions, {r['path']}: {r['errors']} calls failed, e.g. "
                f"{r['error_samples'][0][:160]}"
            )
        if r["path"] == "handrail.ray":
            before, after = sum(r["host_pss_kb_before"]), sum(r["host_pss_kb_after"])
            notes.append(
                f"{r['sessions']} sessions on {len(r['host_pss_kb_before'])} hosts "
                f"({'/'.join(map(str, r['sessions_per_host']))} per host): host PSS "
                f"{before / 1024:.0f} -> {after / 1024:.0f} MB, "
                f"{(after - before) / r['sessions']:.0f} KB per open session"
            )
        elif r["path"] == "in-process":
            notes.append(
                f"{r['sessions']} in-process runtimes: this process's PSS "
                f"{r['pss_kb_before'] / 1024:.0f} -> {r['pss_kb_after'] / 1024:.0f} MB, "
                f"{(r['pss_kb_after'] - r['pss_kb_before']) / r['sessions']:.0f} KB per session"
            )
    full = max((r["calls_per_session"] for r in runs if not r.get("skipped")), default=0)
    for r in runs:
        if not r.get("skipped") and r["path"] == "in-process" and r["calls_per_session"] < full:
            minutes = r["sessions"] * full / r["calls_per_s"] / 60
            notes.append(
                f"{r['sessions']} sessions ran {r['calls_per_session']} calls each, not {full}: "
                f"at the measured in-process rate {full} calls each would take about "
                f"{minutes:.0f} min per path on this machine"
            )
    header = [
        "sessions",
        "calls each",
        "path",
        "wall s",
        "calls/s",
        "CPU s",
        "calls / CPU s",
        "calls/s vs in-proc",
        "calls/CPU s vs in-proc",
        "Ray daemons CPU s",
        "errors",
    ]
    return table(header, rows), notes


# -- part 3: session churn --------------------------------------------------------------------


async def churn(opts: argparse.Namespace, base: Path, pools: list[Any]) -> dict[str, Any]:
    from handrail.ray import DirWorkspace, SessionPool

    source = base / "source"
    ws = DirWorkspace(str(source))
    out: dict[str, Any] = {}
    # reference: the same work in this process (copy the tree, build the session's Runtime)
    local: list[float] = []
    for i in range(20 + opts.churn // 4):
        dest = base / "p3-local" / f"s{i}"
        t = time.perf_counter()
        copy_tree(source, dest)
        c = LocalClient(dest)
        if i >= 20:
            local.append(time.perf_counter() - t)
        await c.aclose()
        shutil.rmtree(dest)
    out["local_open"] = local
    pool = SessionPool(hosts=1, host_cpus=1, max_sessions_per_host=4096, mode=MODE, allow=ALLOW)
    pools.append(pool)
    try:
        await pool.start()
        pid = (await pool.stats())[0]["pid"]
        host_base = Path(pool.links[0].base)
        for _ in range(20):  # warm-up
            rt = await pool.open(ws)
            await rt.aclose()
        opens, closes = [], []
        host0, me0 = (await pool.stats())[0]["cpu_seconds"], self_cpu()
        t0 = time.perf_counter()
        for _ in range(opts.churn):
            t = time.perf_counter()
            rt = await pool.open(ws)
            t1 = time.perf_counter()
            assert rt.lost is None, rt.lost
            await rt.aclose()
            opens.append(t1 - t)
            closes.append(time.perf_counter() - t1)
        seq_s = time.perf_counter() - t0
        host1, me1 = (await pool.stats())[0]["cpu_seconds"], self_cpu()
        out["seq"] = {
            "n": opts.churn,
            "s": seq_s,
            "open": opens,
            "close": closes,
            "host_cpu_s": host1 - host0,
            "driver_cpu_s": me1 - me0,
        }
        conc_opens: list[float] = []

        async def opener(k: int) -> None:
            for _ in range(k):
                t = time.perf_counter()
                rt = await pool.open(ws)
                conc_opens.append(time.perf_counter() - t)
                assert rt.lost is None, rt.lost
                await rt.aclose()

        per = max(1, opts.churn // 32)
        t0 = time.perf_counter()
        await asyncio.gather(*(opener(per) for _ in range(32)))
        out["conc"] = {"n": 32 * per, "s": time.perf_counter() - t0, "open": conc_opens}
        # memory: hold many at once, close them, twice (the second round shows whether what
        # the first left is reused or grows)
        pss = [pss_kb(pid)]
        hold_s = []
        for _ in range(2):
            t0 = time.perf_counter()
            rts = await gather_limited([pool.open(ws) for _ in range(opts.hold)], 32)
            hold_s.append(time.perf_counter() - t0)
            assert all(rt.lost is None for rt in rts)
            pss.append(pss_kb(pid))
            await gather_limited([rt.aclose() for rt in rts], 32)
            pss.append(pss_kb(pid))
        stats = (await pool.stats())[0]
        out["hold"] = {
            "n": opts.hold,
            "open_s": hold_s,
            "pss_kb": pss,
            "ws_dirs_left": len(os.listdir(host_base / "ws")),
            "sessions_after": stats["sessions"],
        }
    finally:
        await pool.close()
    return out


def report_churn(c: dict[str, Any]) -> tuple[str, list[list[str]]]:
    seq, conc, hold, local = c["seq"], c["conc"], c["hold"], c["local_open"]
    p0, p1, p2, p3, p4 = hold["pss_kb"]
    n = hold["n"]
    rows = [
        [
            "one at a time: open + close",
            f"{seq['n'] / seq['s']:.0f}",
            f"{ms(statistics.median(seq['open']))} / {ms(pct(seq['open'], 99))}",
            f"{ms(statistics.median(seq['close']))} / {ms(pct(seq['close'], 99))}",
        ],
        [
            "32 at once: open + close",
            f"{conc['n'] / conc['s']:.0f}",
            f"{ms(statistics.median(conc['open']))} / {ms(pct(conc['open'], 99))}",
            "",
        ],
        [f"{n} opened (32 at once), held", f"{n / hold['open_s'][0]:.0f}", "", ""],
        [
            "reference, in this process: copytree + Runtime(coding_tools)",
            f"{1 / statistics.median(local):.0f}",
            f"{ms(statistics.median(local))} / {ms(pct(local, 99))}",
            "",
        ],
    ]
    text = table(["DirWorkspace, 1 host", "sessions/s", "open p50 / p99 ms", "close p50/p99"], rows)
    mb = 1024
    text += (
        f"\n\nCPU per open + close, one at a time: host "
        f"{seq['host_cpu_s'] / seq['n'] * 1e3:.1f} ms, "
        f"this process {seq['driver_cpu_s'] / seq['n'] * 1e3:.1f} ms"
    )
    text += (
        f"\n\nmemory: host PSS {p0 / mb:.1f} MB -> {p1 / mb:.1f} MB with {n} open sessions "
        f"= {(p1 - p0) / n:.0f} KB per session; closed: {p2 / mb:.1f} MB; {n} again: "
        f"{p3 / mb:.1f} MB, closed: {p4 / mb:.1f} MB; {hold['ws_dirs_left']} workspace dirs "
        f"and {hold['sessions_after']} sessions left"
    )
    summary = [
        [
            "open+close, one at a time (1 host)",
            f"{seq['n'] / seq['s']:.0f} sessions/s",
            f"open p50 {ms(statistics.median(seq['open']))} ms, p99 "
            f"{ms(pct(seq['open'], 99))} ms; CPU per open+close: host "
            f"{seq['host_cpu_s'] / seq['n'] * 1e3:.0f} ms, driver "
            f"{seq['driver_cpu_s'] / seq['n'] * 1e3:.0f} ms; in process copytree + Runtime "
            f"p50 {ms(statistics.median(local))} ms",
        ],
        [
            "open+close, 32 at once (1 host)",
            f"{conc['n'] / conc['s']:.0f} sessions/s",
            f"open p50 {ms(statistics.median(conc['open']))} ms, "
            f"p99 {ms(pct(conc['open'], 99))} ms",
        ],
        [
            f"memory, {n} open sessions (1 host)",
            f"{(p1 - p0) / n:.0f} KB PSS per session",
            f"host PSS {p0 / mb:.0f} -> {p1 / mb:.0f} MB; after close {p2 / mb:.0f}, "
            f"after a 2nd round {p4 / mb:.0f} MB; {hold['ws_dirs_left']} dirs left",
        ],
    ]
    return text, summary


# -- part 4: fault recovery -------------------------------------------------------------------


def scan_leftovers(pool_dirs: list[Path]) -> dict[str, list[str]]:
    """Processes working under the pools' dirs or running `sleep 30`, and the dirs themselves."""
    procs: list[str] = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            cmdline = " ".join(a.decode(errors="replace") for a in cmd if a)
        except OSError:
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            cwd = ""
        under = any(cwd == str(d) or cwd.startswith(str(d) + "/") for d in pool_dirs)
        if under or SLEEP in cmdline:
            procs.append(f"{entry} cwd={cwd} cmd={cmdline[:120]}")
    dirs = [str(d) for d in pool_dirs if d.exists()]
    return {"processes": procs, "dirs": dirs}


async def faults(opts: argparse.Namespace, base: Path, pools: list[Any]) -> dict[str, Any]:
    from handrail.ray import DirWorkspace, SessionPool

    k = opts.fault_sessions
    pool = SessionPool(
        hosts=1, host_cpus=1, command_slots=k, max_sessions_per_host=k, mode=MODE, allow=ALLOW
    )
    pools.append(pool)
    pool_dir = Path(tempfile.gettempdir()) / f"handrail-ray-{pool.id}"
    out: dict[str, Any] = {"sessions": k, "pool_dir": str(pool_dir)}
    try:
        ws = DirWorkspace(str(base / "source"))
        rts = await gather_limited([pool.open(ws) for _ in range(k)], 32)
        pid = (await pool.stats())[0]["pid"]
        done: list[tuple[float, Any]] = []

        async def one(rt: Any) -> None:
            r = await rt.call("run_shell", {"command": SLEEP})
            done.append((time.perf_counter(), r))

        tasks = [asyncio.ensure_future(one(rt)) for rt in rts]
        deadline = time.monotonic() + 30
        running = 0
        while time.monotonic() < deadline:
            found = scan_leftovers([])["processes"]
            running = sum(p.split(" cmd=", 1)[1].startswith(SLEEP) for p in found)
            if running >= k:
                break
            await asyncio.sleep(0.1)
        stats = (await pool.stats())[0]
        out["sleeps_running_before_kill"] = running
        out["in_flight_before_kill"] = stats["in_flight"]
        t_kill = time.perf_counter()
        os.kill(pid, signal.SIGKILL)
        _, pending = await asyncio.wait(tasks, timeout=120)
        out["hung"] = len(pending)
        for t in pending:
            t.cancel()
        lat = [t - t_kill for t, _ in done]
        codes: dict[str, int] = {}
        for _, r in done:
            key = r.error.value if getattr(r, "error", None) is not None else "ok"
            codes[key] = codes.get(key, 0) + 1
        out["latencies_s"] = lat
        out["codes"] = codes
        out["sample"] = str(done[0][1].content)[:300] if done else ""
        out["executed"] = sorted({str(r.metadata.get("executed")) for _, r in done})
        out["before_close"] = scan_leftovers([pool_dir])
    finally:
        await pool.close()
    out["after_close"] = scan_leftovers([pool_dir])
    return out


def report_faults(f: dict[str, Any]) -> tuple[str, list[list[str]]]:
    lat = f["latencies_s"]
    codes = ", ".join(f"{k} {v}" for k, v in f["codes"].items())
    after = f["after_close"]
    before = f["before_close"]
    rows = [
        ["sessions with `sleep 30` in flight", f"{f['sessions']}"],
        ["`sleep 30` processes seen before the kill", str(f["sleeps_running_before_kill"])],
        ["calls returned after kill -9 of the host", f"{len(lat)} ({codes}); hung {f['hung']}"],
        [
            "time to result p50 / max",
            f"{ms(statistics.median(lat))} / {ms(max(lat))} ms" if lat else "-",
        ],
        ["`executed` in the results", ", ".join(f["executed"])],
        [
            "left before `pool.close()`: processes / dirs",
            f"{len(before['processes'])} / {len(before['dirs'])}",
        ],
        [
            "left after `pool.close()`: processes / dirs",
            f"{len(after['processes'])} / {len(after['dirs'])}",
        ],
    ]
    text = table(["fault: kill -9 of a host", ""], rows)
    for p in after["processes"] + after["dirs"]:
        text += f"\n  left: {p}"
    ok = (
        f["codes"].get("SESSION_LOST", 0) == f["sessions"]
        and not f["hung"]
        and not after["processes"]
        and not after["dirs"]
    )
    summary = [
        [
            f"kill -9 of a host, {f['sessions']} calls in flight",
            f"all SESSION_LOST in max {ms(max(lat))} ms (p50 {ms(statistics.median(lat))})"
            if lat and f["codes"].get("SESSION_LOST", 0) == f["sessions"]
            else f"{codes}; hung {f['hung']}",
            f"left after close: {len(after['processes'])} processes, {len(after['dirs'])} dirs"
            + (" (goal met)" if ok else " (goal NOT met)"),
        ]
    ]
    return text, summary


# -- main -------------------------------------------------------------------------------------


async def run_all(opts: argparse.Namespace, base: Path) -> dict[str, Any]:
    pools: list[Any] = []
    found: dict[str, Any] = {}
    try:
        if "overhead" in opts.only:
            print("\n## 1. Overhead per call (one session per path, sequential)", flush=True)
            found["overhead"] = await overhead(opts, base, pools)
            text, _, _ = report_overhead(found["overhead"])
            print(text, flush=True)
        if "throughput" in opts.only:
            print("\n## 2. Throughput (N sessions at once)", flush=True)
            runs: list[dict[str, Any]] = []
            for n in opts.sizes:
                calls = opts.calls if n < 4096 else min(opts.calls, opts.big_calls)
                for path in opts.paths:
                    if path == "serve --http" and n > opts.http_max:
                        why = (
                            f"over --http-max {opts.http_max}: one MCP session and one HTTP "
                            f"connection per session, {n} connections to {CPUS} replicas on "
                            f"{CPUS} CPUs; a trial run at 4096 on a 2-vCPU VM lost 1,544 of "
                            "20,480 calls to httpx ReadError (the server closed connections "
                            "while the overloaded client was late), so its numbers would not "
                            "compare; --http-max 4096 runs it"
                        )
                        runs.append({"path": path, "sessions": n, "skipped": why})
                        print(f"  {n} sessions, {path}: skipped ({why})", flush=True)
                        continue
                    print(f"  {n} sessions x {calls} calls, {path} ...", flush=True)
                    r = await throughput_one(path, n, calls, base, pools)
                    runs.append(r)
                    print(
                        f"    {r['wall_s']:.1f} s, {r['calls_per_s']:.0f} calls/s, "
                        f"{r['calls_per_cpu_s']:.0f} calls/CPU s, {r['errors']} errors "
                        f"(open {r['open_s']:.1f} s, load {r['load']:.2f})",
                        flush=True,
                    )
                    for e in r["error_samples"]:
                        print(f"      error: {e}", flush=True)
            found["throughput"] = runs
            text, notes = report_throughput(runs)
            print(text)
            for note in notes:
                print(f"- {note}")
        if "churn" in opts.only:
            print("\n## 3. Session churn (DirWorkspace, one host)", flush=True)
            found["churn"] = await churn(opts, base, pools)
            print(report_churn(found["churn"])[0], flush=True)
        if "faults" in opts.only:
            print("\n## 4. Fault recovery (kill -9 of a host)", flush=True)
            found["faults"] = await faults(opts, base, pools)
            print(report_faults(found["faults"])[0], flush=True)
    finally:
        for pool in pools:
            with contextlib.suppress(Exception):
                await pool.close()
    found["pool_ids"] = [p.id for p in pools]
    return found


def summary(opts: argparse.Namespace, found: dict[str, Any], head: str) -> str:
    parts = [head]
    if "overhead" in found:
        _, rows, met = report_overhead(found["overhead"])
        paths = found["overhead"]["paths"]
        header = ["per call, p50 / p99 ms", *paths]
        header += [f"{p} - in-proc p50" for p in paths[1:]] + ["goal ray <= +0.3 ms"]
        parts.append(
            f"**1. Overhead per call** ({opts.calls_seq} calls per path, shell "
            f"{opts.shell_calls}; goal handrail.ray <= +0.3 ms p50 met on {met} of {len(ROWS)} "
            "rows; serve: the session's files in `s0/` of the replica's root, one root per server)"
        )
        parts.append(table(header, rows))
        floors = found["overhead"]["floors"]
        parts.append(
            "Round trip alone (the host's `ping`, no session): "
            + ", ".join(
                f"{k} p50 {ms(statistics.median(v))} / p99 {ms(pct(v, 99))} ms"
                for k, v in floors.items()
            )
        )
    if "throughput" in found:
        text, notes = report_throughput(found["throughput"])
        parts.append(
            f"**2. Throughput** (60% read_file / 20% edit_file / 20% `{GREP.format(prefix='')}`; "
            f"handrail.ray: {CPUS} hosts x 1 CPU; serve: {CPUS} replicas, sessions in subdirs)"
        )
        parts.append(text + "\n\n" + "\n".join(f"- {n}" for n in notes))
        goal = [
            r
            for r in found["throughput"]
            if r["path"] == "handrail.ray" and r["sessions"] == 64 and not r.get("skipped")
        ]
        base = [r for r in found["throughput"] if r["path"] == "in-process" and r["sessions"] == 64]
        if goal and base:
            ratio = goal[0]["calls_per_cpu_s"] / base[0]["calls_per_cpu_s"]
            parts.append(
                f"Goal at 64 sessions, calls per CPU second >= 0.8x in-process: {ratio:.2f}x, "
                f"{'met' if ratio >= 0.8 else 'NOT met'}."
            )
    other: list[list[str]] = []
    if "churn" in found:
        other += report_churn(found["churn"])[1]
    if "faults" in found:
        other += report_faults(found["faults"])[1]
    if other:
        parts.append("**3-4. Churn, memory, faults**")
        parts.append(table(["what", "result", "detail"], other))
    return "\n\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help="64 sessions x 20 calls, fewer samples"
    )
    parser.add_argument("--sizes", default=None, help="sessions per throughput run (64,512,4096)")
    parser.add_argument("--calls", type=int, default=None, help="calls per session (50)")
    parser.add_argument(
        "--big-calls", type=int, default=5, help="calls per session at 4096 sessions and more"
    )
    parser.add_argument(
        "--paths",
        nargs="*",
        default=list(PATHS),
        choices=PATHS,
        help="throughput paths to run (default: all)",
    )
    parser.add_argument(
        "--http-max", type=int, default=512, help="largest size run against serve --http"
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=["overhead", "throughput", "churn", "faults"],
        choices=["overhead", "throughput", "churn", "faults"],
    )
    parser.add_argument("--out", default=str(OUT))
    opts = parser.parse_args()
    opts.sizes = [
        int(x) for x in (opts.sizes or ("64" if opts.quick else "64,512,4096")).split(",")
    ]
    opts.calls = opts.calls or (20 if opts.quick else 50)
    opts.calls_seq = 200 if opts.quick else 1000
    opts.shell_calls = 30 if opts.quick else 200
    opts.churn = 64 if opts.quick else 320
    opts.hold = 128 if opts.quick else 512
    opts.fault_sessions = 32

    # Read once, when Ray is imported: keeps the whole local cluster on 127.0.0.1.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import handrail
    import ray

    head = (
        f"handrail {handrail.__version__} | ray {ray.__version__} | Python "
        f"{platform.python_version()} | {platform.platform()} | cpu count {CPUS} | "
        f"load average {load()}"
    )
    print("# handrail.ray vs in-process vs serve --http\n\n" + head, flush=True)
    started = time.perf_counter()
    ray.init(
        num_cpus=CPUS,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )
    addresses = {node["NodeManagerAddress"] for node in ray.nodes()}
    if addresses != {"127.0.0.1"}:
        ray.shutdown()
        raise SystemExit(f"Ray left loopback ({addresses}): the benchmark stops here")
    base = Path(tempfile.mkdtemp(prefix="handrail-bench-ray-"))
    try:
        make_source(base / "source")
        (base / "state" / "xdg").mkdir(parents=True)
        found = asyncio.run(run_all(opts, base))
    finally:
        ray.shutdown()
        shutil.rmtree(base, ignore_errors=True)
    wall = time.perf_counter() - started
    tail = f"load average at the end {load()} | wall time {wall / 60:.1f} min"
    print("\n## Summary (for bench/README.md)\n")
    text = summary(opts, found, head + "\n" + tail)
    print(text)
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {"header": head, "tail": tail, "options": vars(opts), "results": found},
            default=str,
        )
    )
    print(f"\nraw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
