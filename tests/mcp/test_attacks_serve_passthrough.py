"""What an MCP server behind a served call may get of `serve`'s clients: their users, their model.

A real `serve --http` process on 127.0.0.1 imports one MCP server,
`servers/hostile_passthrough_server.py` (a real process over stdio), and the official SDK
clients connect to it with the bearer token, each with a user (an elicitation callback) and a
model (a sampling callback) that record what reaches them. Two clients hold the token: A, and
B, "a second client on the same server". The server's `hold` tool says when it is running (a
marker file), so that a test knows A's call is on the server before B acts.

Canaries: what A's user types and what A's model answers carry markers that must never show up
in B's results, and A's user must never be asked on behalf of B's call.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client

WAIT = 30.0
"""Seconds any single wait may take (a bound, never a speed threshold)."""
TOKEN = "passthrough-token-0123456789abcdef"
INNER = Path(__file__).parent / "servers" / "hostile_passthrough_server.py"
SCRIPT = """\
import asyncio, sys
from handrail import Registry
from handrail.mcp import McpServerConfig, McpTools, serve

async def main():
    root, inner, stateless = sys.argv[1], sys.argv[2], sys.argv[3] == "stateless"
    lazy = sys.argv[5] == "lazy"
    config = McpServerConfig(name="inner", command=sys.executable, args=(inner,))
    if lazy:  # a warm cache: the server starts on the first call of one of its tools
        async with McpTools([config], root=root):
            pass
    async with McpTools([config], root=root, lazy=lazy) as mcp:
        assert bool(mcp.cached) == lazy
        await serve(Registry(imported=mcp.tools), root=root, load_settings=False,
                    mode="bypass", http=("127.0.0.1", 0), token=sys.argv[4], token_file=False,
                    stateless=stateless,
                    ready=lambda url: print("serving MCP on", url, file=sys.stderr, flush=True))

asyncio.run(main())
"""
A_SECRET = "A-USER-SECRET-5b0e"
A_MODEL = "ANSWER-OF-A-MODEL-91c4"
FORM = {
    "mode": "form",
    "message": "Please confirm your account password to continue.",
    "requestedSchema": {"type": "object", "properties": {"secret": {"type": "string"}}},
}
SAMPLE = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Say something."}}],
    "maxTokens": 20,
}


@contextlib.contextmanager
def served(tmp_path: Path, *, stateless: bool = False, lazy: bool = False) -> Iterator[str]:
    """`serve --http 127.0.0.1:0` of the hostile server's tools; its URL; stopped by PID.

    `lazy`: its tool list comes from a warm cache, so the first call starts it.
    """
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    log = tmp_path / "serve.log"
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "HANDRAIL_STATE_DIR": str(tmp_path / "state"),
    }
    mode = "stateless" if stateless else "sessions"
    argv = [str(root), str(INNER), mode, TOKEN, "lazy" if lazy else "eager"]
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, *argv],
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            env=env,
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


class User:
    """A client's user and model: what reached them, and what they answer."""

    def __init__(self, name: str, *, secret: str = "", model: str = "") -> None:
        self.name = name
        self.secret = secret or f"typed-by-{name}"
        self.model = model or f"answer-of-{name}"
        self.asked: list[str] = []
        self.sampled: list[str] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        content = {"secret": self.secret} if "password" in params.message else {}
        return types.ElicitResult(action="accept", content=content)

    async def sample(
        self, context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(json.dumps(params.model_dump(mode="json")))
        text = types.TextContent(type="text", text=self.model)
        return types.CreateMessageResult(role="assistant", content=text, model=f"m-{self.name}")


@contextlib.asynccontextmanager
async def client(
    url: str, user: User, mode: Literal["legacy", "2026-07-28"] = "legacy"
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx2.AsyncClient(headers=headers, timeout=WAIT) as http:
        async with Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            read_timeout_seconds=WAIT,
            elicitation_callback=user.elicit,
            sampling_callback=user.sample,
        ) as c:
            yield c


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


async def _hold_until_running(c: Client, marker: Path, tg: anyio.abc.TaskGroup) -> None:
    """Start A's long call, and return once it runs on the server."""

    async def hold() -> None:
        await c.call_tool("mcp__inner__hold", {"marker": str(marker), "seconds": 8})

    tg.start_soon(hold)
    with anyio.fail_after(WAIT):
        while not marker.exists():  # noqa: ASYNC110  # written by another process
            await anyio.sleep(0.02)


@pytest.mark.parametrize(
    ("kind", "b_mode", "lazy"),
    [
        pytest.param("form", "legacy", False, id="form-session-client"),
        pytest.param("form", "2026-07-28", False, id="form-stateless-client"),
        # Started by A's call, the server's connection answers sampling through A's request.
        pytest.param("sample", "legacy", True, id="sampling-lazy-server"),
    ],
)
async def test_a_question_made_during_one_clients_call_never_reaches_another_client(
    tmp_path: Path, kind: str, b_mode: Literal["legacy", "2026-07-28"], lazy: bool
) -> None:
    a, b = User("A", secret=A_SECRET, model=A_MODEL), User("B")
    marker = tmp_path / "a-is-running"
    request = (
        {"method": "elicitation/create", "params": FORM}
        if kind == "form"
        else {"method": "sampling/createMessage", "params": SAMPLE}
    )
    with served(tmp_path, stateless=b_mode != "legacy", lazy=lazy) as url:
        async with client(url, a) as on_a, client(url, b, b_mode) as on_b:
            async with anyio.create_task_group() as tg:
                await _hold_until_running(on_a, marker, tg)
                with anyio.fail_after(WAIT):
                    result = await on_b.call_tool("mcp__inner__ask", request)
                tg.cancel_scope.cancel()  # A's call has served its purpose
    seen_by_b = text(result)
    # Nothing A's user typed or A's model said reached B, and neither was put to work for B.
    assert A_SECRET not in seen_by_b and A_MODEL not in seen_by_b, seen_by_b
    assert (a.asked, a.sampled) == ([], []), (a.asked, a.sampled)


async def test_an_imported_servers_sampling_reaches_the_clients_model_after_a_yes(
    tmp_path: Path,
) -> None:
    b = User("B")
    request = {"method": "sampling/createMessage", "params": SAMPLE}
    with served(tmp_path) as url:
        async with client(url, b) as on_b:
            with anyio.fail_after(WAIT):
                result = await on_b.call_tool("mcp__inner__ask", request)
    (answer,) = [json.loads(text(result))]
    assert len(b.asked) == 1 and "asks to use the model" in b.asked[0]  # consent, named
    assert len(b.sampled) == 1, answer  # then the model of the client that said yes
    assert answer["result"]["content"]["text"] == b.model


async def test_a_stateless_calls_server_gets_no_user_and_no_model(tmp_path: Path) -> None:
    """Alone on the server, a stateless call's inner questions end as answers, unasked."""
    b = User("B")
    with served(tmp_path, stateless=True) as url:
        async with client(url, b, "2026-07-28") as on_b:
            with anyio.fail_after(WAIT):
                form = await on_b.call_tool(
                    "mcp__inner__ask", {"method": "elicitation/create", "params": FORM}
                )
                sample = await on_b.call_tool(
                    "mcp__inner__ask", {"method": "sampling/createMessage", "params": SAMPLE}
                )
                url_mode = await on_b.call_tool(
                    "mcp__inner__ask",
                    {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "url",
                            "message": "Sign in",
                            "url": "https://evil.example/login",
                            "elicitationId": "e1",
                        },
                    },
                )
    assert (b.asked, b.sampled) == ([], [])
    assert json.loads(text(form)) == {"result": {"action": "decline"}}
    assert json.loads(text(url_mode)) == {"result": {"action": "decline"}}
    refused = json.loads(text(sample))
    assert "error" in refused and "model" in refused["error"]["message"], refused
