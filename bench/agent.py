"""Agent-loop cost: handrail's loop against pydantic-ai's and openai-agents', in one run.

The same scripted conversations go through each framework's own agent loop, all on the OpenAI
Chat Completions wire format (the common denominator), all streamed, against one
`handrail.testing.ModelServer` on 127.0.0.1:

(a) loop overhead per turn: a 20-tool-call conversation (20 replies that each call a trivial
    async tool, then a final text; 21 model requests) with no scripted delays. Overhead per
    turn = (wall time of the run - the floor) / 21, where the floor is the time the same server
    needs to answer the same 21 request bodies (recorded, replayed byte for byte) to a raw
    socket client that does nothing else: server work, loopback and the least any client must
    do. Median over the repetitions, after a warm-up run; client CPU per turn is shown too.
(b) streaming: one reply whose stream takes 1.5 s and completes three tool calls at about 0.3,
    0.8 and 1.3 s (each tool sleeps 0.5 s), then a final text. Turn time = the second request's
    arrival at the server - the first's, against stream time + 0.5 s (the stream time measured
    by replaying the first request to the raw client).
(c) start-up: a fresh process per sample, from `subprocess.Popen` to the first request arriving
    at the server: `handrail run ...` for handrail, a minimal script (one agent, one tool, one
    prompt) for each peer.

The server runs in a child process (this file with `--serve`), so its threads never take the
benchmark process's GIL; it reports each request's arrival on stdout as CLOCK_MONOTONIC
seconds, the clock `time.monotonic()` reads in every process on Linux, so arrival times,
`Popen` times and tool start times compare directly.

Run it through `bash bench/run_agent` (it sets up bench/.venv); `--quick` for a smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
now = time.monotonic  # CLOCK_MONOTONIC on Linux: one clock for this process and its children

TURNS = 20  # tool-calling replies in (a); the run makes TURNS + 1 requests
TOOL_S = 0.5  # each tool of (b) sleeps this long
EVENT_DELAY = 0.1  # (b): seconds between stream events
STREAM_CHUNK = 8  # (b): characters of argument JSON per event
TARGET_A = 1 / 3  # handrail overhead <= a third of the fastest peer's
TARGET_B = 1.05  # turn <= 1.05 x (stream + one tool)
TARGET_C = 0.40  # start-up <= 40% of the fastest peer's
START_HOLD = 0.25  # (c): seconds the server waits before answering the first request
MODEL = "m"
API_KEY = "x"


# ---------------------------------------------------------------------------------------------
# The tools. Plain async functions, registered with each framework's own decorator.
# ---------------------------------------------------------------------------------------------


async def lookup(key: str) -> str:
    """Look up a key and return its value.

    Args:
        key: The key to look up.
    """
    return f"value of {key}"


TOOL_LOG: list[tuple[str, float, float]] = []  # (name, start, end) of each (b) tool run


async def _probe(name: str) -> str:
    start = now()
    await asyncio.sleep(TOOL_S)
    TOOL_LOG.append((name, start, now()))
    return f"{name} done"


async def probe_a(note: str) -> str:
    """Probe A (takes 0.5 s).

    Args:
        note: A note.
    """
    return await _probe("probe_a")


async def probe_b(note: str) -> str:
    """Probe B (takes 0.5 s).

    Args:
        note: A note.
    """
    return await _probe("probe_b")


async def probe_c(note: str) -> str:
    """Probe C (takes 0.5 s).

    Args:
        note: A note.
    """
    return await _probe("probe_c")


TURN_TOOLS: tuple[Callable[..., Any], ...] = (lookup,)
STREAM_TOOLS: tuple[Callable[..., Any], ...] = (probe_a, probe_b, probe_c)


# ---------------------------------------------------------------------------------------------
# The server (child process): `python bench/agent.py --serve`
# ---------------------------------------------------------------------------------------------

_TAG = re.compile(r"\[bench:(?P<tag>(?P<scenario>[a-z]+):[\w.:-]+)\]")


def _first_user_text(messages: list[Any]) -> str:
    for m in messages:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return ""
    return ""


def _stream_args(note_len: int, letter: str) -> dict[str, str]:
    """Arguments whose JSON text is exactly `note_len` characters long."""
    base = len(json.dumps({"note": ""}, separators=(",", ":")))
    return {"note": letter * max(1, note_len - base)}


def _scripted_replies() -> dict[str, Any]:
    from handrail.testing import Reply, ToolUse

    # OpenAI Chat stream of the (b) reply, one event every EVENT_DELAY s (event k at k x 0.1 s):
    #   0 probe_a starts; 1-2 its arguments (12 chars, 2 pieces of 8)
    #   3 probe_b starts (probe_a complete at 0.3 s); 4-7 its arguments (32 chars, 4 pieces)
    #   8 probe_c starts (probe_b complete at 0.8 s); 9-12 its arguments
    #   13 finish_reason (probe_c complete at 1.3 s); 14 usage (when asked for); 15 [DONE]
    # so the stream lasts 1.5 s (1.4 s for a client that does not ask for usage).
    stream = Reply(
        tool_calls=[
            ToolUse("probe_a", _stream_args(12, "a")),
            ToolUse("probe_b", _stream_args(32, "b")),
            ToolUse("probe_c", _stream_args(32, "c")),
        ],
        chunk_size=STREAM_CHUNK,
        delay=EVENT_DELAY,
    )
    # (c): the answer waits START_HOLD s, so the client sits idle (no CPU) while the parent
    # reads its CPU time up to the first request from /proc.
    hi = Reply(text="hi", first_delay=START_HOLD)
    return {"stream": stream, "done": Reply(text="done"), "hi": hi}


def serve() -> int:
    """Serve the scripted conversations; report requests on stdout; stop at stdin's end.

    stdout lines (JSON): `{"kind": "url"}` once, `{"kind": "req", "t", "tag", "n", "floor"}`
    per request (t: CLOCK_MONOTONIC when the reply is chosen, i.e. once the request is read),
    `{"kind": "dump", "tag", "bodies"}` in answer to a `dump TAG` line on stdin.
    """
    from handrail.testing import ModelServer, RecordedRequest, Reply, ToolUse

    replies = _scripted_replies()
    out_lock = threading.Lock()
    bodies: dict[str, list[str]] = {}

    def emit(record: dict[str, Any]) -> None:
        with out_lock:
            sys.stdout.write(json.dumps(record) + "\n")
            sys.stdout.flush()

    def answer(req: RecordedRequest) -> Reply:
        t = now()
        body = req.body if isinstance(req.body, dict) else {}
        messages = body.get("messages")
        messages = messages if isinstance(messages, list) else []
        m = _TAG.search(_first_user_text(messages))
        tag, scenario = (m["tag"], m["scenario"]) if m else ("", "")
        n = sum(1 for x in messages if isinstance(x, dict) and x.get("role") == "tool")
        floor = req.headers.get("x-bench-floor") == "1"
        if tag and not floor:
            with out_lock:
                bodies.setdefault(tag, []).append(req.raw.decode("utf-8"))
        emit({"kind": "req", "t": t, "tag": tag, "n": n, "floor": floor})
        if scenario == "turns":
            if n < TURNS:
                return Reply(tool_calls=[ToolUse("lookup", {"key": f"k{n}"})])
            return replies["done"]
        if scenario == "stream":
            return replies["stream"] if n == 0 else replies["done"]
        return replies["hi"]

    # One script item per request; far more than a full run makes (about 1,500).
    server = ModelServer([answer] * 50_000)
    server.start()
    emit({"kind": "url", "url": server.base_url("openai_chat")})
    try:
        for line in sys.stdin:  # ends when the parent closes stdin or dies
            cmd, _, arg = line.strip().partition(" ")
            if cmd == "dump":
                with out_lock:
                    found = list(bodies.get(arg, []))
                emit({"kind": "dump", "tag": arg, "bodies": found})
    finally:
        server.close()
        emit({"kind": "bye", "problems": server.problems[:20]})
    return 0


# ---------------------------------------------------------------------------------------------
# The parent's view of the server: a child process, its reports, and a raw replay client
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrival:
    t: float
    n: int  # tool results in the request


class ServerProc:
    """The child server: its URL, request arrivals per tag, and body dumps."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._cond = threading.Condition()
        self._arrivals: dict[str, list[Arrival]] = {}
        self._dumps: dict[str, list[str]] = {}
        self.url = ""
        self.problems: list[str] = []
        self._reader = threading.Thread(target=self._read, name="bench-server-reader", daemon=True)
        self._reader.start()
        with self._cond:
            if not self._cond.wait_for(lambda: self.url or self.proc.poll() is not None, 30):
                raise RuntimeError("the scripted server did not start within 30 s")
        if not self.url:
            raise RuntimeError(f"the scripted server exited ({self.proc.returncode})")
        parts = urlsplit(self.url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                kind = rec.get("kind")
                if kind == "url":
                    self.url = rec["url"]
                elif kind == "req" and not rec["floor"]:
                    self._arrivals.setdefault(rec["tag"], []).append(Arrival(rec["t"], rec["n"]))
                elif kind == "dump":
                    self._dumps[rec["tag"]] = rec["bodies"]
                elif kind == "bye":
                    self.problems = rec["problems"]
                self._cond.notify_all()

    def arrivals(self, tag: str, count: int, timeout: float = 10.0) -> list[Arrival]:
        """The first `count` arrivals of `tag` (fewer if they do not come within `timeout`)."""
        with self._cond:
            self._cond.wait_for(lambda: len(self._arrivals.get(tag, ())) >= count, timeout)
            return list(self._arrivals.get(tag, ()))

    def dump(self, tag: str) -> list[bytes]:
        """The raw request bodies the server received for `tag`, in order."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"dump {tag}\n")
        self.proc.stdin.flush()
        with self._cond:
            if not self._cond.wait_for(lambda: tag in self._dumps, 10):
                raise RuntimeError(f"no dump of {tag} from the server")
            return [b.encode("utf-8") for b in self._dumps.pop(tag)]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        self._reader.join(timeout=2)


class RawClient:
    """The floor: one keep-alive socket that sends a recorded body and reads the answer."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.sock: socket.socket | None = None
        self.rfile: Any = None

    def _connect(self) -> None:
        self.close()
        sock = socket.create_connection((self.host, self.port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock, self.rfile = sock, sock.makefile("rb")

    def close(self) -> None:
        if self.rfile is not None:
            self.rfile.close()
        if self.sock is not None:
            self.sock.close()
        self.sock = self.rfile = None

    def exchange(self, body: bytes) -> tuple[float, list[tuple[float, bytes]]]:
        """Send one request; (seconds to the last byte, [(offset, chunk)] of a chunked body)."""
        if self.sock is None:
            self._connect()
        assert self.sock is not None
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Content-Type: application/json\r\nAuthorization: Bearer {API_KEY}\r\n"
            f"X-Bench-Floor: 1\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("ascii")
        t0 = now()
        self.sock.sendall(head + body)
        status = self.rfile.readline(65537)
        if not status.startswith(b"HTTP/1.1 200"):
            self.close()
            raise RuntimeError(f"floor request answered {status!r}")
        headers: dict[str, str] = {}
        while (line := self.rfile.readline(65537).strip()) != b"":
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        chunks: list[tuple[float, bytes]] = []
        if headers.get("transfer-encoding", "").lower() == "chunked":
            for _ in range(100_000):
                size = int(self.rfile.readline(100).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline(65537)
                    break
                data = self.rfile.read(size)
                self.rfile.read(2)
                chunks.append((now() - t0, data))
        else:
            self.rfile.read(int(headers.get("content-length", "0")))
        elapsed = now() - t0
        if headers.get("connection", "").lower() == "close":
            self.close()
        return elapsed, chunks


# ---------------------------------------------------------------------------------------------
# The frameworks, each through its own public agent loop
# ---------------------------------------------------------------------------------------------


class Framework:
    """One column: build an agent with some tools, run one prompt through its loop."""

    name = ""
    module = ""  # importable when the framework is installed
    is_peer = True
    path = ""  # which loop, for the report
    script = ""  # (c): a minimal program (argv: base URL, prompt)
    error = ""  # set when setup failed: every part shows it instead of numbers

    async def setup(self, base_url: str, workdir: Path) -> None:
        """Create the long-lived model client (one per framework, reused across runs)."""

    async def build(self, tools: Sequence[Callable[..., Any]]) -> Any:
        """A fresh agent with these tools (not timed)."""
        raise NotImplementedError

    async def run(self, agent: Any, prompt: str) -> str:
        """Run the prompt to the final answer; return the answer's text (timed)."""
        raise NotImplementedError

    async def release(self, agent: Any) -> None:
        """Free what `build` made (not timed)."""

    async def aclose(self) -> None:
        """Close the model client."""

    def start_command(self, base_url: str, prompt: str, script_dir: Path) -> list[str]:
        """(c): the command whose process start-up is timed."""
        path = script_dir / f"{self.name}_minimal.py"
        path.write_text(self.script)
        return [sys.executable, str(path), base_url, prompt]


class Handrail(Framework):
    name = "handrail"
    module = "handrail"
    is_peer = False
    path = (
        "`Agent(ModelClient('openai_chat', ...), Runtime(Registry(tools)), save=False, "
        "agents=False).run(prompt, on_event=...)` (always streams)"
    )
    script = '''\
import asyncio
import sys

from handrail import Registry, Runtime, tool
from handrail.agent import Agent, ModelClient


@tool(read_only=True, concurrency_safe=True)
async def lookup(key: str) -> str:
    """Look up a key and return its value."""
    return f"value of {key}"


async def main() -> None:
    client = ModelClient("openai_chat", "m", base_url=sys.argv[1], api_key="x")
    rt = Runtime(Registry([lookup]))
    agent = Agent(client, rt, save=False, agents=False)
    result = await agent.run(sys.argv[2], on_event=lambda event: None)
    await agent.aclose()
    print(result.result)


asyncio.run(main())
'''

    async def setup(self, base_url: str, workdir: Path) -> None:
        from handrail.agent import ModelClient

        self.workdir = workdir
        self.client = ModelClient("openai_chat", MODEL, base_url=base_url, api_key=API_KEY)
        self.events = 0

    async def build(self, tools: Sequence[Callable[..., Any]]) -> Any:
        from handrail import Registry, Runtime, tool
        from handrail.agent import Agent

        # The tools are pure and async: read-only and concurrency-safe is the honest setup (the
        # default would ask for approval, and a headless run denies what asks).
        wrapped = [tool(read_only=True, concurrency_safe=True)(f) for f in tools]
        rt = Runtime(Registry(wrapped), root=self.workdir)
        return Agent(self.client, rt, save=False, agents=False, max_turns=50)

    def _on_event(self, event: Any) -> None:
        self.events += 1

    async def run(self, agent: Any, prompt: str) -> str:
        result = await agent.run(prompt, on_event=self._on_event)
        if result.subtype != "success":
            raise RuntimeError(f"handrail run ended {result.subtype}: {result.result!r}")
        return str(result.result)

    async def release(self, agent: Any) -> None:
        await agent.runtime.aclose()

    async def aclose(self) -> None:
        await self.client.aclose()

    def start_command(self, base_url: str, prompt: str, script_dir: Path) -> list[str]:
        exe = Path(sys.executable).with_name("handrail")
        head = [str(exe)] if exe.exists() else [sys.executable, "-m", "handrail"]
        return [
            *head,
            "run",
            prompt,
            "--model",
            f"openai_chat:{MODEL}",
            "--base-url",
            base_url,
            "--no-save",
            "--output-format",
            "json",
        ]


class PydanticAI(Framework):
    name = "pydantic_ai"
    module = "pydantic_ai"
    path = (
        "`Agent(OpenAIChatModel(..., provider=OpenAIProvider(base_url=..., api_key=...)), "
        "tools=[...]).run(prompt, event_stream_handler=...)`: the handler makes every model "
        "request of the run a streamed one (`run_stream_events` is the same path)"
    )
    script = '''\
import asyncio
import sys

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


async def lookup(key: str) -> str:
    """Look up a key and return its value."""
    return f"value of {key}"


async def drain(ctx, events) -> None:
    async for _ in events:
        pass


async def main() -> None:
    model = OpenAIChatModel("m", provider=OpenAIProvider(base_url=sys.argv[1], api_key="x"))
    agent = Agent(model, tools=[lookup])
    result = await agent.run(sys.argv[2], event_stream_handler=drain)
    print(result.output)


asyncio.run(main())
'''

    async def setup(self, base_url: str, workdir: Path) -> None:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        self.provider = OpenAIProvider(base_url=base_url, api_key=API_KEY)
        self.model = OpenAIChatModel(MODEL, provider=self.provider)
        self.events = 0

    async def build(self, tools: Sequence[Callable[..., Any]]) -> Any:
        from pydantic_ai import Agent

        return Agent(self.model, tools=list(tools))

    async def _drain(self, ctx: Any, events: Any) -> None:
        async for _ in events:
            self.events += 1

    async def run(self, agent: Any, prompt: str) -> str:
        result = await agent.run(prompt, event_stream_handler=self._drain)
        return str(result.output)

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self.provider.client.close()


class OpenAIAgents(Framework):
    name = "openai_agents"
    module = "agents"
    path = (
        "`Runner.run_streamed(Agent(model=OpenAIChatCompletionsModel(model=..., "
        "openai_client=AsyncOpenAI(base_url=..., api_key=...)), tools=[function_tool(...)]), "
        "prompt, max_turns=50)` + `stream_events()`; tracing disabled"
    )
    script = '''\
import asyncio
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI


@function_tool
async def lookup(key: str) -> str:
    """Look up a key and return its value."""
    return f"value of {key}"


async def main() -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=sys.argv[1], api_key="x")
    model = OpenAIChatCompletionsModel(model="m", openai_client=client)
    agent = Agent(name="bench", model=model, tools=[lookup])
    result = Runner.run_streamed(agent, sys.argv[2])
    async for _ in result.stream_events():
        pass
    print(result.final_output)


asyncio.run(main())
'''

    async def setup(self, base_url: str, workdir: Path) -> None:
        from agents import set_tracing_disabled
        from openai import AsyncOpenAI

        set_tracing_disabled(True)  # left on, it tries to export spans to OpenAI
        self.client = AsyncOpenAI(base_url=base_url, api_key=API_KEY)
        self.events = 0

    async def build(self, tools: Sequence[Callable[..., Any]]) -> Any:
        from agents import Agent, OpenAIChatCompletionsModel, function_tool

        model = OpenAIChatCompletionsModel(model=MODEL, openai_client=self.client)
        return Agent(name="bench", model=model, tools=[function_tool(f) for f in tools])

    async def run(self, agent: Any, prompt: str) -> str:
        from agents import Runner

        result = Runner.run_streamed(agent, prompt, max_turns=50)
        async for _ in result.stream_events():
            self.events += 1
        return str(result.final_output)

    async def aclose(self) -> None:
        await self.client.close()


FRAMEWORKS: tuple[type[Framework], ...] = (Handrail, PydanticAI, OpenAIAgents)


# ---------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _med(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass
class Column:
    """One framework's results in one part."""

    status: str = "ok"  # ok | n/a | error
    note: str = ""
    samples: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    summary: dict[str, Any] = field(default_factory=dict[str, Any])


def _columns(fws: list[Framework]) -> dict[str, Column]:
    return {f.name: Column("error", f.error) if f.error else Column() for f in fws}


def _rotate(items: list[Framework], k: int) -> list[Framework]:
    """Round-robin order, so no framework always runs first (or right after another)."""
    k %= max(1, len(items))
    return items[k:] + items[:k]


A_KEYS = ("overhead_ms_per_turn", "wall_ms_per_turn", "floor_ms_per_turn", "cpu_ms_per_turn")


async def part_turns(
    fws: list[Framework], srv: ServerProc, raw: RawClient, reps: int
) -> dict[str, Column]:
    """(a) Loop overhead per turn: 20 tool turns + a final answer, no scripted delays."""
    cols = _columns(fws)
    requests = TURNS + 1
    for rep in range(-1, reps):  # rep -1: the warm-up (not counted)
        for fw in _rotate(fws, rep):
            col = cols[fw.name]
            if col.status != "ok":
                continue
            tag = f"turns:{fw.name}:{rep + 1}"
            try:
                agent = await fw.build(TURN_TOOLS)
                gc.collect()
                c0, t0 = time.process_time(), now()
                answer = await fw.run(agent, f"[bench:{tag}] Look up twenty keys.")
                wall, cpu = now() - t0, time.process_time() - c0
                await fw.release(agent)
                seen = srv.arrivals(tag, requests)
                if answer != "done" or len(seen) != requests:
                    raise RuntimeError(
                        f"expected {requests} requests and 'done', got {len(seen)} and {answer!r}"
                    )
                bodies = srv.dump(tag)
                floor = sum(raw.exchange(b)[0] for b in bodies)
            except Exception as e:
                col.status, col.note = "error", f"{type(e).__name__}: {e}"
                log(f"  (a) {fw.name}: ERROR\n{traceback.format_exc()}")
                continue
            sample = {
                "wall_ms_per_turn": wall * 1000 / requests,
                "floor_ms_per_turn": floor * 1000 / requests,
                "overhead_ms_per_turn": (wall - floor) * 1000 / requests,
                "cpu_ms_per_turn": cpu * 1000 / requests,
                "request_bytes_last": len(bodies[-1]),
            }
            if rep >= 0:
                col.samples.append(sample)
            log(
                f"  (a) {fw.name:14} {'warm-up' if rep < 0 else f'rep {rep + 1}':8} "
                + "  ".join(f"{k.removesuffix('_ms_per_turn')} {v:7.2f}" for k, v in sample.items())
            )
    for col in cols.values():
        if col.status == "ok":
            col.summary = {k: _med([s[k] for s in col.samples]) for k in A_KEYS}
            col.summary["min_overhead_ms_per_turn"] = min(
                s["overhead_ms_per_turn"] for s in col.samples
            )
    return cols


def _stream_floor(raw: RawClient, body: bytes) -> dict[str, Any]:
    """Replay the (b) first request: the stream's length and when the calls completed."""
    elapsed, chunks = raw.exchange(body)
    starts = [t for t, c in chunks if b'"id":"call_' in c]
    finish = next((t for t, c in chunks if b'"finish_reason":"' in c), None)
    # A call is complete when the next one starts, the last one at finish_reason.
    completes = [*starts[1:], finish] if finish is not None else starts[1:]
    return {"stream_s": elapsed, "call_complete_s": completes, "finish_s": finish}


async def part_stream(
    fws: list[Framework], srv: ServerProc, raw: RawClient, reps: int
) -> dict[str, Column]:
    """(b) Streaming: tools that start while the model is still writing."""
    cols = _columns(fws)
    floors: dict[str, dict[str, Any]] = {}
    for rep in range(-1, reps):
        for fw in _rotate(fws, rep):
            col = cols[fw.name]
            if col.status != "ok":
                continue
            tag = f"stream:{fw.name}:{rep + 1}"
            try:
                agent = await fw.build(STREAM_TOOLS)
                TOOL_LOG.clear()
                answer = await fw.run(agent, f"[bench:{tag}] Run the three probes.")
                await fw.release(agent)
                seen = srv.arrivals(tag, 2)
                if answer != "done" or len(seen) != 2 or len(TOOL_LOG) != 3:
                    raise RuntimeError(
                        f"expected 2 requests, 3 tool runs and 'done', got {len(seen)}, "
                        f"{len(TOOL_LOG)} and {answer!r}"
                    )
                if fw.name not in floors:
                    floors[fw.name] = _stream_floor(raw, srv.dump(tag)[0])
            except Exception as e:
                col.status, col.note = "error", f"{type(e).__name__}: {e}"
                log(f"  (b) {fw.name}: ERROR\n{traceback.format_exc()}")
                continue
            t1 = seen[0].t
            fl = floors[fw.name]
            turn = seen[1].t - t1
            ideal = fl["stream_s"] + TOOL_S
            tools = sorted((s - t1, e - t1) for _, s, e in TOOL_LOG)
            sample = {
                "turn_s": turn,
                "stream_s": fl["stream_s"],
                "ideal_s": ideal,
                "ratio": turn / ideal,
                "tool_starts_s": [s for s, _ in tools],
                "tool_ends_s": [e for _, e in tools],
            }
            if rep >= 0:
                col.samples.append(sample)
            starts = ", ".join(f"{s:.2f}" for s, _ in tools)
            log(
                f"  (b) {fw.name:14} {'warm-up' if rep < 0 else f'rep {rep + 1}':8} turn "
                f"{turn:.3f} s vs ideal {ideal:.3f} s = {turn / ideal:.3f}x; tools start at "
                f"{starts} s"
            )
    for name, col in cols.items():
        if col.status != "ok" or not col.samples:
            continue
        fl = floors[name]
        tight = max(fl["stream_s"], (fl["finish_s"] or fl["stream_s"]) + TOOL_S)
        turn = _med([s["turn_s"] for s in col.samples])
        assert turn is not None
        col.summary = {
            "turn_s": turn,
            "stream_s": fl["stream_s"],
            "ideal_s": fl["stream_s"] + TOOL_S,
            "ratio": turn / (fl["stream_s"] + TOOL_S),
            "call_complete_s": fl["call_complete_s"],
            "earliest_s": tight,
            "ratio_earliest": turn / tight,
            "tool_starts_s": [_med([s["tool_starts_s"][i] for s in col.samples]) for i in range(3)],
            "tool_ends_s": [_med([s["tool_ends_s"][i] for s in col.samples]) for i in range(3)],
        }
    return cols


def _child_env(work: Path) -> dict[str, str]:
    """The same environment for every start-up sample.

    Byte-code caches go to one prefix under bench/out that the warm-up fills (this machine sets
    PYTHONDONTWRITEBYTECODE, and handrail's own __pycache__ can be stale while src/ is being
    edited); user config and state dirs are empty temporary ones.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(HERE / "out" / "pycache")
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        env[var] = str(work / var.lower())
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):  # every client gets its URL and key
        env.pop(var, None)
    return env


def _start_once(cmd: list[str], tag: str, srv: ServerProc, work: Path) -> dict[str, Any]:
    env = _child_env(work)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = now()
    proc = subprocess.Popen(
        cmd,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        seen = srv.arrivals(tag, 1, timeout=60)
        cpu_first = _proc_cpu(proc.pid)
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=10)
        raise RuntimeError(f"{cmd[0]} did not finish within 60 s") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    total = now() - t0
    if proc.returncode != 0 or not seen:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(f"exit {proc.returncode}, {len(seen)} requests: {' | '.join(tail)}")
    return {
        "first_request_s": seen[0].t - t0,
        "cpu_first_request_s": cpu_first,
        "exit_s": total,
        "cpu_s": _children_cpu(r0),
        "stdout": out.decode()[-200:],
    }


def _proc_cpu(pid: int) -> float | None:
    """User + system CPU of a live process (and its reaped children) from /proc, in seconds."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # fields[0] is field 3 (state) of proc(5)
    ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _children_cpu(before: Any) -> float:
    """User + system CPU of the children reaped since `before` (the server child is alive)."""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def part_start(fws: list[Framework], srv: ServerProc, samples: int) -> dict[str, Any]:
    """(c) Process start to the first request, fresh processes, interleaved."""
    cols = {f.name: Column() for f in fws}
    refs: dict[str, Column] = {"python -c pass": Column(), "handrail library script": Column()}
    with tempfile.TemporaryDirectory(prefix="handrail-bench-agent-") as tmp:
        work = Path(tmp)
        scripts = work / "scripts"
        scripts.mkdir()
        handrail_script = scripts / "handrail_minimal.py"
        handrail_script.write_text(Handrail.script)
        for rep in range(-1, samples):
            for fw in _rotate(fws, rep):
                col = cols[fw.name]
                if col.status != "ok":
                    continue
                tag = f"start:{fw.name}:{rep + 1}"
                try:
                    cmd = fw.start_command(srv.url, f"[bench:{tag}] hi", scripts)
                    sample = _start_once(cmd, tag, srv, work)
                except Exception as e:
                    col.status, col.note = "error", f"{type(e).__name__}: {e}"
                    log(f"  (c) {fw.name}: ERROR {col.note}")
                    continue
                if rep >= 0:
                    col.samples.append(sample)
                log(
                    f"  (c) {fw.name:14} {'warm-up' if rep < 0 else f'rep {rep + 1}':8} first "
                    f"request {sample['first_request_s'] * 1000:7.1f} ms, exit "
                    f"{sample['exit_s'] * 1000:7.1f} ms"
                )
            # References: what the interpreter alone costs, and handrail used as a library.
            ref_tag = f"start:handrail-lib:{rep + 1}"
            try:
                lib = _start_once(
                    [sys.executable, str(handrail_script), srv.url, f"[bench:{ref_tag}] hi"],
                    ref_tag,
                    srv,
                    work,
                )
                if rep >= 0:
                    refs["handrail library script"].samples.append(lib)
            except Exception as e:
                refs["handrail library script"].status = "error"
                refs["handrail library script"].note = f"{type(e).__name__}: {e}"
            r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), now()
            subprocess.run(
                [sys.executable, "-c", "pass"],
                env=_child_env(work),
                cwd=work,
                check=True,
                timeout=30,
            )
            if rep >= 0:
                sample = {"exit_s": now() - t0, "cpu_s": _children_cpu(r0)}
                refs["python -c pass"].samples.append(sample)
    for col in [*cols.values(), *refs.values()]:
        if col.samples:
            col.summary = {
                k: _med([s[k] for s in col.samples if s.get(k) is not None])
                for k in ("first_request_s", "cpu_first_request_s", "exit_s", "cpu_s")
                if any(s.get(k) is not None for s in col.samples)
            }
            col.summary["best_first_request_s"] = min(
                (s["first_request_s"] for s in col.samples if "first_request_s" in s),
                default=None,
            )
    return {"frameworks": cols, "references": refs}


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def version_of(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _fastest_peer(
    fws: list[Framework], cols: dict[str, Column], key: str
) -> tuple[str, float] | None:
    peers = [
        (f.name, cols[f.name].summary[key])
        for f in fws
        if f.is_peer and cols[f.name].status == "ok" and cols[f.name].summary.get(key) is not None
    ]
    return min(peers, key=lambda p: p[1]) if peers else None


def _vs_peer(fws: list[Framework], cols: dict[str, Column], key: str) -> tuple[float | None, str]:
    """(handrail ÷ fastest peer, the cell text) for one summary key."""
    best = _fastest_peer(fws, cols, key)
    h = cols["handrail"].summary.get(key) if cols["handrail"].status == "ok" else None
    if best is None or h is None or best[1] <= 0:
        return None, "–"
    ratio = h / best[1]
    return ratio, f"{ratio:.2f}x vs {best[0]}"


def _cell(col: Column, key: str, scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    if col.status != "ok":
        return f"{col.status.upper()}" if col.status != "n/a" else col.note
    value = col.summary.get(key)
    return "–" if value is None else fmt.format(value * scale)


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def render(meta: dict[str, Any], fws: list[Framework], parts: dict[str, Any]) -> str:
    """The markdown report."""
    names = [f.name for f in fws]
    lines = ["# handrail agent-loop benchmark", ""]
    m = meta["machine"]
    lines.append(
        f"- machine: {m['python']}, {m['platform']}, nproc {m['nproc']}, load average "
        f"{m['loadavg']} at start, {meta.get('loadavg_end')} at end"
    )
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    lines.append(
        f"- samples: (a) {meta['reps_a']} runs of {TURNS + 1} requests after a warm-up run, "
        f"(b) {meta['reps_b']} runs after a warm-up, (c) {meta['reps_c']} fresh processes "
        f"after a warm-up; frameworks interleaved{' (--quick)' if meta['quick'] else ''}"
    )
    lines.append("")
    header = ["", *names, "handrail ÷ fastest peer", "goal", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))

    a, b, c = parts.get("a"), parts.get("b"), parts.get("c")
    if a is not None:
        ratio, vs = _vs_peer(fws, a, "overhead_ms_per_turn")
        lines.append(
            "| (a) loop overhead per turn, ms (median) | "
            + " | ".join(_cell(a[n], "overhead_ms_per_turn") for n in names)
            + f" | {vs} | ≤ {TARGET_A:.2f}x | {'' if ratio is None else _mark(ratio <= TARGET_A)} |"
        )
        ratio, vs = _vs_peer(fws, a, "cpu_ms_per_turn")
        lines.append(
            "| (a′) cross-check: client CPU per turn, ms (median) | "
            + " | ".join(_cell(a[n], "cpu_ms_per_turn") for n in names)
            + f" | {vs} | ≤ {TARGET_A:.2f}x | {'' if ratio is None else _mark(ratio <= TARGET_A)} |"
        )
    if b is not None:
        _, vs = _vs_peer(fws, b, "turn_s")
        hb = b["handrail"].summary.get("ratio") if b["handrail"].status == "ok" else None
        lines.append(
            "| (b) streamed turn ÷ (stream + 0.5 s) | "
            + " | ".join(_cell(b[n], "ratio", fmt="{:.3f}x") for n in names)
            + f" | turn {vs} | handrail ≤ {TARGET_B:.2f}x"
            + f" | {'' if hb is None else _mark(hb <= TARGET_B)} |"
        )
    if c is not None:
        ratio, vs = _vs_peer(fws, c["frameworks"], "first_request_s")
        lines.append(
            "| (c) process start → first request, ms (median) | "
            + " | ".join(
                _cell(c["frameworks"][n], "first_request_s", 1000, "{:.0f}") for n in names
            )
            + f" | {vs} | ≤ {TARGET_C:.2f}x | {'' if ratio is None else _mark(ratio <= TARGET_C)} |"
        )
        ratio, vs = _vs_peer(fws, c["frameworks"], "cpu_first_request_s")
        lines.append(
            "| (c′) cross-check: process CPU to first request, ms (median) | "
            + " | ".join(
                _cell(c["frameworks"][n], "cpu_first_request_s", 1000, "{:.0f}") for n in names
            )
            + f" | {vs} | ≤ {TARGET_C:.2f}x | {'' if ratio is None else _mark(ratio <= TARGET_C)} |"
        )

    if a is not None:
        lines += ["", "## (a) per turn, ms (medians)", ""]
        lines.append("| | " + " | ".join(names) + " | handrail ÷ fastest peer |")
        lines.append("|" + "---|" * (len(names) + 2))
        for key, label in (
            ("overhead_ms_per_turn", "overhead = (wall − floor) / 21"),
            ("min_overhead_ms_per_turn", "overhead, best run"),
            ("wall_ms_per_turn", "wall / 21"),
            ("floor_ms_per_turn", "floor / 21 (raw client, same bodies)"),
            ("cpu_ms_per_turn", "client CPU / 21"),
        ):
            cells = " | ".join(_cell(a[n], key) for n in names)
            lines.append(f"| {label} | {cells} | {_vs_peer(fws, a, key)[1]} |")
    if b is not None:
        lines += ["", "## (b) streamed turn, s (medians)", ""]
        lines.append("| | " + " | ".join(names) + " |")
        lines.append("|" + "---|" * (len(names) + 1))
        for key, label, fmt in (
            ("turn_s", "turn: request 1 → request 2 at the server", "{:.3f}"),
            ("stream_s", "stream (replayed to the raw client)", "{:.3f}"),
            ("ratio", "turn ÷ (stream + 0.5)", "{:.3f}x"),
            ("earliest_s", "earliest possible: max(stream, last call complete + 0.5)", "{:.3f}"),
            ("ratio_earliest", "turn ÷ earliest possible", "{:.3f}x"),
        ):
            lines.append(
                f"| {label} | " + " | ".join(_cell(b[n], key, fmt=fmt) for n in names) + " |"
            )
        row = []
        for n in names:
            s = b[n].summary
            row.append(
                ", ".join(f"{x:.2f}" for x in s["tool_starts_s"]) if b[n].status == "ok" else "–"
            )
        lines.append("| tools start at (s after request 1) | " + " | ".join(row) + " |")
        row = []
        for n in names:
            s = b[n].summary
            row.append(
                ", ".join(f"{x:.2f}" for x in s["call_complete_s"]) if b[n].status == "ok" else "–"
            )
        lines.append("| calls complete in the stream at (s) | " + " | ".join(row) + " |")
    if c is not None:
        lines += ["", "## (c) start-up, ms (medians)", ""]
        lines.append(
            "| | first request | best | CPU to first request | process exit | CPU to exit |"
        )
        lines.append("|---|---|---|---|---|---|")

        def ms(value: float | None) -> str:
            return "–" if value is None else f"{value * 1000:.0f}"

        for n, col in [*c["frameworks"].items(), *c["references"].items()]:
            if col.status != "ok" or not col.summary:
                lines.append(f"| {n} | {col.status.upper()}: {col.note} | | | | |")
                continue
            s = col.summary
            lines.append(
                f"| {n} | {ms(s.get('first_request_s'))} | {ms(s.get('best_first_request_s'))} "
                f"| {ms(s.get('cpu_first_request_s'))} | {ms(s.get('exit_s'))} "
                f"| {ms(s.get('cpu_s'))} |"
            )

    notes = []
    for part, cols in (("a", a), ("b", b), ("c", c and c["frameworks"])):
        for n, col in (cols or {}).items():
            if col.status != "ok":
                notes.append(f"- ({part}) {n}: {col.status.upper()}: {col.note}")
    if meta.get("server_problems"):
        notes.append(f"- server problems: {meta['server_problems']}")
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines) + "\n"


def _jsonable(parts: dict[str, Any]) -> dict[str, Any]:
    def col(c: Column) -> dict[str, Any]:
        return {"status": c.status, "note": c.note, "summary": c.summary, "samples": c.samples}

    out: dict[str, Any] = {}
    for key, value in parts.items():
        if key == "c":
            out[key] = {
                group: {n: col(c) for n, c in cols.items()} for group, cols in value.items()
            }
        else:
            out[key] = {n: col(c) for n, c in value.items()}
    return out


VERSION_DISTS = ("handrail", "pydantic-ai-slim", "openai-agents", "openai", "httpx", "httpx2")


def quiet_loggers() -> None:
    for name in ("openai", "openai.agents", "httpx", "httpx2", "pydantic_ai", "handrail"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [logging.NullHandler()]
        logger.propagate = False


async def _in_process(
    args: argparse.Namespace, fws: list[Framework], srv: ServerProc, workdir: Path
) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    for fw in fws:
        try:
            await fw.setup(srv.url, workdir)
        except Exception as e:
            fw.error = f"setup failed: {type(e).__name__}: {e}"
            log(f"{fw.name}: {fw.error}")
    quiet_loggers()
    raw = RawClient(srv.host, srv.port)
    try:
        if "a" in args.parts:
            log("(a) loop overhead per turn:")
            parts["a"] = await part_turns(fws, srv, raw, args.reps_a)
        if "b" in args.parts:
            log("(b) streaming:")
            parts["b"] = await part_stream(fws, srv, raw, args.reps_b)
    finally:
        raw.close()
        for fw in fws:
            with contextlib.suppress(Exception):
                await fw.aclose()
    return parts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: few samples")
    parser.add_argument(
        "--parts", nargs="+", choices=("a", "b", "c"), default=["a", "b", "c"], help="what to run"
    )
    parser.add_argument(
        "--out",
        default=str(HERE / "out" / "agent.json"),
        help="raw JSON results path (default: bench/out/agent.json)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    # `python bench/agent.py` puts bench/ first on sys.path, where bench/mcp.py would shadow the
    # `mcp` package that openai-agents imports.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    if args.serve:
        return serve()
    args.reps_a, args.reps_b, args.reps_c = (3, 1, 2) if args.quick else (9, 5, 7)

    fws: list[Framework] = []
    for cls in FRAMEWORKS:
        fw = cls()
        if importlib.util.find_spec(fw.module) is None:
            log(f"{fw.name}: not installed, skipped")
            continue
        fws.append(fw)
    if not fws or fws[0].name != "handrail":
        log("handrail is not importable: nothing to compare (run through bash bench/run_agent)")
        return 1
    versions = {d: version_of(d) for d in VERSION_DISTS}
    clock = time.get_clock_info("monotonic")
    meta: dict[str, Any] = {
        "machine": {
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "platform": platform.platform(),
            "nproc": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()],
            "clock": clock.implementation,
        },
        "versions": versions,
        "quick": args.quick,
        "reps_a": args.reps_a,
        "reps_b": args.reps_b,
        "reps_c": args.reps_c,
        "paths": {f.name: f.path for f in fws},
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    log(f"versions: {versions}")
    if "CLOCK_MONOTONIC" not in clock.implementation:
        log(f"WARNING: time.monotonic is {clock.implementation}; cross-process times may not align")
    srv = ServerProc()
    parts: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="handrail-bench-agent-") as tmp:
            parts.update(asyncio.run(_in_process(args, fws, srv, Path(tmp))))
        if "c" in args.parts:
            log("(c) start-up:")
            parts["c"] = part_start(fws, srv, args.reps_c)
    finally:
        srv.close()
    meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    meta["server_problems"] = srv.problems
    text = render(meta, fws, parts)
    print(text, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "parts": _jsonable(parts)}, indent=2) + "\n")
    log(f"raw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
