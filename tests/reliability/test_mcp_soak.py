"""MCP over HTTP under load: 200 concurrent clients x 100 calls of mixed tools on loopback.

Every call gets the answer its tool should give (0 errors), and once the clients have left
(each ends its MCP session with DELETE), the server's open files are back to what they were
after a warm-up and its memory has not grown with the calls. The clients speak plain JSON-RPC
over one keep-alive HTTP/1.1 connection each (h11 parses HTTP): the SDK's client, or httpx,
would cost as much CPU as the server on this machine, and the server is what is under test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h11
import pytest
from mcp_types.version import LATEST_HANDSHAKE_VERSION

CLIENTS = int(os.environ.get("SOAK_CLIENTS", 200))
CALLS = int(os.environ.get("SOAK_CALLS", 100))
WAIT = 600.0
"""Seconds the whole soak may take (a bound so nothing hangs, not a speed check)."""
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, str, Path]]:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    for i in range(20):
        (root / "src" / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    (root / "notes.txt").write_text("alpha\nbeta\n" * 20)
    env = {k: v for k, v in os.environ.items() if k != "HANDRAIL_SERVE_TOKEN"}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HANDRAIL_STATE_DIR": str(tmp_path / "st")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "handrail",
            "serve",
            "--http",
            "127.0.0.1:0",
            "--allow",
            "run_shell(true)",
        ],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            assert sel.select(timeout=60), "serve did not start"
            lines = [proc.stderr.readline(), proc.stderr.readline()]
        url = lines[0].split()[4]
        token = lines[1].split()[3]
        assert url.startswith("http://127.0.0.1:"), lines
        yield proc, url, token, root
    finally:
        proc.kill()
        proc.wait(timeout=60)
        if proc.stderr is not None:
            proc.stderr.close()


class HttpConnection:
    """One keep-alive HTTP/1.1 connection speaking JSON-RPC POSTs (h11 does the HTTP)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, authority: str
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.authority = authority
        self.conn = h11.Connection(our_role=h11.CLIENT)

    @classmethod
    async def open(cls, url: str) -> HttpConnection:
        authority = url.split("//", 1)[1].split("/", 1)[0]
        host, port = authority.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer, authority)

    async def send(
        self, method: str, path: str, headers: dict[str, str], body: bytes = b""
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of one request on the connection."""
        head = [("host", self.authority), ("content-length", str(len(body))), *headers.items()]
        out = self.conn.send(h11.Request(method=method, target=path, headers=head))
        out += self.conn.send(h11.Data(data=body)) if body else b""
        out += self.conn.send(h11.EndOfMessage())
        self.writer.write(out)
        await self.writer.drain()
        status, got, chunks = 0, {}, []
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                data = await self.reader.read(65536)
                self.conn.receive_data(data)
                if not data and self.conn.their_state is not h11.DONE:
                    raise ConnectionError("the server closed the connection")
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                got = {k.decode().lower(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
        self.conn.start_next_cycle()
        return status, got, b"".join(chunks)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


def reply_of(kind: str, body: bytes, want: int) -> dict[str, Any]:
    """The JSON-RPC reply with id `want` from a JSON or an SSE answer."""
    if kind.startswith("application/json"):
        return json.loads(body)
    for line in body.decode().splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == want:
                return message
    raise AssertionError(f"no reply {want}: {body[:200]!r}")


def plan(client: int, calls: int) -> list[tuple[str, dict[str, Any], str]]:
    """The mixed calls of one client: (tool, arguments, what the answer must be)."""
    mine = f"out/c{client}.txt"
    steps: list[tuple[str, dict[str, Any], str]] = [
        ("write_file", {"file_path": mine, "content": "v0\n"}, "ok")
    ]
    cycle: list[tuple[str, dict[str, Any], str]] = [
        ("read_file", {"file_path": f"src/m{client % 20}.py"}, "ok"),
        ("read_file", {"file_path": mine}, "ok"),
        ("edit_file", {"file_path": mine, "old_string": "v", "new_string": "v"}, "INVALID_ARGS"),
        ("read_file", {"file_path": 7}, "INVALID_ARGS"),
        ("read_file", {"file_path": "missing.txt"}, "FILE_NOT_FOUND"),
        ("read_file", {"file_path": "../outside.txt"}, "OUTSIDE_READ_ROOTS"),
        ("todo_write", {"todos": []}, "ok"),
        ("read_file", {"file_path": "notes.txt", "limit": 3}, "ok"),
    ]
    # Listing and searching start ripgrep (about 8 ms of CPU each, against 0.6 ms for a read):
    # a few per client, as in an agent's session, not one call in four.
    rare: list[tuple[str, dict[str, Any], str]] = [
        ("list_files", {"path": "src"}, "ok"),
        ("grep_search", {"pattern": "return 1", "path": "src"}, "ok"),
    ]
    edits: list[tuple[str, dict[str, Any], str]] = [
        ("edit_file", {"file_path": mine, "old_string": "v0", "new_string": "v1"}, "ok"),
        ("edit_file", {"file_path": mine, "old_string": "v1", "new_string": "v0"}, "ok"),
    ]
    while len(steps) < calls - 1:
        at = len(steps) % 25
        if at == 12:
            steps.append(rare[len(steps) // 25 % 2])
        elif at in (20, 21):
            steps.append(edits[at - 20])
        else:
            steps.append(cycle[len(steps) % 8])
    steps.append(("run_shell", {"command": "true"}, "ok"))
    return steps


async def client(url: str, token: str, n: int, errors: list[str]) -> None:
    path = "/" + url.split("//", 1)[1].split("/", 1)[1]
    headers = {**HEADERS, "authorization": f"Bearer {token}"}
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"},
        },
    }
    conn = await HttpConnection.open(url)
    try:
        status, got, body = await conn.send("POST", path, headers, json.dumps(init).encode())
        assert status == 200, (status, body[:200])
        reply = reply_of(got.get("content-type", ""), body, 0)
        headers["mcp-protocol-version"] = reply["result"]["protocolVersion"]
        headers["mcp-session-id"] = got["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        status, _, _ = await conn.send("POST", path, headers, json.dumps(note).encode())
        assert status in (200, 202), status
        try:
            for i, (name, args, want) in enumerate(plan(n, CALLS), start=1):
                request = {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": args},
                }
                status, got, body = await conn.send(
                    "POST", path, headers, json.dumps(request).encode()
                )
                if status != 200:
                    errors.append(f"client {n} call {i} {name}: HTTP {status} {body[:200]!r}")
                    continue
                reply = reply_of(got.get("content-type", ""), body, i)
                outcome = (reply.get("result") or {}).get("_meta", {}).get("handrail/result", {})
                result = "ok" if outcome.get("ok") else outcome.get("error")
                if result != want:
                    errors.append(f"client {n} call {i} {name}: {json.dumps(reply)[:300]}")
        finally:
            await conn.send("DELETE", path, headers)
    finally:
        await conn.close()


async def crowd(url: str, token: str, ids: range) -> list[str]:
    errors: list[str] = []
    results = await asyncio.gather(
        *(client(url, token, n, errors) for n in ids), return_exceptions=True
    )
    errors.extend(f"client {n}: {r!r}" for n, r in zip(ids, results, strict=True) if r is not None)
    return errors


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / os.sysconf(
        "SC_CLK_TCK"
    )


def usage(pid: int) -> tuple[int, int]:
    """(resident memory in KiB, open file descriptors) of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


async def settled(pid: int) -> tuple[int, int]:
    """Usage once the open descriptors stop changing for a second (sessions, connections and
    processes close a moment after the clients leave)."""
    end = time.monotonic() + 30
    now = usage(pid)
    steady_since = time.monotonic()
    while time.monotonic() < end and time.monotonic() - steady_since < 1.0:
        await asyncio.sleep(0.1)
        later = usage(pid)
        if later[1] != now[1]:
            steady_since = time.monotonic()
        now = later
    return now


async def test_200_clients_x_100_mixed_calls_no_errors_no_leaks(
    served: tuple[subprocess.Popen[str], str, str, Path],
) -> None:
    proc, url, token, root = served
    (root.parent / "outside.txt").write_text("secret")
    async with asyncio.timeout(WAIT):
        # Warm-up: every code path once, so lazy imports and caches are in the baseline.
        assert await crowd(url, token, range(CLIENTS, CLIENTS + 20)) == []
        base_rss, base_fds = await settled(proc.pid)
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.monotonic()
        errors = await crowd(url, token, range(CLIENTS))
        wall, cpu = time.monotonic() - t0, cpu_seconds(proc.pid) - cpu0
        assert errors == [], errors[:5]
        rss, fds = await settled(proc.pid)
    # Shown with -s (the numbers the README quotes).
    print(
        f"soak: {CLIENTS * CALLS} calls in {wall:.1f} s ({CLIENTS * CALLS / wall:.0f}/s), "
        f"server CPU {cpu:.1f} s; RSS {base_rss // 1024} -> {rss // 1024} MiB, "
        f"open files {base_fds} -> {fds}"
    )
    assert fds == base_fds
    # Memory: 20,000 calls and 200 sessions later, the server holds no more than a little
    # allocator slack over its warm baseline (sessions, results and processes were let go).
    assert rss - base_rss < 40 * 1024, (base_rss, rss)
    # Every client wrote its own file, then changed nothing else: the workspace is whole.
    assert sorted(p.name for p in (root / "out").iterdir()) == sorted(
        f"c{n}.txt" for n in range(CLIENTS + 20)
    )
