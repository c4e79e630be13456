"""What the bearer token costs: `handrail serve --http` with auth against `--no-auth`, under load.

    python bench/http_auth.py            # 200 clients x 100 calls on each server, about 3-4 min
    python bench/http_auth.py --quick    # 50 clients x 20 calls, under a minute
    python bench/http_auth.py --rounds 2 # order no-auth, auth, auth, no-auth (evens out drift)

Two real `handrail serve --http 127.0.0.1:0` processes on the same generated tree of 100 small
files: one with the token (from `$HANDRAIL_SERVE_TOKEN`, so every request carries
`Authorization: Bearer ...` and passes the Host, Origin and token checks), one with `--no-auth`
(Host and Origin checks only). Both run the whole time; the load goes to one at a time.

Clients are raw JSON-RPC over httpx, not the SDK's `ClientSession`: 200 SDK sessions cost the
client side more CPU than the server on a 2-vCPU machine, and client and server share it. Each
client has its own httpx client (one keep-alive connection), opens its own MCP session
(initialize, notifications/initialized; not timed), then waits until every client is connected
and makes its calls one after the other: `tools/call read_file` on 100 different small files
(a session answers a second read of an unchanged file with a short note, so none repeats).
Every answer is checked; an error or a wrong answer counts, and the target is 0 errors.

Reported per server: calls, errors, p50 / p95 / p99 per call, calls per second; and the ratio
auth / no-auth. With 200 clients on 2 vCPUs, p50 is mostly queueing (clients / throughput), so
the ratio compares throughput more than one request's path; the last row times that path alone:
`HttpGuard` in process (Host, Origin and token checks plus the CORS layer) around an app that
does nothing, against the bare app.

Raw numbers go to `bench/out/http_auth.json`; the servers' stderr to a temp file. Everything is
bounded by timeouts; the servers are stopped by PID.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]  # bench/mcp.py would shadow the `mcp` SDK
OUT = HERE / "out" / "http_auth.json"
CALL_TIMEOUT = 120.0
START_TIMEOUT = 60.0
TOKEN = "bench-token-" + "x" * 32


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


def make_tree(root: Path, count: int) -> list[str]:
    names = []
    for i in range(count):
        name = f"f{i:03d}.txt"
        (root / name).write_text("".join(f"line {j} of file {i}\n" for j in range(20)))
        names.append(name)
    return names


# -- servers ------------------------------------------------------------------------------------


def start_server(
    tree: Path, state: Path, log: TextIO, auth: bool
) -> tuple[subprocess.Popen[str], str]:
    """`handrail serve --http 127.0.0.1:0` in `tree`; (process, url) once it says it listens."""
    env = {k: v for k, v in os.environ.items() if k != "HANDRAIL_SERVE_TOKEN"}
    env.update(
        PYTHONPATH=str(ROOT / "src"),
        HANDRAIL_STATE_DIR=str(state),
        XDG_CONFIG_HOME=str(state / "xdg"),
    )
    args = [sys.executable, "-m", "handrail", "serve", "--http", "127.0.0.1:0", "--no-settings"]
    if auth:
        env["HANDRAIL_SERVE_TOKEN"] = TOKEN
    else:
        args.append("--no-auth")
    proc = subprocess.Popen(
        args,
        cwd=tree,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group: stopped as a whole, by PID
    )
    assert proc.stderr is not None
    url = None
    deadline = time.monotonic() + START_TIMEOUT
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            if sel.select(timeout=0.2):
                line = proc.stderr.readline()
                log.write(line)
                if line.startswith("handrail: serving MCP on "):
                    url = line.split()[4]
    if url is None:
        stop_server(proc)
        raise RuntimeError(f"the server did not start within {START_TIMEOUT} s (see {log.name})")
    return proc, url


def stop_server(proc: subprocess.Popen[str]) -> None:
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
    if proc.stderr is not None:
        proc.stderr.close()


# -- load ---------------------------------------------------------------------------------------


class Stats:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.connected = 0


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


async def client(
    url: str, auth: bool, files: list[str], c: int, calls: int, go: asyncio.Event, stats: Stats
) -> None:
    import httpx
    from mcp_types.version import LATEST_HANDSHAKE_VERSION

    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if auth:
        headers["authorization"] = f"Bearer {TOKEN}"
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench-http-auth", "version": "1"},
        },
    }
    try:
        async with httpx.AsyncClient(timeout=CALL_TIMEOUT) as http:
            r = await http.post(url, json=init, headers=headers)
            r.raise_for_status()
            headers["mcp-protocol-version"] = reply_of(r, 0)["result"]["protocolVersion"]
            headers["mcp-session-id"] = r.headers["mcp-session-id"]
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
                    result = reply_of(r, i + 1).get("result") or {}
                    content = "".join(b.get("text", "") for b in result.get("content", []))
                    if result.get("isError") or f"of file {int(path[1:4])}" not in content:
                        stats.errors.append(f"client {c} call {i}: {content[:200]}")
                except Exception as exc:
                    stats.errors.append(f"client {c} call {i}: {exc!r}")
                stats.latencies.append(time.perf_counter() - t0)
            with contextlib.suppress(Exception):
                await http.delete(url, headers=headers)
    except Exception as exc:
        stats.errors.append(f"client {c}: {exc!r}")


async def load(
    url: str, auth: bool, files: list[str], opts: argparse.Namespace
) -> tuple[Stats, float]:
    """All clients connect, then all call at once; (stats, call-phase seconds)."""
    stats = Stats()
    go = asyncio.Event()
    tasks = [
        asyncio.ensure_future(client(url, auth, files, c, opts.calls, go, stats))
        for c in range(opts.clients)
    ]
    deadline = time.monotonic() + 120
    while stats.connected + len(stats.errors) < opts.clients and time.monotonic() < deadline:
        if all(t.done() for t in tasks):
            break
        await asyncio.sleep(0.01)
    t0 = time.perf_counter()
    go.set()
    _, pending = await asyncio.wait(tasks, timeout=opts.timeout)
    elapsed = time.perf_counter() - t0
    if pending:
        stats.errors.append(f"{len(pending)} clients still running after {opts.timeout} s")
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=30)
    return stats, elapsed


# -- the guard alone ----------------------------------------------------------------------------


async def guard_cost(n: int) -> tuple[float, float]:
    """Seconds per request: (HttpGuard around a no-op app, the no-op app alone)."""
    from handrail.mcp._http_access import access_rules, http_security
    from handrail.mcp._http_guard import HttpGuard

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": []})

    security = http_security(
        "127.0.0.1", auth=True, token=TOKEN, token_file=False, allow_hosts=(), allow_origins=()
    )
    guard = HttpGuard(app, rules=access_rules("127.0.0.1", 8765, security), token=TOKEN)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "server": ("127.0.0.1", 8765),
        "headers": [
            (b"host", b"127.0.0.1:8765"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"mcp-session-id", b"0123456789abcdef0123456789abcdef"),
        ],
    }
    sent: list[Any] = []

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    best: dict[str, float] = {}
    for _ in range(5):  # best of 5 blocks: the cost, not the machine's noise
        for label, target in (("guard", guard), ("bare", app)):
            sent.clear()
            t0 = time.perf_counter()
            for _ in range(n):
                await target(scope, receive, send)
            per = (time.perf_counter() - t0) / n
            best[label] = min(best.get(label, per), per)
            assert sent and sent[0]["status"] == 204, sent[:1]
    return best["guard"], best["bare"]


# -- main ---------------------------------------------------------------------------------------


async def run(opts: argparse.Namespace, urls: dict[str, str], files: list[str]) -> dict[str, Any]:
    """The load runs in `order`, then the guard alone; what `report` prints."""
    order = ["no-auth", "auth"] + (["auth", "no-auth"] if opts.rounds == 2 else [])
    samples: dict[str, Stats] = {"no-auth": Stats(), "auth": Stats()}
    seconds = {"no-auth": 0.0, "auth": 0.0}
    for kind in order:
        print(f"  {kind}: {opts.clients} clients x {opts.calls} calls ...", flush=True)
        stats, elapsed = await load(urls[kind], kind == "auth", files, opts)
        samples[kind].latencies += stats.latencies
        samples[kind].errors += stats.errors
        seconds[kind] += elapsed
        for err in stats.errors[:5]:
            print(f"    error: {err}", flush=True)
    print("  the guard alone, in process ...", flush=True)
    guarded, bare = await guard_cost(20_000 if opts.quick else 200_000)
    return {
        "order": order,
        "samples": samples,
        "seconds": seconds,
        "guard_s": guarded,
        "bare_s": bare,
    }


def serve_and_run(opts: argparse.Namespace) -> dict[str, Any]:
    """Both servers on one generated tree, the load, then both stopped by PID."""
    with tempfile.TemporaryDirectory(prefix="handrail-bench-auth-") as tmp:
        base = Path(tmp)
        tree = base / "tree"
        tree.mkdir()
        (base / "state" / "xdg").mkdir(parents=True)
        files = make_tree(tree, 100)
        log_path = Path(tempfile.gettempdir()) / "handrail-bench-http-auth.log"
        procs: list[subprocess.Popen[str]] = []
        with open(log_path, "w") as log:
            try:
                urls: dict[str, str] = {}
                for kind in ("no-auth", "auth"):
                    proc, urls[kind] = start_server(tree, base / "state", log, kind == "auth")
                    procs.append(proc)
                found = asyncio.run(run(opts, urls, files))
                for proc in procs:
                    if proc.poll() is not None:
                        raise RuntimeError(f"a server exited with {proc.returncode} ({log_path})")
            finally:
                for proc in procs:
                    stop_server(proc)
    return found


def report(opts: argparse.Namespace, found: dict[str, Any]) -> str:
    from importlib.metadata import version

    import handrail

    samples: dict[str, Stats] = found["samples"]
    rows: list[list[str]] = []
    for kind in ("no-auth", "auth"):
        lat = samples[kind].latencies
        rows.append(
            [
                "`serve --http` with the token" if kind == "auth" else "`serve --http --no-auth`",
                str(len(lat)),
                str(len(samples[kind].errors)),
                fmt_ms(statistics.median(lat)) if lat else "-",
                fmt_ms(pct(lat, 95)) if lat else "-",
                fmt_ms(pct(lat, 99)) if lat else "-",
                f"{len(lat) / found['seconds'][kind]:.0f}" if lat else "-",
            ]
        )
    auth, bare = samples["auth"].latencies, samples["no-auth"].latencies
    if auth and bare:
        rows.append(
            [
                "ratio auth / no-auth",
                "",
                "",
                f"{statistics.median(auth) / statistics.median(bare):.2f}x",
                f"{pct(auth, 95) / pct(bare, 95):.2f}x",
                f"{pct(auth, 99) / pct(bare, 99):.2f}x",
                "",
            ]
        )
    head = (
        f"handrail {handrail.__version__} | mcp SDK {version('mcp')} | uvicorn "
        f"{version('uvicorn')} | Python {platform.python_version()} | {platform.platform()} | "
        f"nproc {os.cpu_count()} | load {os.getloadavg()[0]:.2f}"
    )
    guard_us, bare_us = found["guard_s"] * 1e6, found["bare_s"] * 1e6
    return "\n\n".join(
        [
            head,
            f"**Streamable HTTP, {opts.clients} concurrent clients x {opts.calls} `read_file` "
            f"calls per run, raw JSON-RPC over httpx** (order: {', '.join(found['order'])}; "
            "0 errors required)",
            table(
                ["server", "calls", "errors", "p50 ms", "p95 ms", "p99 ms", "calls/s"],
                rows,
            ),
            table(
                ["in process, per request", "µs"],
                [
                    ["HttpGuard (Host, Origin, token, CORS) + no-op app", f"{guard_us:.2f}"],
                    ["no-op app alone", f"{bare_us:.2f}"],
                    ["the guard's own cost", f"{guard_us - bare_us:.2f}"],
                ],
            ),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 clients x 20 calls")
    parser.add_argument("--clients", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--rounds", type=int, choices=(1, 2), default=1)
    parser.add_argument("--timeout", type=float, default=600.0, help="call phase bound, s")
    opts = parser.parse_args()
    opts.clients = opts.clients or (50 if opts.quick else 200)
    opts.calls = opts.calls or (20 if opts.quick else 100)
    found = serve_and_run(opts)
    text = report(opts, found)
    print("\n" + text)
    OUT.parent.mkdir(exist_ok=True)
    samples: dict[str, Stats] = found["samples"]
    OUT.write_text(
        json.dumps(
            {
                "clients": opts.clients,
                "calls": opts.calls,
                "order": found["order"],
                "runs": {
                    kind: {
                        "latencies_s": s.latencies,
                        "errors": s.errors[:50],
                        "error_count": len(s.errors),
                        "call_phase_s": found["seconds"][kind],
                    }
                    for kind, s in samples.items()
                },
                "guard_s": found["guard_s"],
                "bare_s": found["bare_s"],
            }
        )
    )
    errors = sum(len(s.errors) for s in samples.values())
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
