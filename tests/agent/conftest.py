"""The model client against `handrail.testing.ModelServer` over real loopback HTTP.

Shared here: a guard that refuses every connection and name lookup off the loopback
interface (so no test can reach a real provider, whatever the client does), a clean
environment (no provider keys, no proxies), the four providers, two small tools, and
`respond()`, which drives `ModelClient.respond` under a time limit and records what came out
and when.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from handrail import Tool, ToolCall, tool
from handrail.agent import (
    PRESETS,
    AssistantMessage,
    Message,
    ModelClient,
    ModelRequest,
    ModelRetry,
    ReasoningDelta,
    TextDelta,
    UserMessage,
)
from handrail.agent._codecs import CallReady
from handrail.testing import ModelServer, ScriptItem

PROVIDERS = ["openai_chat", "openai_responses", "anthropic", "gemini"]
MODEL = "test-model"
SYSTEM = "You are a terse coding agent."

KEY_VARIABLES = sorted({p.key_env for p in PRESETS.values() if p.key_env} | {"OPENAI_API_KEY"})
PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"]


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file."""
    return path


@tool
def run_shell(command: str) -> str:
    """Run a shell command."""
    return command


TOOLS: list[Tool] = [read_file, run_shell]


# -- isolation -------------------------------------------------------------------------------


def _loopback(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuse (and record) any lookup or connection that would leave 127.0.0.1 / ::1."""
    attempts: list[str] = []
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback(host):
            attempts.append(f"getaddrinfo {host!r}")
            raise socket.gaierror(socket.EAI_NONAME, f"tests/agent: no network ({host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        inet = self.family in (socket.AF_INET, socket.AF_INET6)
        if inet and not _loopback(address[0]):
            attempts.append(f"connect {address!r}")
            raise ConnectionRefusedError(f"tests/agent: no network ({address!r})")
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [*KEY_VARIABLES, *PROXY_VARIABLES]:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


# -- servers and clients ---------------------------------------------------------------------


@pytest.fixture
def serve() -> Iterator[Callable[..., ModelServer]]:
    """`serve(*script, **options)`: a started `ModelServer`, closed after the test."""
    servers: list[ModelServer] = []

    def start(*script: ScriptItem, **options: Any) -> ModelServer:
        server = ModelServer(script, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., ModelClient]]:
    """`connect(provider, server, **options)`: a fast-retrying client of `server`, closed after."""
    clients: list[ModelClient] = []

    def make(provider: str, server: ModelServer | None = None, **options: Any) -> ModelClient:
        options.setdefault("retry_delay", 0.01)
        options.setdefault("timeout", 5.0)
        options.setdefault("max_retries", 2)
        if server is not None:
            options.setdefault("base_url", server.base_url(provider))
        client = ModelClient(provider, MODEL, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Transcripts and user config go to the test's own folder, never the real home."""
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def server() -> Iterator[ModelServer]:
    """A scripted model server with an empty script (`server.push(...)` adds replies)."""
    with ModelServer([]) as started:
        yield started


@pytest.fixture
def client(server: ModelServer, connect: Callable[..., ModelClient]) -> Callable[..., ModelClient]:
    """`client(provider="openai_chat", **options)`: a client of `server`, closed after."""

    def make(provider: str = "openai_chat", **options: Any) -> ModelClient:
        return connect(provider, server, **options)

    return make


# -- requests and what comes back ------------------------------------------------------------


def ask(
    *messages: Message, system: str = SYSTEM, tools: Sequence[Tool] = TOOLS, **options: Any
) -> ModelRequest:
    """A request: the given messages (default: one user prompt), the system prompt, two tools."""
    return ModelRequest(
        model=MODEL,
        system=system,
        messages=messages or (UserMessage(text="Fix the failing test."),),
        tools=tools,
        **options,
    )


Item = TextDelta | ReasoningDelta | CallReady | ModelRetry | AssistantMessage


@dataclass
class Seen:
    """What `respond` yielded, each item with its arrival time (`time.monotonic()`)."""

    items: list[Item] = field(default_factory=list[Item])
    times: list[float] = field(default_factory=list[float])

    def add(self, item: Item) -> None:
        self.items.append(item)
        self.times.append(time.monotonic())

    @property
    def message(self) -> AssistantMessage:
        last = self.items[-1]
        assert isinstance(last, AssistantMessage), f"the last item is {last!r}"
        return last

    def kinds(self) -> list[str]:
        """Item type names in order, repeats collapsed (`TextDelta` x 40 is one entry)."""
        out: list[str] = []
        for item in self.items:
            name = type(item).__name__
            if not out or out[-1] != name:
                out.append(name)
        return out

    def text(self) -> str:
        return "".join(i.text for i in self.items if isinstance(i, TextDelta))

    def reasoning(self) -> str:
        return "".join(i.text for i in self.items if isinstance(i, ReasoningDelta))

    def calls(self) -> list[ToolCall]:
        return [i.call for i in self.items if isinstance(i, CallReady)]

    def retries(self) -> list[ModelRetry]:
        return [i for i in self.items if isinstance(i, ModelRetry)]

    def time_of(self, predicate: Callable[[Item], bool]) -> float:
        return next(t for i, t in zip(self.items, self.times, strict=True) if predicate(i))


async def respond(
    client: ModelClient,
    request: ModelRequest | None = None,
    *,
    seen: Seen | None = None,
    limit: float = 10.0,
) -> Seen:
    """Every item of one `client.respond(request)`, within `limit` seconds.

    Pass `seen` to keep the items yielded before a `ModelError`.
    """
    seen = seen if seen is not None else Seen()
    async with asyncio.timeout(limit):
        async with contextlib.aclosing(client.respond(request or ask())) as items:
            async for item in items:
                seen.add(item)
    return seen
