"""`handrail serve --http` for 2026-07-28 clients: stateless, replicas, approvals across them.

Real `handrail serve --http` processes on 127.0.0.1 (the Python `serve` for options the
command has no flag for), the official SDK client pinned to `2026-07-28` (or `legacy`), and a
round-robin TCP forwarder on 127.0.0.1 that sends each new connection to the next replica,
the way a load balancer without sticky sessions does. The client opens a connection per
request, so its requests alternate between the replicas.

Every call that must not run plants a canary: a file it would create, checked absent.
`--ask write_file` makes `write_file` ask, so no OS sandbox is needed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import httpx
import httpx2
import mcp_types as types
import pytest
from inline_snapshot import snapshot
from mcp.client.streamable_http import streamable_http_client

from handrail import ApprovalRequest, Confirmation, ToolCall, WritePath
from handrail.mcp._server_stateless import CATALOG, Answer, StatelessAsker
from mcp import Client

WAIT = 30.0
"""Seconds any single wait may take (a bound, never a speed threshold)."""
TOKEN = "stateless-token-0123456789abcdef"
MODERN: Literal["2026-07-28"] = "2026-07-28"
Mode = Literal["legacy", "2026-07-28"]
Action = Literal["accept", "decline", "cancel"]
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
SCRIPT = (
    "import asyncio, sys\n"
    "from handrail.mcp import serve\n"
    "asyncio.run(serve(root=sys.argv[1], load_settings=False, http=('127.0.0.1', 0),\n"
    "    ask=['write_file'], stateless=True,\n"
    "    ready=lambda url: print('handrail: serving MCP on', url,\n"
    "    file=sys.stderr, flush=True), {options}))\n"
)


# -- replicas and the forwarder ------------------------------------------------------------------


@dataclass
class Replica:
    proc: subprocess.Popen[bytes]
    log: Path
    url: str = ""

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].removesuffix("/mcp"))


def _wait_for(check: Callable[[], Any], what: str) -> Any:
    for _ in range(int(WAIT / 0.05)):  # bounded in count, so in time
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"{what}: still not there after {WAIT} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@contextlib.contextmanager
def replicas(
    ws: Path, count: int, *args: str, token: str | None = TOKEN, options: str | None = None
) -> Iterator[list[Replica]]:
    """`count` servers on one workspace, once each is listening; stopped by PID at the end.

    `handrail serve --http 127.0.0.1:0 --stateless --ask write_file ARGS` with the token in the
    environment (`--no-auth` for None), or, with `options`, the Python `serve` given them.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("HANDRAIL_SERVE_TOKEN",)}
    env.update(XDG_CONFIG_HOME=str(ws.parent / "xdg"), HANDRAIL_STATE_DIR=str(ws.parent / "st"))
    if token is not None:
        env["HANDRAIL_SERVE_TOKEN"] = token
    if options is not None:
        command = [sys.executable, "-c", SCRIPT.format(options=options), str(ws)]
    else:
        auth = [] if token is not None else ["--no-auth"]
        http = [
            "--http",
            "127.0.0.1:0",
            "--stateless",
            "--ask",
            "write_file",
            "--no-settings",
            *auth,
        ]
        command = [sys.executable, "-m", "handrail", "serve", *http, *args]
    started: list[Replica] = []
    try:
        for _ in range(count):
            log = ws.parent / f"replica-{uuid.uuid4().hex[:8]}.log"
            with open(log, "wb") as err:
                proc = subprocess.Popen(
                    command, cwd=ws, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env
                )
            started.append(Replica(proc=proc, log=log))
        for replica in started:

            def ready(r: Replica = replica) -> str:
                text = r.log.read_text()
                if r.proc.poll() is not None:
                    raise AssertionError(f"a replica exited with {r.proc.returncode}: {text}")
                found = [ln for ln in text.splitlines() if "serving MCP on" in ln]
                return found[0] if found else ""

            line = _wait_for(ready, "a replica's ready line")
            replica.url = line.split("serving MCP on ")[1].split()[0]
        yield started
    finally:
        for replica in started:
            _stop(replica.proc)


@dataclass
class Hop:
    """One connection through the forwarder: the replica it went to, the bytes both ways."""

    replica: int
    sent: bytearray = field(default_factory=bytearray)
    received: bytearray = field(default_factory=bytearray)


@dataclass
class Forwarder:
    port: int
    ports: list[int]
    hops: list[Hop] = field(default_factory=list[Hop])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def hop_with(self, text: bytes, *, sent: bool) -> Hop:
        (hop,) = [h for h in self.hops if text in (h.sent if sent else h.received)]
        return hop


async def _pump(
    source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream, into: bytearray
) -> None:
    try:
        async for chunk in source:
            into.extend(chunk)
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    with contextlib.suppress(Exception):
        await sink.send_eof()


@contextlib.asynccontextmanager
async def round_robin() -> AsyncIterator[Forwarder]:
    """A TCP forwarder on 127.0.0.1: connection i goes to replica `i % len(ports)`.

    It listens at once (its port is known before the replicas start); fill `ports` before the
    first connection.
    """
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    forwarder = Forwarder(port=listener.extra(anyio.abc.SocketAttribute.local_port), ports=[])

    async def handle(client: anyio.abc.SocketStream) -> None:
        hop = Hop(replica=len(forwarder.hops) % len(forwarder.ports))
        forwarder.hops.append(hop)
        async with client, await anyio.connect_tcp("127.0.0.1", forwarder.ports[hop.replica]) as up:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pump, client, up, hop.sent)
                tg.start_soon(_pump, up, client, hop.received)

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        try:
            yield forwarder
        finally:
            tg.cancel_scope.cancel()


# -- clients -------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def client(
    url: str, *, mode: Mode = MODERN, token: str | None = TOKEN, **options: Any
) -> AsyncIterator[Client]:
    """The SDK client on `url` with the bearer token; a new connection for every request.

    It declares elicitation (a `Person` who accepts) unless `elicitation_callback` says else.
    """
    options.setdefault("elicitation_callback", Person())
    headers = {"Authorization": f"Bearer {token}"} if token else None
    limits = httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(headers=headers, timeout=WAIT, limits=limits) as http:
        async with Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            read_timeout_seconds=WAIT,
            **options,
        ) as c:
            yield c


class Person:
    """A client's user: answers every approval with `action`, and remembers what was asked."""

    def __init__(self, action: Action = "accept") -> None:
        self.action: Action = action
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(
            action=self.action, content={} if self.action == "accept" else None
        )


async def ask_only(c: Client, name: str, arguments: dict[str, Any]) -> types.InputRequiredResult:
    """Call without answering: the server's question and state, as the client received them."""
    first = await c.session.call_tool(name, arguments, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    return first


async def answer(
    c: Client, name: str, arguments: dict[str, Any], state: str | None, action: Action = "accept"
) -> types.CallToolResult:
    """The retry: the user's answer and the state, sent on `c` (maybe another replica)."""
    reply = types.ElicitResult(action=action, content={} if action == "accept" else None)
    result = await c.session.call_tool(
        name, arguments, input_responses={"approval": reply}, request_state=state
    )
    return result


def outcome(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    return result.meta["handrail/result"]


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


def write(name: str) -> dict[str, Any]:
    return {"file_path": name, "content": "made by an approved call\n"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n")
    (tmp_path / "xdg").mkdir()  # an empty user config: nothing from this machine leaks in
    return root


# -- two replicas behind a load balancer ---------------------------------------------------------


async def test_replicas_behind_a_round_robin_forwarder_serve_one_client(ws: Path) -> None:
    person = Person()
    async with round_robin() as fwd:
        with replicas(ws, 2, "--allow-host", f"127.0.0.1:{fwd.port}") as (a, b):
            fwd.ports[:] = [a.port, b.port]
            async with client(fwd.url, elicitation_callback=person) as c:
                listed = await c.list_tools()
                read = await c.call_tool("read_file", {"file_path": "notes.txt"})
                made = await c.call_tool("write_file", write("approved.txt"))
    assert "write_file" in [t.name for t in listed.tools]
    assert (listed.ttl_ms, listed.cache_scope) == (600_000, "private")
    assert read.is_error is False and "alpha" in text(read)
    assert made.is_error is False, text(made)
    assert (ws / "approved.txt").read_text() == "made by an approved call\n"
    (question,) = person.asked
    assert "allow `write_file` to write" in question and "approved.txt" in question
    # The question came from one replica; the answer went to the other, which ran the call.
    asked = fwd.hop_with(b'"input_required"', sent=False)
    answered = fwd.hop_with(b'"requestState"', sent=True)
    assert asked.replica != answered.replica
    assert b'"isError":false' in answered.received
    assert {h.replica for h in fwd.hops} == {0, 1}
    assert len(fwd.hops) == 4  # list, read, call, retry: one connection each, no session
    assert not any(b"mcp-session-id" in h.received.lower() for h in fwd.hops)


async def test_a_declined_approval_runs_nothing_on_either_replica(ws: Path) -> None:
    person = Person("decline")
    canary = ws / "canary-declined.txt"
    async with round_robin() as fwd:
        with replicas(ws, 2, "--allow-host", f"127.0.0.1:{fwd.port}") as (a, b):
            fwd.ports[:] = [a.port, b.port]
            async with client(fwd.url, elicitation_callback=person) as c:
                refused = await c.call_tool("write_file", write(canary.name))
    assert len(person.asked) == 1
    assert refused.is_error is True
    assert outcome(refused)["error"] == "PERMISSION_DENIED"
    assert "declined `write_file`" in text(refused)
    assert not canary.exists()


async def test_asked_on_one_replica_answered_on_the_other_runs_once(ws: Path) -> None:
    made = ws / "once.txt"
    with replicas(ws, 2) as (a, b):
        async with client(a.url) as on_a, client(b.url) as on_b:
            question = await ask_only(on_a, "write_file", write(made.name))
            assert not made.exists()  # asking ran nothing
            (request,) = (question.input_requests or {}).values()
            assert isinstance(request, types.ElicitRequest)
            assert "once.txt" in request.params.message
            ran = await answer(on_b, "write_file", write(made.name), question.request_state)
            assert ran.is_error is False, text(ran)
            assert made.exists()
            made.unlink()
            again = await answer(on_b, "write_file", write(made.name), question.request_state)
    assert again.is_error is True
    assert outcome(again)["requestState"] == "replayed"
    assert not made.exists()  # one approval, one run


# -- states a client must not be able to use -----------------------------------------------------


def _flip(state: str, at: int) -> str:
    swapped = "B" if state[at] != "B" else "C"
    return state[:at] + swapped + state[at + 1 :]


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        pytest.param(lambda s: _flip(s, 10), "invalid", id="payload"),
        pytest.param(lambda s: _flip(s, len(s) - 5), "invalid", id="signature"),
        pytest.param(lambda s: "hr1.e30.AAAA", "invalid", id="made up"),
    ],
)
async def test_a_tampered_state_is_refused_and_nothing_runs(
    ws: Path, tamper: Callable[[str], str], why: str
) -> None:
    canary = ws / f"canary-{uuid.uuid4().hex[:8]}.txt"
    with replicas(ws, 2) as (a, b):
        async with client(a.url) as on_a, client(b.url) as on_b:
            question = await ask_only(on_a, "write_file", write(canary.name))
            assert question.request_state is not None
            refused = await answer(
                on_b, "write_file", write(canary.name), tamper(question.request_state)
            )
            ran_when_refused = canary.exists()
            # Positive control: the untouched state, on the same replica, runs the call.
            control = await answer(on_b, "write_file", write(canary.name), question.request_state)
    assert not ran_when_refused
    assert refused.is_error is True
    assert outcome(refused)["error"] == "PERMISSION_DENIED"
    assert outcome(refused)["requestState"] == why
    assert "is not one this server made, or it was altered" in text(refused)
    assert control.is_error is False, text(control)
    assert canary.exists()


async def test_a_state_cannot_carry_an_approval_to_other_arguments(ws: Path) -> None:
    harmless, canary = ws / "harmless.txt", ws / "canary-swapped.txt"
    with replicas(ws, 2) as (a, b):
        async with client(a.url) as on_a, client(b.url) as on_b:
            question = await ask_only(on_a, "write_file", write(harmless.name))
            swapped = await answer(on_b, "write_file", write(canary.name), question.request_state)
            other_tool = await answer(
                on_b, "edit_file", write(harmless.name), question.request_state
            )
    assert outcome(swapped)["requestState"] == outcome(other_tool)["requestState"] == "other_call"
    assert "was given for another call" in text(swapped)
    assert not canary.exists() and not harmless.exists()


async def test_a_state_from_a_server_with_another_token_is_refused(ws: Path) -> None:
    canary = ws / "canary-other-server.txt"
    other = "another-token-0123456789abcdef"
    with replicas(ws, 1, token=other) as (stranger,), replicas(ws, 1) as (ours,):
        async with client(stranger.url, token=other) as on_stranger, client(ours.url) as on_ours:
            question = await ask_only(on_stranger, "write_file", write(canary.name))
            refused = await answer(
                on_ours, "write_file", write(canary.name), question.request_state
            )
    assert outcome(refused)["requestState"] == "invalid"
    assert not canary.exists()


async def test_an_expired_state_is_refused_and_nothing_runs(ws: Path) -> None:
    canary = ws / "canary-expired.txt"
    with replicas(ws, 1, options=f"token={TOKEN!r}, state_ttl=1") as (replica,):
        async with client(replica.url) as c:
            question = await ask_only(c, "write_file", write(canary.name))
            await anyio.sleep(1.5)  # past the state's life, counted from before it arrived
            late = await answer(c, "write_file", write(canary.name), question.request_state)
            again = await ask_only(c, "write_file", write(canary.name))
    assert late.is_error is True
    assert outcome(late)["requestState"] == "expired"
    assert "its approval expired (an answer counts for 1 s after the question)" in text(late)
    assert not canary.exists()
    assert again.request_state  # calling again asks again


async def test_a_shared_secret_lets_replicas_with_different_tokens_agree(ws: Path) -> None:
    made = ws / "by-secret.txt"
    secret = "a-state-secret-0123456789abcdef-0123"
    with (
        replicas(ws, 1, options=f"token={TOKEN!r}, state_secret={secret!r}") as (a,),
        replicas(ws, 1, options=f"token={TOKEN + 'x'!r}, state_secret={secret!r}") as (b,),
    ):
        async with client(a.url) as on_a, client(b.url, token=TOKEN + "x") as on_b:
            question = await ask_only(on_a, "write_file", write(made.name))
            ran = await answer(on_b, "write_file", write(made.name), question.request_state)
    assert ran.is_error is False, text(ran)
    assert made.exists()


async def test_without_a_token_a_state_holds_on_its_own_replica_only(ws: Path) -> None:
    made = ws / "no-auth.txt"
    with replicas(ws, 2, token=None) as (a, b):
        async with client(a.url, token=None) as on_a, client(b.url, token=None) as on_b:
            question = await ask_only(on_a, "write_file", write(made.name))
            elsewhere = await answer(on_b, "write_file", write(made.name), question.request_state)
            assert not made.exists()
            here = await answer(on_a, "write_file", write(made.name), question.request_state)
    assert outcome(elsewhere)["requestState"] == "invalid"
    assert here.is_error is False, text(here)
    assert made.exists()


async def test_answers_without_a_state_are_not_used(ws: Path) -> None:
    canary = ws / "canary-no-state.txt"
    with replicas(ws, 1) as (replica,):
        async with client(replica.url) as c:
            reply = types.ElicitResult(action="accept", content={})
            first = await c.session.call_tool(
                "write_file",
                write(canary.name),
                input_responses={"approval": reply},
                allow_input_required=True,
            )
    assert isinstance(first, types.InputRequiredResult)  # asked, as if nothing was sent
    assert not canary.exists()


async def test_a_client_that_cannot_ask_gets_the_fallback(ws: Path) -> None:
    canary = ws / "canary-cannot-ask.txt"
    with replicas(ws, 1) as (replica,):
        async with client(replica.url, elicitation_callback=None) as c:
            refused = await c.call_tool("write_file", write(canary.name))
    assert outcome(refused)["error"] == "PERMISSION_DENIED"
    assert "this MCP client cannot ask its user" in text(refused)
    assert not canary.exists()


# -- the HTTP checks apply to stateless requests --------------------------------------------------


def modern_call(name: str) -> dict[str, Any]:
    """A raw 2026-07-28 `tools/call` that creates `name` (in bypass mode, without asking)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    arguments = {"file_path": name, "content": "pwned"}
    params = {"name": "write_file", "arguments": arguments, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


async def test_token_host_and_origin_are_checked_for_stateless_requests(ws: Path) -> None:
    canary = ws / "canary-raw.txt"
    with replicas(ws, 1, "--mode", "bypass") as (replica,):
        base = {
            **ACCEPT,
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": "write_file",
        }
        port = replica.port
        attacks = {
            "no token": base,
            "wrong token": {**base, "authorization": "Bearer wrong-token-0123456789abcdef"},
            "rebinding host": {
                **base,
                "authorization": f"Bearer {TOKEN}",
                "host": f"attacker.example:{port}",
            },
            "foreign origin": {
                **base,
                "authorization": f"Bearer {TOKEN}",
                "origin": "http://evil.example",
            },
        }
        async with httpx.AsyncClient(timeout=WAIT) as http:
            statuses = {
                label: (
                    await http.post(replica.url, json=modern_call(canary.name), headers=h)
                ).status_code
                for label, h in attacks.items()
            }
            assert not canary.exists()
            own = {**base, "authorization": f"Bearer {TOKEN}"}
            control = await http.post(replica.url, json=modern_call("control.txt"), headers=own)
    assert statuses == {
        "no token": 401,
        "wrong token": 401,
        "rebinding host": 421,
        "foreign origin": 403,
    }
    assert control.status_code == 200, control.text
    assert "mcp-session-id" not in control.headers
    assert (ws / "control.txt").read_text() == "pwned"


# -- what a stateless client gets, and does not ---------------------------------------------------


async def test_discover_names_the_version_and_what_a_stateless_client_lacks(ws: Path) -> None:
    discover = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": modern_call("x")["params"]["_meta"]},
    }
    with replicas(ws, 1) as (replica,):
        async with httpx.AsyncClient(timeout=WAIT) as http:
            headers = {
                **ACCEPT,
                "mcp-protocol-version": MODERN,
                "mcp-method": "server/discover",
                "authorization": f"Bearer {TOKEN}",
            }
            r = await http.post(replica.url, json=discover, headers=headers)
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert MODERN in result["supportedVersions"]
    assert "tools" in result["capabilities"]
    assert result["instructions"].endswith(CATALOG["en"]["instructions"])


async def test_an_edit_needs_a_session_and_the_model_is_told_so(ws: Path) -> None:
    with replicas(ws, 1, "--mode", "bypass") as (replica,):
        async with client(replica.url) as c:
            await c.call_tool("read_file", {"file_path": "notes.txt"})
            edit = {"file_path": "notes.txt", "old_string": "alpha", "new_string": "beta"}
            stateless = await c.call_tool("edit_file", edit)
        async with client(replica.url, mode="legacy") as legacy:
            await legacy.call_tool("read_file", {"file_path": "notes.txt"})
            in_session = await legacy.call_tool("edit_file", edit)
    assert outcome(stateless)["error"] == "FILE_NOT_READ"
    assert text(stateless).endswith(CATALOG["en"]["not_remembered"])
    assert in_session.is_error is False, text(in_session)
    assert (ws / "notes.txt").read_text() == "beta\n"


async def test_a_deferred_tool_is_activated_by_its_own_call(ws: Path) -> None:
    # enter_plan_mode is deferred behind tool_search; a stateless call of it is its own
    # request, so no earlier tool_search could have activated it.
    with replicas(ws, 1) as (replica,):
        async with client(replica.url) as c:
            listed = [t.name for t in (await c.list_tools()).tools]
            entered = await c.call_tool("enter_plan_mode", {})
    assert "enter_plan_mode" not in listed
    assert entered.is_error is False, text(entered)


async def test_checkpoint_tools_are_offered_to_sessions_only(ws: Path) -> None:
    with replicas(ws, 1, "--offer-restore") as (replica,):
        async with client(replica.url) as c:
            stateless = [t.name for t in (await c.list_tools()).tools]
            called = await c.call_tool("list_checkpoints", {})
        async with client(replica.url, mode="legacy") as legacy:
            in_session = [t.name for t in (await legacy.list_tools()).tools]
    assert "list_checkpoints" not in stateless
    assert {"list_checkpoints", "restore_checkpoint"} <= set(in_session)
    assert outcome(called)["error"] == "TOOL_NOT_FOUND"
    assert "checkpoints belong to a session" in text(called)


async def test_a_legacy_client_on_the_same_replica_keeps_its_session(ws: Path) -> None:
    person = Person()
    with replicas(ws, 1) as (replica,):
        async with client(replica.url, mode="legacy", elicitation_callback=person) as c:
            assert c.protocol_version == "2025-11-25"
            listed = await c.list_tools()
            made = await c.call_tool("write_file", write("legacy.txt"))
    assert listed.ttl_ms == 0  # the model's default: the hint is a 2026-07-28 field, not sent
    assert made.is_error is False, text(made)
    assert len(person.asked) == 1
    assert (ws / "legacy.txt").exists()


# -- the asker, on its own ------------------------------------------------------------------------


def _approval(call_id: str, path: str = "a.txt") -> ApprovalRequest:
    call = ToolCall(id=call_id, name="write_file", arguments={"file_path": path})
    return ApprovalRequest(
        reason="the rule `write_file` asks for approval",
        call=call,
        tool_name="write_file",
        requests=(WritePath(path=path),),
    )


def _asker(
    answer: Answer | None = None, fallback: Literal["deny", "allow"] = "deny"
) -> StatelessAsker:
    return StatelessAsker(call_id="c1", locale="en", can_ask=True, fallback=fallback, answer=answer)


async def test_the_asker_answers_only_the_question_the_user_saw() -> None:
    first = _asker()
    stopped = await first(_approval("c1"))
    assert stopped.kind == "deny" and first.asked is not None  # nothing runs; the client is asked
    seen = first.question
    yes = _asker(Answer(question=seen, action="accept"))
    assert (await yes(_approval("c1"))).kind == "allow_once" and yes.asked is None
    no = _asker(Answer(question=seen, action="decline"))
    assert (await no(_approval("c1"))).reason == "the user declined `write_file` in the MCP client"
    # The same answer does not carry over to another question: that one is asked anew.
    moved = _asker(Answer(question=seen, action="accept"))
    assert (await moved(_approval("c1", "b.txt"))).kind == "deny"
    assert moved.asked is not None and moved.question != seen


async def test_a_question_asked_while_a_tool_runs_cannot_wait() -> None:
    asker = _asker(Answer(question="x", action="accept"))
    confirm = Confirmation(reason="overwrite a file changed by hand?", topic="overwrite")
    sub_call = await asker(_approval("sub-agent-call"))
    mid = await asker(confirm)
    assert asker.asked is None
    assert sub_call.kind == mid.kind == "deny"
    assert "can answer only the approval of the call it made" in (sub_call.reason or "")
    assert "`write_file`" in (sub_call.reason or "")
    assert "cannot wait for its answer" in (mid.reason or "")
    lenient = _asker(fallback="allow")
    assert (await lenient(_approval("sub-agent-call"))).kind == "allow_once"
    assert (await lenient(confirm)).kind == "deny"  # the operator's allow is for calls only


def test_the_stateless_texts() -> None:
    assert CATALOG["en"].keys() == CATALOG["zh"].keys()
    assert CATALOG["en"] == snapshot(
        {
            "instructions": "This server answers each of your requests on its own (MCP 2026-07-28, stateless): nothing carries from one request to the next. It cannot know which files you read, so existing files cannot be edited or overwritten; the permission mode, background jobs and tool_search's activations last one request. A call that needs approval asks your user each time. For all of these, connect with the session-based protocol (the initialize handshake, MCP 2025-11-25).",
            "not_remembered": "This server answers you statelessly (MCP 2026-07-28): no request remembers another, so it cannot know which files you read, and reading the file again will not help. Changing an existing file needs a session: connect with the session-based protocol (the initialize handshake, MCP 2025-11-25).",
            "mid_run": "nobody could be asked ({reason}): this MCP client is served statelessly (MCP 2026-07-28), so a question asked while a tool runs cannot wait for its answer",
            "mid_run_call": "`{name}` needs the user's approval ({reason}), asked while another tool runs; a stateless MCP client (2026-07-28) can answer only the approval of the call it made. The server's operator can allow such calls with the allow rule {rule} (handrail serve --allow)",
            "invalid": "`{name}` did not run: the approval sent back with this call (its requestState) is not one this server made, or it was altered. Call the tool again to be asked again.",
            "expired": "`{name}` did not run: its approval expired (an answer counts for {ttl} s after the question). Call the tool again to be asked again.",
            "other_call": "`{name}` did not run: the approval sent back was given for another call (another tool or other arguments). Call the tool again to be asked again.",
            "replayed": "`{name}` did not run again: this approval was already used for one run (one approval, one run). Call the tool again to be asked again.",
            "unavailable": "`{name}` is not offered to a stateless MCP client (2026-07-28): checkpoints belong to a session. Connect with the session-based protocol (the initialize handshake, MCP 2025-11-25) to list or restore them.",
        }
    )
