"""Real HTTP against `ModelServer`: an httpx client, minimal requests per provider, an SSE reader."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from handrail.testing import ModelServer, ScriptItem

PROVIDERS = ["openai_chat", "openai_responses", "anthropic", "gemini"]

TIMEOUT = httpx.Timeout(5.0)


@dataclass
class Answer:
    """What a client saw: status, headers, the JSON body or the stream's events."""

    status: int
    headers: httpx.Headers
    body: Any = None
    events: list[tuple[str | None, str]] = field(default_factory=list)
    complete: bool = True  # False: the body ended before its end (a dropped stream)
    raw: bytes = b""

    def data(self) -> list[Any]:
        """The events' JSON payloads (markers such as `[DONE]` left out)."""
        out: list[Any] = []
        for _, data in self.events:
            if data != "[DONE]":
                out.append(json.loads(data))
        return out


def sse_events(lines: Iterator[str]) -> list[tuple[str | None, str]]:
    """(event name, data) pairs from SSE lines, the way a browser's EventSource splits them."""
    events: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                events.append((name, "\n".join(data)))
            name, data = None, []
        elif line.startswith("event:"):
            name = line[6:].removeprefix(" ")
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        events.append((name, "\n".join(data)))
    return events


def request(provider: str, *, stream: bool, **extra: Any) -> tuple[str, dict[str, Any]]:
    """The path (below the base URL) and a minimal valid body for `provider`."""
    user = {"role": "user", "content": "Hi"}
    if provider == "openai_chat":
        body: dict[str, Any] = {"model": "gpt-test", "messages": [user]}
        if stream:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        return "/chat/completions", body | extra
    if provider == "openai_responses":
        body = {"model": "gpt-test", "input": [user]}
        return "/responses", body | ({"stream": True} if stream else {}) | extra
    if provider == "anthropic":
        body = {"model": "claude-test", "max_tokens": 1024, "messages": [user]}
        return "/messages", body | ({"stream": True} if stream else {}) | extra
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    path = "/models/gemini-test:" + (
        "streamGenerateContent?alt=sse" if stream else "generateContent"
    )
    return path, body | extra


Ask = Callable[..., Answer]


def ask_with(client: httpx.Client, base: str) -> Ask:
    """`ask(provider, stream=..., body=..., path=..., headers=...)` against the server at `base`."""

    def ask(
        provider: str,
        *,
        stream: bool = False,
        body: Any = None,
        path: str | None = None,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
        **extra: Any,
    ) -> Answer:
        default_path, default_body = request(provider, stream=stream, **extra)
        base_path = {"gemini": "/v1beta"}.get(provider, "/v1")
        url = base + base_path + (path if path is not None else default_path)
        kwargs: dict[str, Any] = {"headers": headers or {}}
        if content is not None:
            kwargs["content"] = content
        else:
            kwargs["json"] = default_body if body is None else body
        with client.stream("POST", url, **kwargs) as r:
            answer = Answer(status=r.status_code, headers=r.headers)
            kind = r.headers.get("content-type", "")
            if "text/event-stream" in kind:
                lines: list[str] = []
                try:
                    for line in r.iter_lines():
                        lines.append(line)
                except httpx.RemoteProtocolError:
                    answer.complete = False
                answer.events = sse_events(iter(lines))
                return answer
            try:
                answer.raw = r.read()
            except httpx.RemoteProtocolError:
                answer.complete = False
                return answer
            if "json" in kind:
                try:
                    answer.body = json.loads(answer.raw)
                except ValueError:
                    answer.body = None
            return answer

    return ask


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    # Plain http: verify=False only skips loading the CA bundle (~60 ms a client).
    with httpx.Client(timeout=TIMEOUT, verify=False) as c:
        yield c


Serve = Callable[..., tuple[ModelServer, Ask]]


@pytest.fixture
def serve(client: httpx.Client) -> Iterator[Serve]:
    """`server, ask = serve(*items, **options)`: a started server (closed after the test)."""
    servers: list[ModelServer] = []

    def start(*items: ScriptItem, **options: Any) -> tuple[ModelServer, Ask]:
        server = ModelServer(items, **options).start()
        servers.append(server)
        return server, ask_with(client, server.url)

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def sse() -> Callable[[Iterator[str]], list[tuple[str | None, str]]]:
    """The SSE line splitter, for tests that read a stream themselves."""
    return sse_events
