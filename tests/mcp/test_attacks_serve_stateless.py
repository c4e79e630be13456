"""Attacks on `handrail serve --http --stateless` (MCP 2026-07-28): approvals a client carries.

Real `handrail serve` processes on 127.0.0.1 (`python -m handrail serve`, or the Python `serve`
for options the command has no flag for), the official SDK client pinned to 2026-07-28, and
raw HTTP where the SDK would not send what an attacker sends. The attacker holds the token:
it may answer its own approvals (by design), but it must not approve what it was not asked,
make a state that outlives its time, or read the secret that signs states.

Canaries: a file the call would create, checked absent; the secret's text, checked absent
from every answer. `--ask write_file` makes `write_file` ask, so no OS sandbox is needed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.streamable_http import streamable_http_client

from handrail.mcp._server_state import RequestStates, call_digest
from mcp import Client

WAIT = 30.0
"""Seconds any single wait may take (a bound, never a speed threshold)."""
TOKEN = "attack-stateless-token-0123456789abcdef"
SECRET = "attack-state-secret-0123456789abcdef-0123456789"
MODERN = "2026-07-28"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
SCRIPT = (
    "import asyncio, sys\n"
    "from handrail.mcp import serve\n"
    "asyncio.run(serve(root=sys.argv[1], load_settings=False, http=('127.0.0.1', 0),\n"
    "    ask=['write_file'], stateless=True, token_file=False,\n"
    "    ready=lambda url: print('handrail: serving MCP on', url,\n"
    "    file=sys.stderr, flush=True), {options}))\n"
)


# -- servers and clients -------------------------------------------------------------------------


@contextlib.contextmanager
def serving(
    ws: Path, *args: str, options: str | None = None, env: dict[str, str] | None = None
) -> Iterator[str]:
    """One server on `ws` (its URL) once it listens; stopped by PID at the end.

    `handrail serve --http 127.0.0.1:0 --no-settings ARGS` with the token in the environment,
    or, with `options`, the Python `serve` given them.
    """
    environ = {k: v for k, v in os.environ.items() if k != "HANDRAIL_SERVE_TOKEN"}
    environ.update(
        XDG_CONFIG_HOME=str(ws.parent / "xdg"),
        HANDRAIL_STATE_DIR=str(ws.parent / "state"),
        HANDRAIL_SERVE_TOKEN=TOKEN,
        **(env or {}),
    )
    if options is not None:
        command = [sys.executable, "-c", SCRIPT.format(options=options), str(ws)]
    else:
        http = ["--http", "127.0.0.1:0", "--no-settings", *args]
        command = [sys.executable, "-m", "handrail", "serve", *http]
    log = ws.parent / f"serve-{secrets.token_hex(4)}.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            command, cwd=ws, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=environ
        )
    try:
        for _ in range(int(WAIT / 0.05)):
            text = log.read_text()
            if "serving MCP on " in text:
                yield text.split("serving MCP on ")[1].split()[0]
                break
            if proc.poll() is not None:
                raise AssertionError(f"serve exited with {proc.returncode}: {text}")
            time.sleep(0.05)
        else:
            raise AssertionError(f"serve did not start within {WAIT} s: {log.read_text()}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


async def _accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={})


@contextlib.asynccontextmanager
async def modern(url: str) -> AsyncIterator[Client]:
    """The SDK client pinned to 2026-07-28, with the token; it declares form elicitation."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=WAIT) as http:
        async with Client(
            streamable_http_client(url, http_client=http),
            mode=MODERN,
            read_timeout_seconds=WAIT,
            elicitation_callback=_accept,
        ) as c:
            yield c


async def retry(c: Client, name: str, arguments: dict[str, Any], state: str) -> Any:
    """A retry carrying `state` and the user's "accept"."""
    reply = types.ElicitResult(action="accept", content={})
    return await c.session.call_tool(
        name,
        arguments,
        input_responses={"approval": reply},
        request_state=state,
        allow_input_required=True,
    )


def outcome(result: Any) -> dict[str, Any]:
    assert isinstance(result, types.CallToolResult), result
    assert result.meta is not None, result
    return result.meta["handrail/result"]


def text(result: Any) -> str:
    return "".join(getattr(b, "text", "") for b in getattr(result, "content", []))


def write(name: str) -> dict[str, Any]:
    return {"file_path": name, "content": "made by an approved call\n"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def mint(
    key: bytes, call: str, *, exp: float, question: str = "anything", iat: float | None = None
) -> str:
    """A state as `_server_state` writes one, signed with `key` by whoever holds it."""
    issued = time.time() if iat is None else iat
    claims = {"v": 1, "c": call, "q": question, "iat": issued, "exp": exp}
    claims["n"] = secrets.token_hex(8)
    signed = "hr1." + _b64(json.dumps(claims, sort_keys=True, separators=(",", ":")).encode())
    return f"{signed}.{_b64(hmac.new(key, signed.encode(), hashlib.sha256).digest())}"


def token_key(token: str) -> bytes:
    """The key a server without a `state_secret` signs with: anyone with the token has it."""
    return hmac.new(
        token.encode(), b"handrail/serve/request-state/v1/token", hashlib.sha256
    ).digest()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "xdg").mkdir()
    return root


# -- what a token holder must not reach ------------------------------------------------------------


async def test_without_stateless_a_modern_request_runs_nothing(ws: Path) -> None:
    """`--stateless` is what opens the 2026-07-28 path: without it, even bypass runs nothing."""
    canary = ws / "canary-no-stateless.txt"
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    params = {"name": "write_file", "arguments": write(canary.name), "_meta": meta}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        **ACCEPT,
        "authorization": f"Bearer {TOKEN}",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "write_file",
    }
    with serving(ws, "--mode", "bypass") as url:
        async with httpx.AsyncClient(timeout=WAIT) as http:
            answers = [
                await http.post(url, json=call, headers=headers),
                # The version said in the body only, on the session-era route.
                await http.post(
                    url, json=call, headers={**ACCEPT, "authorization": f"Bearer {TOKEN}"}
                ),
            ]
    assert not canary.exists(), [a.text for a in answers]
    assert all(a.status_code >= 400 or '"error"' in a.text for a in answers), [
        (a.status_code, a.text) for a in answers
    ]


async def test_with_a_state_secret_a_token_holder_cannot_make_a_state(ws: Path) -> None:
    canary = ws / "canary-minted.txt"
    call = call_digest("write_file", write(canary.name))
    forged = mint(token_key(TOKEN), call, exp=time.time() + 60)
    # Control: without a secret the same state opens, so the refusal below is the secret's.
    assert not isinstance(
        RequestStates.for_server(token=TOKEN, secret=None).open(forged, call), str
    )
    options = f"token={TOKEN!r}, state_secret={SECRET!r}"
    with serving(ws, options=options) as url:
        async with modern(url) as c:
            refused = await retry(c, "write_file", write(canary.name), forged)
    assert outcome(refused)["requestState"] == "invalid"
    assert outcome(refused)["error"] == "PERMISSION_DENIED"
    assert not canary.exists()


MALFORMED = {
    "not-ascii": "hr1." + "é" * 40 + ".AAAA",
    "huge": "hr1." + "A" * 5000 + ".AAAA",
    "deep-json": "hr1." + _b64(b"[" * 600 + b"]" * 600) + ".AAAA",
    "padded": "hr1.e30=.AAAA",
    "dots": "hr1...",
    "empty": "",
    "nan-exp": "hr1." + _b64(b'{"v":1,"c":"x","q":"q","exp":NaN,"n":"n"}') + ".AAAA",
}


async def test_a_malformed_state_is_a_refusal_never_a_crash(ws: Path) -> None:
    canary = ws / "canary-malformed.txt"
    with serving(ws, "--stateless") as url:
        async with modern(url) as c:
            refused = {
                label: await retry(c, "write_file", write(canary.name), state)
                for label, state in MALFORMED.items()
            }
            alive = await c.list_tools()  # the replica still answers
    reasons = {label: outcome(r)["requestState"] for label, r in refused.items()}
    assert reasons == dict.fromkeys(MALFORMED, "invalid")
    assert not canary.exists()
    assert "write_file" in [t.name for t in alive.tools]


async def test_the_state_secret_file_is_hidden_from_the_served_tools(ws: Path) -> None:
    secret = ws / "state-secret.txt"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    with serving(ws, "--stateless", "--state-secret-file", str(secret)) as url:
        async with modern(url) as c:
            read = await c.call_tool("read_file", {"file_path": secret.name})
            grep = await c.call_tool("grep_search", {"pattern": "attack-state-secret"})
            listing = await c.call_tool("list_files", {"path": "."})
    seen = text(read) + text(grep) + text(listing)
    assert read.is_error is True
    assert SECRET not in seen, seen
    assert "attack-state-secret" not in text(grep)


def test_a_short_state_secret_file_is_a_clear_error(ws: Path) -> None:
    secret = ws / "short-secret.txt"
    secret.write_text("only-twenty-chars-xx\n")
    secret.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "HANDRAIL_SERVE_TOKEN"}
    env.update(HANDRAIL_SERVE_TOKEN=TOKEN, XDG_CONFIG_HOME=str(ws.parent / "xdg"))
    http = ["--http", "127.0.0.1:0", "--stateless", "--no-settings"]
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "serve", *http, "--state-secret-file", str(secret)],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "32" in done.stderr and "only-twenty" not in done.stderr, done.stderr


# -- how long a state holds ------------------------------------------------------------------------


def test_a_state_cannot_outlive_the_servers_ttl() -> None:
    states = RequestStates.for_server(token=TOKEN, secret=None)  # ttl 600 s
    call = call_digest("write_file", write("x.txt"))
    key = token_key(TOKEN)
    pinned = [states.open(mint(key, call, exp=time.time() + 1e9), call) for _ in range(100_000)]
    genuine = states.open(states.seal(call, "q"), call)
    # Another client's real approval still opens: the flood neither lasted nor filled the table.
    assert not isinstance(genuine, str), genuine
    assert all(isinstance(p, str) for p in pinned[:1]), "a state for 31 years was accepted"
