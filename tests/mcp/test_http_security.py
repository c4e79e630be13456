"""`handrail serve --http` as an attacker sees it: token, Host, Origin, approvals, mode ceiling.

Real server processes on loopback addresses (127.0.0.1, 127.0.0.2; never another address),
real HTTP with httpx and the official SDK client. Each attack plants a canary (a file a call
that got through would create) and checks it is absent, not only that an error came back;
a positive control shows the same request does create it when it carries the token.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
import uvicorn
from inline_snapshot import snapshot
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from handrail import Interrupted, PermissionMode, Registry, Runtime, Session
from handrail.builtin import coding_tools
from handrail.mcp import McpTools
from handrail.mcp._http_access import access_rules, http_security
from handrail.mcp._http_guard import MESSAGES, HttpGuard
from handrail.mcp._mode_ceiling import ModeCeilingPolicy
from mcp import Client

WAIT = 30.0
"""Seconds any single wait in these tests may take (a bound, never a speed threshold)."""
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


# -- a server process ---------------------------------------------------------------------------


@dataclass
class Served:
    """One `handrail serve --http` process and what it printed."""

    proc: subprocess.Popen[bytes]
    log: Path
    url: str = ""
    port: int = 0
    token: str = ""
    lines: list[str] = field(default_factory=list[str])

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")


def wait_for(check: Callable[[], Any], what: str, seconds: float = WAIT) -> Any:
    """Poll `check` until truthy; bounded in count (and so in time)."""
    for _ in range(int(seconds / 0.05)):
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what}: still not there after {seconds} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM by PID, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def env_for(ws: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "HANDRAIL_SERVE_TOKEN"}
    env.pop("XDG_RUNTIME_DIR", None)
    return {
        **env,
        "XDG_CONFIG_HOME": str(ws.parent / "xdg"),
        "HANDRAIL_STATE_DIR": str(ws.parent / "state"),
        **extra,
    }


@contextlib.contextmanager
def serving(
    ws: Path, *args: str, bind: str = "127.0.0.1", lines: int = 2, **env: str
) -> Iterator[Served]:
    """`handrail serve --http BIND:0 ARGS` in `ws`, once its `lines` ready lines are out.

    Stopped by its PID (SIGTERM, then SIGKILL) at the end.
    """
    log = ws.parent / f"serve-{uuid.uuid4().hex[:8]}.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "handrail", "serve", "--http", f"{bind}:0", *args],
            cwd=ws,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env_for(ws, **env),
        )
    served = Served(proc=proc, log=log)
    try:

        def ready() -> list[str]:
            text = log.read_text()
            if proc.poll() is not None:
                raise AssertionError(f"the server exited with {proc.returncode}: {text}")
            return text.splitlines() if text.count("\n") >= lines else []

        served.lines = wait_for(ready, "the server's ready lines")
        assert served.lines[0].startswith("handrail: serving MCP on http://"), served.lines
        served.url = served.lines[0].split()[4]
        served.port = int(served.url.rsplit(":", 1)[1].removesuffix("/mcp"))
        for line in served.lines:
            if line.startswith("handrail: bearer token "):
                served.token = line.split()[3]
        yield served
    finally:
        stop(proc)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n")
    (tmp_path / "xdg").mkdir()  # an empty user config: nothing from this machine leaks in
    return root


@pytest.fixture(scope="module")
def shared_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("shared")
    root = base / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n")
    (base / "xdg").mkdir()
    return root


@pytest.fixture(scope="module")
def server(shared_ws: Path) -> Iterator[Served]:
    """The default server for the module: 127.0.0.1, generated token, accept_edits."""
    with serving(shared_ws) as served:
        yield served


# -- raw HTTP, as an attacker would send it -----------------------------------------------------


def initialize(request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


def write_call(name: str) -> dict[str, Any]:
    """A tools/call that creates `name` in the root (accept_edits runs it without asking)."""
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"file_path": name, "content": "pwned"}},
    }


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def raw_session(http: httpx.AsyncClient, url: str, token: str) -> dict[str, str]:
    """Open an MCP session with plain POSTs; the headers its later requests need."""
    r = await http.post(url, json=initialize(), headers={**ACCEPT, **bearer(token)})
    assert r.status_code == 200, r.text
    headers = {
        **ACCEPT,
        **bearer(token),
        "mcp-session-id": r.headers["mcp-session-id"],
        "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=note, headers=headers)).status_code == 202
    return headers


def refusal(r: httpx.Response) -> str:
    body = r.json()
    assert body["id"] is None
    return body["error"]["message"]


@contextlib.asynccontextmanager
async def sdk_client(url: str, token: str | None, **options: Any) -> AsyncIterator[Client]:
    """The official SDK client, sending the bearer token on every request."""
    headers = bearer(token) if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with Client(
            streamable_http_client(url, http_client=http), read_timeout_seconds=WAIT, **options
        ) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


# -- the token ----------------------------------------------------------------------------------


async def test_the_token_is_printed_once_and_published_privately(server: Served) -> None:
    path = server.log.parent / "state" / "serve"
    token_file = path / f"{server.port}.token"
    assert [line for line in server.lines if server.token in line] == [server.lines[1]]
    assert (
        server.lines[1]
        == f"handrail: bearer token {server.token} (also in {token_file} until the server stops)"
    )
    assert len(server.token) >= 40
    assert token_file.read_text() == server.token + "\n"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert [p.name for p in path.iterdir()] == [token_file.name]  # no temporary file left


async def test_no_token_is_401_and_nothing_runs(server: Served, shared_ws: Path) -> None:
    canary = shared_ws / "canary-no-token.txt"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        # A real client's session, whose id the attacker somehow learned.
        victim = await raw_session(http, server.url, server.token)
        stolen = {k: v for k, v in victim.items() if k != "authorization"}
        r = await http.post(server.url, json=write_call(canary.name), headers=stolen)
        opening = await http.post(server.url, json=initialize(), headers=ACCEPT)
        listing = await http.get(server.url, headers=stolen)
        # Positive control: the same request with the token does create the canary.
        control = await http.post(server.url, json=write_call("control-1.txt"), headers=victim)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == 'Bearer realm="handrail"'
    assert refusal(r) == MESSAGES["no_token"]
    assert opening.status_code == 401
    assert listing.status_code == 401
    assert not canary.exists()
    assert control.status_code == 200
    assert (shared_ws / "control-1.txt").read_text() == "pwned"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer wrong-token-0123456789abcdef",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Token {token}",
        "{token}",
    ],
)
async def test_a_wrong_token_is_401_and_nothing_runs(
    server: Served, shared_ws: Path, authorization: str
) -> None:
    canary = shared_ws / f"canary-wrong-{uuid.uuid4().hex[:8]}.txt"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        victim = await raw_session(http, server.url, server.token)
        headers = {**victim, "authorization": authorization.format(token=server.token)}
        r = await http.post(server.url, json=write_call(canary.name), headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer realm=")
    assert not canary.exists()


async def test_a_token_prefix_or_a_second_header_does_not_pass(
    server: Served, shared_ws: Path
) -> None:
    canary = shared_ws / "canary-prefix.txt"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        victim = await raw_session(http, server.url, server.token)
        short = {**victim, "authorization": f"Bearer {server.token[:-1]}"}
        r1 = await http.post(server.url, json=write_call(canary.name), headers=short)
        # Two Authorization headers, one right: ambiguous, refused.
        twice = [(k, v) for k, v in victim.items()] + [("authorization", "Bearer nope")]
        r2 = await http.post(server.url, json=write_call(canary.name), headers=twice)
    assert (r1.status_code, r2.status_code) == (401, 401)
    assert refusal(r1) == MESSAGES["bad_token"]
    assert r1.headers["www-authenticate"] == 'Bearer realm="handrail", error="invalid_token"'
    assert not canary.exists()


@pytest.mark.parametrize("param", ["token", "access_token", "authorization"])
async def test_a_token_in_the_query_string_is_not_accepted(
    server: Served, shared_ws: Path, param: str
) -> None:
    canary = shared_ws / f"canary-query-{param}.txt"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        victim = await raw_session(http, server.url, server.token)
        headers = {k: v for k, v in victim.items() if k != "authorization"}
        value = server.token if param != "authorization" else f"Bearer {server.token}"
        r = await http.post(
            server.url, params={param: value}, json=write_call(canary.name), headers=headers
        )
    assert r.status_code == 401
    assert not canary.exists()


def test_refusal_texts() -> None:
    assert MESSAGES == snapshot(
        {
            "no_token": "Unauthorized: this handrail server needs the header `Authorization: Bearer <token>`. `handrail serve` prints the token when it starts and keeps it in its token file while it runs; a token in the URL is not accepted.",
            "bad_token": "Unauthorized: the bearer token is not this server's. Use the token `handrail serve` printed when it started (also in its token file while it runs).",
            "bad_host": "Misdirected request: this server does not answer to the host name {host}. Connect with the address it listens on, or ask its operator to allow the name (handrail serve --allow-host NAME).",
            "bad_origin": "Forbidden: requests from the web origin {origin} are not allowed. Its operator can allow a trusted origin with handrail serve --allow-origin URL.",
        }
    )


# -- Host and Origin ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1.evil.example", "https://127.0.0.1"]
)
async def test_a_forged_origin_is_403_even_with_the_token(
    server: Served, shared_ws: Path, origin: str
) -> None:
    canary = shared_ws / f"canary-origin-{uuid.uuid4().hex[:8]}.txt"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        victim = await raw_session(http, server.url, server.token)
        r = await http.post(
            server.url, json=write_call(canary.name), headers={**victim, "origin": origin}
        )
    assert r.status_code == 403
    assert refusal(r) == MESSAGES["bad_origin"].format(origin=f'"{origin}"')
    assert not canary.exists()


async def test_the_servers_own_origins_pass(server: Served, shared_ws: Path) -> None:
    async with httpx.AsyncClient(timeout=WAIT) as http:
        victim = await raw_session(http, server.url, server.token)
        for i, origin in enumerate(
            [f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"]
        ):
            name = f"own-origin-{i}.txt"
            r = await http.post(
                server.url, json=write_call(name), headers={**victim, "origin": origin}
            )
            assert r.status_code == 200, r.text
            assert (shared_ws / name).exists()


@pytest.mark.parametrize("host", ["attacker.example:{port}", "attacker.example", "127.0.0.1:1"])
async def test_a_rebinding_host_is_421_even_with_the_token(
    server: Served, shared_ws: Path, host: str
) -> None:
    canary = shared_ws / f"canary-host-{uuid.uuid4().hex[:8]}.txt"
    async with httpx.AsyncClient(timeout=WAIT) as http:
        victim = await raw_session(http, server.url, server.token)
        headers = {**victim, "host": host.format(port=server.port)}
        r = await http.post(server.url, json=write_call(canary.name), headers=headers)
        fresh = await http.post(server.url, json=initialize(), headers=headers)
    assert r.status_code == 421
    assert refusal(r) == MESSAGES["bad_host"].format(host=f'"{host.format(port=server.port)}"')
    assert fresh.status_code == 421
    assert not canary.exists()


async def test_a_specific_loopback_address_accepts_its_own_host_only(ws: Path) -> None:
    canary = ws / "canary-127-0-0-2.txt"
    with serving(ws, bind="127.0.0.2") as served:
        assert served.url.startswith("http://127.0.0.2:")
        async with httpx.AsyncClient(timeout=WAIT) as http:
            victim = await raw_session(http, served.url, served.token)
            for host in ("attacker.example", "localhost", "127.0.0.1"):
                headers = {**victim, "host": f"{host}:{served.port}"}
                r = await http.post(served.url, json=write_call(canary.name), headers=headers)
                assert r.status_code == 421, host
            own = await http.post(served.url, json=write_call("own.txt"), headers=victim)
    assert not canary.exists()
    assert own.status_code == 200
    assert (ws / "own.txt").exists()


async def test_allowed_host_and_origin_for_a_reverse_proxy(ws: Path) -> None:
    args = ("--allow-host", "mcp.example.com", "--allow-origin", "https://app.example.com")
    with serving(ws, *args) as served:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            victim = await raw_session(http, served.url, served.token)
            proxied = {**victim, "host": "mcp.example.com", "origin": "https://app.example.com"}
            r = await http.post(served.url, json=write_call("proxied.txt"), headers=proxied)
            # A browser at the allowed origin asks first (no credentials in a preflight).
            preflight = await http.options(
                served.url,
                headers={
                    "origin": "https://app.example.com",
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "authorization, content-type",
                },
            )
            other = await http.options(
                served.url,
                headers={
                    "origin": "https://evil.example",
                    "access-control-request-method": "POST",
                },
            )
            without = {k: v for k, v in proxied.items() if k != "authorization"}
            unauthorized = await http.post(
                served.url, json=write_call("canary-proxy.txt"), headers=without
            )
    assert r.status_code == 200, r.text
    assert (ws / "proxied.txt").exists()
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    assert other.status_code == 403
    assert unauthorized.status_code == 401
    assert unauthorized.headers["access-control-allow-origin"] == "https://app.example.com"
    assert not (ws / "canary-proxy.txt").exists()


# -- the guard alone, for a wildcard bind (without binding one) ---------------------------------


@contextlib.asynccontextmanager
async def guard_on(address: str, bind: str) -> AsyncIterator[tuple[str, int, list[str]]]:
    """`HttpGuard` with the rules of a `bind` server, listening on loopback `address`.

    The app behind it records every request that reaches it: the canary.
    """
    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(dict(scope["headers"])[b"host"].decode())
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sock = socket.socket()
    sock.bind((address, 0))
    port = sock.getsockname()[1]
    security = http_security(
        bind, auth=True, token="t" * 32, token_file=False, allow_hosts=(), allow_origins=()
    )
    guard = HttpGuard(app, rules=access_rules(bind, port, security), token="t" * 32)
    server = uvicorn.Server(uvicorn.Config(guard, log_level="error", lifespan="off"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        for _ in range(int(WAIT / 0.02)):
            if server.started:
                break
            await anyio.sleep(0.02)
        assert server.started
        try:
            yield f"http://{address}:{port}/mcp", port, reached
        finally:
            server.should_exit = True
    sock.close()


async def test_a_wildcard_bind_accepts_loopback_names_and_the_arrival_address() -> None:
    async with guard_on("127.0.0.2", "0.0.0.0") as (url, port, reached):
        async with httpx.AsyncClient(timeout=WAIT, headers=bearer("t" * 32)) as http:
            statuses = {
                host: (await http.get(url, headers={"host": host})).status_code
                for host in (
                    f"127.0.0.2:{port}",  # where this connection arrived: the machine's own
                    f"localhost:{port}",
                    f"127.0.0.1:{port}",
                    f"attacker.example:{port}",
                    f"10.11.12.13:{port}",  # an address, but not where the request came
                    f"127.0.0.2:{port + 1}",
                )
            }
            origin = await http.get(url, headers={"origin": f"http://127.0.0.2:{port}"})
            evil = await http.get(url, headers={"origin": "http://attacker.example"})
    assert statuses == {
        f"127.0.0.2:{port}": 204,
        f"localhost:{port}": 204,
        f"127.0.0.1:{port}": 204,
        f"attacker.example:{port}": 421,
        f"10.11.12.13:{port}": 421,
        f"127.0.0.2:{port + 1}": 421,
    }
    assert (origin.status_code, evil.status_code) == (204, 403)
    assert sorted(reached) == sorted(
        [f"127.0.0.2:{port}", f"localhost:{port}", f"127.0.0.1:{port}", f"127.0.0.2:{port}"]
    )


async def test_the_guard_refuses_before_the_app_sees_anything() -> None:
    async with guard_on("127.0.0.1", "127.0.0.1") as (url, port, reached):
        async with httpx.AsyncClient(timeout=WAIT) as http:
            no_token = await http.post(url, content=b"{}")
            wrong = await http.post(url, content=b"{}", headers=bearer("u" * 32))
            host = await http.post(url, headers={**bearer("t" * 32), "host": "x.example"})
            ok = await http.post(url, headers={**bearer("t" * 32), "host": f"[::1]:{port}"})
    assert (no_token.status_code, wrong.status_code, host.status_code) == (401, 401, 421)
    assert ok.status_code == 204
    assert reached == [f"[::1]:{port}"]


# -- refusing to start --------------------------------------------------------------------------


def run_cli(ws: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "serve", *args],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
        env=env_for(ws, **env),
    )


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "[::]:8765", "192.0.2.10:8765"])
def test_no_auth_on_a_non_loopback_address_refuses_to_start(ws: Path, address: str) -> None:
    done = run_cli(ws, "--http", address, "--no-auth")
    host = address.rsplit(":", 1)[0].strip("[]")
    assert done.returncode == 2
    assert done.stderr == (
        f"handrail: error: --no-auth is allowed on a loopback address only (127.0.0.1, ::1, "
        f"localhost), not {host}: anyone who can reach it could run the tools; serve with a "
        "token\n"
    )
    assert not (ws.parent / "state").exists()


async def test_no_auth_on_loopback_warns_and_needs_no_token(ws: Path) -> None:
    with serving(ws, "--no-auth") as served:
        assert served.lines[1] == (
            "handrail: warning: --no-auth: any program or user on this machine can call the "
            "tools and answer their approvals"
        )
        assert not served.token
        assert not (ws.parent / "state" / "serve").exists()
        async with httpx.AsyncClient(timeout=WAIT) as http:
            r = await http.post(served.url, json=initialize(), headers=ACCEPT)
            # Host and Origin are still checked.
            host = await http.post(
                served.url, json=initialize(), headers={**ACCEPT, "host": "attacker.example"}
            )
            origin = await http.post(
                served.url, json=initialize(), headers={**ACCEPT, "origin": "http://evil.example"}
            )
    assert r.status_code == 200
    assert (host.status_code, origin.status_code) == (421, 403)


def test_a_busy_port_is_one_line(ws: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_cli(ws, "--http", f"127.0.0.1:{port}")
    assert done.returncode == 2
    assert done.stderr == (
        f"handrail: error: cannot listen on 127.0.0.1:{port}: the port is in use\n"
    )
    assert not list((ws.parent / "state" / "serve").glob("*.token"))


def test_an_address_this_machine_lacks_is_one_line(ws: Path) -> None:
    # 192.0.2.0/24 is reserved for documentation (RFC 5737): the bind fails, nothing listens.
    done = run_cli(ws, "--http", "192.0.2.10:8765", HANDRAIL_SERVE_TOKEN="x" * 32)
    assert done.returncode == 2
    assert done.stderr == (
        "handrail: error: cannot listen on 192.0.2.10:8765: this machine has no address "
        "192.0.2.10\n"
    )


@pytest.mark.parametrize(
    ("mode", "content", "message"),
    [
        (0o644, "s" * 32, "readable or writable by others (mode 0644); run chmod 600 {path}"),
        (0o620, "s" * 32, "readable or writable by others (mode 0620); run chmod 600 {path}"),
        (0o600, "\n", "empty; it must hold the token"),
        (
            0o600,
            "short\n",
            "5 characters; use at least 16, e.g. "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`",
        ),
    ],
)
def test_a_bad_token_file_is_refused(ws: Path, mode: int, content: str, message: str) -> None:
    path = ws.parent / "token"
    path.write_text(content)
    path.chmod(mode)
    done = run_cli(ws, "--http", "127.0.0.1:0", "--token-file", str(path))
    assert done.returncode == 2
    assert done.stderr == f"handrail: error: --token-file {path}: {message.format(path=path)}\n"
    assert not (ws.parent / "state").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--no-auth",), "--no-auth applies to --http only"),
        (("--allow-host", "x.example"), "--allow-host applies to --http only"),
        (
            ("--http", "127.0.0.1:0", "--no-auth", "--token-file", "t"),
            "--no-auth and --token-file contradict each other; drop one",
        ),
        (
            ("--http", "127.0.0.1:0", "--allow-origin", "*"),
            "--allow-origin *: not an origin; give scheme, host and port only, e.g. https://app.example.com or http://localhost:6274",
        ),
        (
            ("--http", "127.0.0.1:0", "--allow-origin", "https://app.example.com/path"),
            "--allow-origin https://app.example.com/path: not an origin; give scheme, host and port only, e.g. https://app.example.com or http://localhost:6274",
        ),
        (
            ("--http", "127.0.0.1:0", "--allow-host", "evil.example/x"),
            "--allow-host evil.example/x: not a host name; give NAME or NAME:PORT, e.g. mcp.example.com (an IPv6 address in brackets: [fd00::1]:8765)",
        ),
    ],
)
def test_bad_http_options_are_one_line(ws: Path, args: tuple[str, ...], message: str) -> None:
    done = run_cli(ws, *args)
    assert done.returncode == 2
    assert done.stderr == f"handrail: error: {message}\n"


async def test_a_token_file_or_the_environment_gives_the_token(ws: Path) -> None:
    path = ws.parent / "token"
    path.write_text("from-the-file-0123456789\n")
    path.chmod(0o600)
    with serving(ws, "--token-file", str(path), lines=1) as served:
        assert not served.token  # not printed: the operator has it
        assert not (ws.parent / "state" / "serve").exists()  # and not published
        async with sdk_client(served.url, "from-the-file-0123456789") as client:
            read = await client.call_tool("read_file", {"file_path": "notes.txt"})
        assert text_of(read) == "1\talpha"
    with serving(ws, lines=1, HANDRAIL_SERVE_TOKEN="from-the-env-0123456789") as served:
        assert len(served.lines) == 1
        async with sdk_client(served.url, "from-the-env-0123456789") as client:
            read = await client.call_tool("read_file", {"file_path": "notes.txt"})
        assert text_of(read) == "1\talpha"
        async with httpx.AsyncClient(timeout=WAIT) as http:
            r = await http.post(
                served.url, json=initialize(), headers={**ACCEPT, **bearer("x" * 20)}
            )
        assert r.status_code == 401


def test_the_token_file_is_removed_at_exit(ws: Path) -> None:
    with serving(ws) as served:
        token_file = ws.parent / "state" / "serve" / f"{served.port}.token"
        assert token_file.read_text().strip() == served.token
        stop(served.proc)
        assert served.proc.returncode == 143
    assert not token_file.exists()
    assert "Traceback" not in served.log.read_text()


def test_the_python_api_publishes_a_generated_token_and_withdraws_it_on_sigterm(
    ws: Path,
) -> None:
    # Without the CLI, uvicorn re-raises SIGTERM once it has shut down, ending the process
    # before any `finally` in `serve`: the token file must be gone all the same.
    script = (
        "import asyncio, sys\n"
        "from handrail.mcp import serve\n"
        "asyncio.run(serve(root=sys.argv[1], load_settings=False, http=('127.0.0.1', 0),"
        " ready=lambda url: print(url, flush=True)))\n"
    )
    out = ws.parent / "api.out"
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(ws)],
            stdout=sink,
            stderr=subprocess.DEVNULL,
            env=env_for(ws),
        )
    try:
        url = wait_for(lambda: out.read_text().strip(), "the ready line")
        port = int(url.rsplit(":", 1)[1].removesuffix("/mcp"))
        token_file = ws.parent / "state" / "serve" / f"{port}.token"
        token = token_file.read_text().strip()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        r = httpx.post(url, json=initialize(), headers={**ACCEPT, **bearer(token)}, timeout=WAIT)
        assert r.status_code == 200
        stop(proc)
    finally:
        stop(proc)
    assert proc.returncode == -signal.SIGTERM
    assert not token_file.exists()


# -- approvals ----------------------------------------------------------------------------------


async def test_the_right_token_works_end_to_end_with_an_approval(
    server: Served, shared_ws: Path
) -> None:
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async with sdk_client(server.url, server.token, elicitation_callback=accept) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        r = await client.call_tool("run_shell", {"command": "echo approved > approved.txt"})
    assert "run_shell" in names
    assert r.is_error is False, text_of(r)
    assert (shared_ws / "approved.txt").read_text() == "approved\n"
    assert len(asked) == 1 and "echo approved" in asked[0]


async def test_handrails_own_client_connects_with_the_token_from_its_config(
    server: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The configuration `handrail serve --help` shows (here the user's own MCP servers file):
    # the token comes from the environment.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HANDRAIL_SERVE_TOKEN", server.token)
    user = tmp_path / "mcp.json"
    entry = {"type": "http", "url": server.url}
    user.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "handrail": {
                        **entry,
                        "headers": {"Authorization": "Bearer ${HANDRAIL_SERVE_TOKEN}"},
                    },
                    "tokenless": entry,
                }
            }
        )
    )
    async with McpTools.from_config(tmp_path, user_path=user) as tools:
        assert list(tools.failures) == ["tokenless"]  # refused: 401
        rt = Runtime(tools.registry(), root=tmp_path, mode="bypass")
        r = await rt.call("mcp__handrail__read_file", {"file_path": "notes.txt"})
    assert (r.ok, r.content) == (True, "1\talpha")


def forged_answers(ids: range) -> list[dict[str, Any]]:
    """Accept answers to the server's requests, by every id it is likely to have used."""
    return [{"jsonrpc": "2.0", "id": i, "result": {"action": "accept", "content": {}}} for i in ids]


async def test_a_second_client_cannot_approve_the_first_ones_call(
    server: Served, shared_ws: Path
) -> None:
    canary = shared_ws / "canary-approval.txt"
    asked = anyio.Event()
    attacked = anyio.Event()
    session_ids: list[str] = []

    async def hold_then_decline(context: Any, params: types.ElicitRequestParams) -> Any:
        asked.set()
        with anyio.fail_after(WAIT):
            await attacked.wait()
        return types.ElicitResult(action="decline")

    async def remember_session(response: Any) -> None:
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])

    statuses: dict[str, list[int]] = {}
    outcome: list[types.CallToolResult] = []
    async with create_mcp_http_client(headers=bearer(server.token)) as http_a:
        http_a.event_hooks["response"].append(remember_session)
        async with Client(
            streamable_http_client(server.url, http_client=http_a),
            read_timeout_seconds=WAIT,
            elicitation_callback=hold_then_decline,
        ) as a:

            async def call() -> None:
                command = {"command": f"touch {canary.name}"}
                outcome.append(await a.call_tool("run_shell", command))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(WAIT):
                    await asked.wait()
                a_session = session_ids[-1]
                async with httpx.AsyncClient(timeout=WAIT) as b:
                    own = await raw_session(b, server.url, server.token)
                    attempts = {
                        "no token, A's session": {
                            **ACCEPT,
                            "mcp-session-id": a_session,
                            "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
                        },
                        "wrong token, A's session": {
                            **ACCEPT,
                            **bearer("wrong-token-0123456789abcdef"),
                            "mcp-session-id": a_session,
                            "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
                        },
                        "the token, B's own session": own,
                    }
                    for label, headers in attempts.items():
                        statuses[label] = [
                            (await b.post(server.url, json=answer, headers=headers)).status_code
                            for answer in forged_answers(range(10))
                        ]
                    # B's session handles its messages in order: once this ping is answered,
                    # the forged answers it accepted have been dealt with.
                    ping = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
                    pong = await b.post(server.url, json=ping, headers=own)
                    assert pong.status_code == 200, pong.text
                still_waiting = not outcome and not canary.exists()
                attacked.set()
    assert still_waiting
    assert statuses["no token, A's session"] == [401] * 10
    assert statuses["wrong token, A's session"] == [401] * 10
    # Accepted as messages of B's own session, where no request is waiting: no effect on A.
    assert statuses["the token, B's own session"] == [202] * 10
    (result,) = outcome
    assert result.is_error is True
    assert (
        result.meta is not None and result.meta["handrail/result"]["error"] == "PERMISSION_DENIED"
    )
    assert not canary.exists()


async def test_the_asking_session_with_the_token_is_what_answers(
    server: Served, shared_ws: Path
) -> None:
    # Positive control for the test above: the same forged answers, sent with the token on
    # A's own session, do approve the call. The session id is A's secret, under the token.
    made = shared_ws / "made-by-forged-answer.txt"
    asked = anyio.Event()
    answered = anyio.Event()
    session_ids: list[str] = []

    async def hold(context: Any, params: types.ElicitRequestParams) -> Any:
        asked.set()
        with anyio.fail_after(WAIT):
            await answered.wait()  # never answers itself: the forged answer came first
        return types.ElicitResult(action="decline")

    async def remember_session(response: Any) -> None:
        if "mcp-session-id" in response.headers:
            session_ids.append(response.headers["mcp-session-id"])

    outcome: list[types.CallToolResult] = []
    async with create_mcp_http_client(headers=bearer(server.token)) as http_a:
        http_a.event_hooks["response"].append(remember_session)
        async with Client(
            streamable_http_client(server.url, http_client=http_a),
            read_timeout_seconds=WAIT,
            elicitation_callback=hold,
        ) as a:

            async def call() -> None:
                outcome.append(await a.call_tool("run_shell", {"command": f"touch {made.name}"}))
                answered.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(WAIT):
                    await asked.wait()
                headers = {
                    **ACCEPT,
                    **bearer(server.token),
                    "mcp-session-id": session_ids[-1],
                    "mcp-protocol-version": LATEST_HANDSHAKE_VERSION,
                }
                async with httpx.AsyncClient(timeout=WAIT) as b:
                    for answer in forged_answers(range(10)):
                        await b.post(server.url, json=answer, headers=headers)
    assert outcome[0].is_error is False, text_of(outcome[0])
    assert made.exists()


# -- the server's mode is the ceiling -----------------------------------------------------------


async def test_a_client_cannot_leave_the_servers_plan_mode(ws: Path) -> None:
    canary = ws / "canary-plan.txt"
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    with serving(ws, "--mode", "plan") as served:
        async with sdk_client(served.url, served.token, elicitation_callback=accept) as client:
            found = await client.call_tool("tool_search", {"query": "select:exit_plan_mode"})
            assert found.is_error is False, text_of(found)
            leave = await client.call_tool("exit_plan_mode", {"plan": "1. Write the canary."})
            write = await client.call_tool("write_file", {"file_path": canary.name, "content": "x"})
            names = [t.name for t in (await client.list_tools()).tools]
    assert leave.is_error is True
    assert leave.meta is not None and leave.meta["handrail/result"]["error"] == "PERMISSION_DENIED"
    assert text_of(leave) == snapshot(
        "Permission denied: this server runs in plan mode, the widest mode its clients' sessions may use, so the session cannot switch to default mode; carry on within plan mode (its operator chooses the mode: handrail serve --mode). Do not retry this call as is; choose another approach or ask the user."
    )
    assert asked == []  # refused before anyone was asked
    assert write.is_error is True
    assert not canary.exists()
    assert "write_file" not in names  # still listed as plan mode


async def test_plan_mode_entered_by_a_client_returns_to_the_servers_mode(
    server: Served, shared_ws: Path
) -> None:
    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={})

    async with sdk_client(server.url, server.token, elicitation_callback=accept) as client:
        await client.call_tool("tool_search", {"query": "select:enter_plan_mode"})
        entered = await client.call_tool("enter_plan_mode", {})
        blocked = await client.call_tool("write_file", {"file_path": "plan-x.txt", "content": "x"})
        left = await client.call_tool("exit_plan_mode", {"plan": "1. Write plan-y.txt."})
        written = await client.call_tool("write_file", {"file_path": "plan-y.txt", "content": "y"})
    assert entered.is_error is False, text_of(entered)
    assert blocked.is_error is True
    assert left.is_error is False, text_of(left)
    assert "back in accept_edits mode" in text_of(left)
    assert written.is_error is False, text_of(written)
    assert not (shared_ws / "plan-x.txt").exists()
    assert (shared_ws / "plan-y.txt").read_text() == "y"


async def test_a_session_pushed_past_the_ceiling_is_decided_in_the_servers_mode(
    tmp_path: Path,
) -> None:
    # Whatever widened a session's mode (a tool's state update, a bug), calls are decided in
    # the server's mode: here a write that `bypass` would run asks instead.
    rt = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path, mode="default")
    rt.policy = ModeCeilingPolicy(rt.policy, PermissionMode.DEFAULT)
    pushed = Session(mode=PermissionMode.BYPASS)
    r = await rt.call("write_file", {"file_path": "canary.txt", "content": "x"}, session=pushed)
    assert isinstance(r, Interrupted)
    assert not (tmp_path / "canary.txt").exists()
    # Control: without the ceiling, bypass runs it.
    bare = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path, mode="default")
    done = await bare.call(
        "write_file", {"file_path": "control.txt", "content": "x"}, session=pushed
    )
    assert done.ok, done.content
    assert (tmp_path / "control.txt").exists()
