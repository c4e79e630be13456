"""The script player: route a request, record it, check it, and answer from the script."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ._checks import check
from ._http import Abort, Handler, read_body, send, send_json, write_chunk, write_last_chunk
from ._render import Context, Event, Ids, Renderer, obj, text
from ._render_anthropic import AnthropicRenderer
from ._render_gemini import GeminiRenderer, gemini_array
from ._render_openai_chat import OpenAIChatRenderer
from ._render_openai_responses import OpenAIResponsesRenderer
from ._script import MAX_SLEEP, Fault, RecordedRequest, Reply, ScriptItem

__all__ = ["BASES", "Player"]

_PATHS = {
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
    "/v1/messages": "anthropic",
}
_GEMINI_PATH = re.compile(
    r"^/v1beta/models/(?P<model>[^/:]+):(?P<verb>generateContent|streamGenerateContent)$"
)
BASES = {
    "openai_chat": "/v1",
    "openai_responses": "/v1",
    "anthropic": "/v1",
    "gemini": "/v1beta",
}
"""Each provider's base path, below the server's URL."""
_MALFORMED = '{"handrail.testing": "this line is not JSON'


def _route(method: str, path: str) -> tuple[str | None, str | None, bool]:
    """The provider, the model named in the path (Gemini) and whether the path streams."""
    if method != "POST":
        return None, None, False
    provider = _PATHS.get(path)
    if provider is not None:
        return provider, None, False
    match = _GEMINI_PATH.match(path)
    if match is not None:
        return "gemini", unquote(match["model"]), match["verb"] == "streamGenerateContent"
    return None, None, False


def _seconds(value: float) -> str:
    """A `Retry-After` value written as given: `3`, `0.2`."""
    return str(int(value)) if float(value).is_integer() else str(value)


def _frame(event: Event, line_end: str) -> str:
    lines = [f"event: {event.name}"] if event.name else []
    lines.append(f"data: {event.data}")
    return line_end.join(lines) + line_end * 2


class Player:
    """The server's state and answers; `ModelServer` adds the socket and the thread."""

    def __init__(
        self, script: Iterable[ScriptItem], *, require_key: str | None, strict: bool, seed: int
    ) -> None:
        self.items: deque[ScriptItem] = deque(script)
        self.key = require_key
        self.strict = strict
        self.ids = Ids(seed)
        self.lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.problems: list[str] = []
        self.connections: set[socket.socket] = set()
        self.closing = threading.Event()
        self.renderers: dict[str, Renderer] = {
            w.provider: w
            for w in (
                OpenAIChatRenderer(),
                OpenAIResponsesRenderer(),
                AnthropicRenderer(),
                GeminiRenderer(),
            )
        }

    # -- the App protocol --------------------------------------------------------------------

    def track(self, sock: socket.socket, *, add: bool) -> None:
        """Note an open (or a finished) connection."""
        with self.lock:
            if add:
                self.connections.add(sock)
            else:
                self.connections.discard(sock)

    def problem(self, message: str) -> None:
        """Record a problem."""
        with self.lock:
            self.problems.append(message)

    def answer(self, h: Handler) -> None:
        """Record the request, refuse it where a provider would, else play the next item."""
        url = urlsplit(h.path)
        path = url.path
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        headers = {k.lower(): v for k, v in h.headers.items()}
        raw = read_body(h)
        provider, path_model, path_streams = _route(h.command, path)
        try:
            body: Any = json.loads(raw) if raw else None
            is_json = raw != b""
        except ValueError:
            body, is_json = None, False
        request = obj(body) or {}
        streams = path_streams if provider == "gemini" else request.get("stream") is True
        record = RecordedRequest(
            provider=provider,
            method=h.command,
            path=path,
            query=query,
            headers=headers,
            body=body,
            raw=raw,
            stream=streams,
            model=path_model or text(request.get("model")) or None,
        )
        with self.lock:
            self.requests.append(record)
            label = f"request {len(self.requests)} ({h.command} {path})"
        if provider is None:
            self.problem(f"{label}: no such endpoint")
            message = f"handrail.testing: no endpoint for {h.command} {path}"
            send_json(h, 404, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        renderer = self.renderers[provider]
        if self.key is not None:
            failure = renderer.auth_failure(headers, query, self.key)
            if failure is not None:
                self._json(h, renderer, *failure)
                return
        if not is_json:
            self.problem(f"{label}: the body is not JSON")
            self._json(h, renderer, 400, renderer.error(400, "The request body is not valid JSON."))
            return
        found = check(provider, body)
        for problem in found:
            self.problem(f"{label}: {problem}")
        if found and self.strict:
            self._json(
                h, renderer, 400, renderer.error(400, "handrail.testing: " + "; ".join(found))
            )
            return
        self._play(h, renderer, record, label)

    # -- answers -----------------------------------------------------------------------------

    def _sleep(self, seconds: float) -> None:
        """Wait, bounded and cut short by closing (which aborts the answer)."""
        if self.closing.is_set() or (seconds > 0 and self.closing.wait(min(seconds, MAX_SLEEP))):
            raise Abort

    def _json(
        self,
        h: Handler,
        renderer: Renderer,
        status: int,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
    ) -> None:
        out = dict(headers or {})
        if renderer.request_id_header():
            out.setdefault(renderer.request_id_header(), self.ids.make("req_"))
        send_json(h, status, body, out)

    def _play(self, h: Handler, renderer: Renderer, record: RecordedRequest, label: str) -> None:
        with self.lock:
            item = self.items.popleft() if self.items else None
        if item is None:
            self.problem(f"{label}: script exhausted")
            message = "handrail.testing: script exhausted: no reply left for this request"
            self._json(h, renderer, 500, renderer.error(500, message))
            return
        if not isinstance(item, Reply | Fault):
            try:
                item = item(record)
            except Exception as exc:
                self.problem(f"{label}: the script function raised {exc!r}")
                self._json(h, renderer, 500, renderer.error(500, f"handrail.testing: {exc!r}"))
                return
            if not isinstance(item, Reply | Fault):  # pyright: ignore[reportUnnecessaryIsInstance]
                self.problem(
                    f"{label}: the script function returned {item!r}, not a Reply or Fault"
                )
                self._json(
                    h, renderer, 500, renderer.error(500, "handrail.testing: bad script item")
                )
                return
        if isinstance(item, Fault):
            self._fault(h, renderer, item)
            return
        ctx = Context.of(record.model, record.body, self.ids)
        if not record.stream:
            self._sleep(item.first_delay)
            self._json(h, renderer, 200, renderer.body(item, ctx))
            return
        sse = renderer.provider != "gemini" or record.query.get("alt") == "sse"
        self._stream(h, renderer, item, renderer.events(item, ctx), sse)

    def _fault(self, h: Handler, renderer: Renderer, fault: Fault) -> None:
        self._sleep(fault.first_delay)
        if fault.disconnect:
            raise Abort
        headers = dict(fault.headers)
        if fault.retry_after is not None:
            headers.setdefault("Retry-After", _seconds(fault.retry_after))
        if isinstance(fault.body, bytes):
            headers.setdefault("Content-Type", "text/plain; charset=utf-8")
            send(h, fault.status, fault.body, headers)
            return
        if isinstance(fault.body, Mapping):
            body = dict(fault.body)
        else:
            body = renderer.error(fault.status, fault.body or "")
        self._json(h, renderer, fault.status, body, headers)

    def _stream(
        self, h: Handler, renderer: Renderer, reply: Reply, events: list[Event], sse: bool
    ) -> None:
        self._sleep(reply.first_delay)
        frames = [_frame(e, renderer.line_end) for e in events] if sse else gemini_array(events)
        h.send_response(200)
        kind = renderer.stream_content_type if sse else "application/json; charset=UTF-8"
        h.send_header("Content-Type", kind)
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache")
        if renderer.request_id_header():
            h.send_header(renderer.request_id_header(), self.ids.make("req_"))
        h.end_headers()
        self._sleep(reply.hang)
        # A cut stream never carries its final marker.
        cut = None if reply.cut_after is None else min(reply.cut_after, len(frames) - 1)
        bad = _frame(Event(_MALFORMED), renderer.line_end) if sse else ",\r\n" + _MALFORMED
        for n, frame in enumerate(frames):
            if n == cut:
                raise Abort
            if n == reply.malformed_after:
                # Named like the event it stands before, so a client parses its data.
                named = Event(_MALFORMED, name=events[n].name)
                write_chunk(h, _frame(named, renderer.line_end) if sse else bad)
            self._sleep(reply.delay if n > 0 else 0)
            write_chunk(h, frame)
        if reply.malformed_after is not None and reply.malformed_after >= len(frames):
            write_chunk(h, bad)
        write_last_chunk(h)
