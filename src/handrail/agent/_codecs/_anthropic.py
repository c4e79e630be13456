"""Anthropic Messages on the wire (`POST {base}/messages`), with prompt caching marks.

The system prompt, the last tool and the newest message carry `cache_control`, so the stable
prefix (system + tools in the registry's fixed order + history) is read from the cache on every
turn after the first. Signed thinking blocks are echoed back unchanged, as the API requires
when a turn with tool use continues.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...providers import AnthropicStream, anthropic_results, anthropic_tools, parse_anthropic
from ...providers._common import as_list, as_map, as_str
from .._conversation import AssistantMessage, Usage, UserMessage
from .._events import ReasoningDelta, TextDelta
from .._sse import SseEvent
from ._base import (
    CallReady,
    Decoder,
    ModelRequest,
    StreamItem,
    ToolsPayload,
    arguments_object,
    load_event,
    merge_roles,
    stream_error,
    usage_int,
)

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 16_000
_CACHE = {"type": "ephemeral"}
_STOPS = {
    "end_turn": "end",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
    "stop_sequence": "end",
    "refusal": "refusal",
    "pause_turn": "pause",
}


class AnthropicCodec:
    """Messages API: `system` blocks, `tool_use` / `tool_result` blocks, typed SSE events."""

    provider = "anthropic"
    default_base_url = "https://api.anthropic.com/v1"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(self) -> None:
        self._tools_payload = ToolsPayload(anthropic_tools)

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        return base_url.rstrip("/") + "/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        calls: tuple[Any, ...] = ()
        for m in request.messages:
            if isinstance(m, UserMessage):
                if m.text:
                    messages.append({"role": "user", "content": [{"type": "text", "text": m.text}]})
            elif isinstance(m, AssistantMessage):
                blocks: list[dict[str, Any]] = []
                if m.provider == "anthropic":
                    blocks.extend(dict(b) for b in map(as_map, as_list(m.raw)) if b is not None)
                if m.text:
                    blocks.append({"type": "text", "text": m.text})
                blocks.extend(
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(c)}
                    for c in m.calls
                )
                if blocks:
                    messages.append({"role": "assistant", "content": blocks})
                calls = m.calls
            elif calls:
                messages.append(anthropic_results(m.results, calls=calls, locale=request.locale))
                calls = ()
        messages = merge_roles(messages, "content")
        if messages and messages[0]["role"] != "user":
            messages.insert(
                0, {"role": "user", "content": [{"type": "text", "text": "(continue)"}]}
            )
        if messages:
            last = messages[-1]["content"]
            last[-1] = {**last[-1], "cache_control": _CACHE}
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
            "messages": messages,
        }
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": _CACHE}]
        if request.tools:
            tools = self._tools_payload(request.tools)
            tools[-1] = {**tools[-1], "cache_control": _CACHE}
            body["tools"] = tools
        if stream:
            body["stream"] = True
        body.update(request.extra)
        return body

    def decoder(self, request: ModelRequest) -> Decoder:
        return _AnthropicDecoder(request)

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> Decoder:
        d = _AnthropicDecoder(request)
        d.take_whole(data)
        return d


def _input_usage(raw: Mapping[str, Any]) -> tuple[int, int]:
    """(all input tokens, cached ones): the API counts cache reads and writes apart."""
    read = usage_int(raw.get("cache_read_input_tokens"))
    written = usage_int(raw.get("cache_creation_input_tokens"))
    return usage_int(raw.get("input_tokens")) + read + written, read


class _AnthropicDecoder(Decoder):
    def __init__(self, request: ModelRequest) -> None:
        super().__init__("anthropic", request.model)
        self._parser = AnthropicStream()
        self._blocks: dict[int, dict[str, Any]] = {}
        self._thinking: list[dict[str, Any]] = []

    def feed(self, event: SseEvent) -> list[StreamItem]:
        data = load_event(event)
        kind = as_str(data.get("type")) or event.event
        out: list[StreamItem] = []
        if kind == "message_start":
            message = as_map(data.get("message")) or {}
            usage = as_map(message.get("usage")) or {}
            total, cached = _input_usage(usage)
            self.usage = Usage(
                input_tokens=total,
                output_tokens=usage_int(usage.get("output_tokens")),
                cached_tokens=cached,
                requests=1,
            )
        elif kind == "content_block_start":
            block = as_map(data.get("content_block")) or {}
            index = data.get("index")
            if isinstance(index, int) and block.get("type") in ("thinking", "redacted_thinking"):
                self._blocks[index] = dict(block)
        elif kind == "content_block_delta":
            delta = as_map(data.get("delta")) or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                text = as_str(delta.get("text"))
                if text:
                    self.text.append(text)
                    out.append(TextDelta(text=text))
            elif dtype in ("thinking_delta", "signature_delta"):
                index = data.get("index")
                block = self._blocks.get(index) if isinstance(index, int) else None
                key = "thinking" if dtype == "thinking_delta" else "signature"
                piece = as_str(delta.get(key))
                if block is not None:
                    block[key] = as_str(block.get(key)) + piece
                if dtype == "thinking_delta" and piece:
                    self.reasoning.append(piece)
                    out.append(ReasoningDelta(text=piece))
        elif kind == "content_block_stop":
            index = data.get("index")
            block = self._blocks.pop(index, None) if isinstance(index, int) else None
            if block is not None:
                self._thinking.append(block)
        elif kind == "message_delta":
            delta = as_map(data.get("delta")) or {}
            reason = as_str(delta.get("stop_reason"))
            if reason:
                self.stop = _STOPS.get(reason, reason)
            usage = as_map(data.get("usage")) or {}
            if "output_tokens" in usage:
                self.usage = Usage(
                    input_tokens=self.usage.input_tokens,
                    output_tokens=usage_int(usage.get("output_tokens")),
                    cached_tokens=self.usage.cached_tokens,
                    requests=1,
                )
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            raise stream_error(data)
        if kind in ("content_block_stop", "message_stop"):
            out.extend(self._call(c) for c in self._parser.feed(data))
        else:
            self._parser.feed(data)
        self.raw = list(self._thinking) or None
        return out

    def close(self, *, cut: bool) -> list[CallReady]:
        return [] if not self.complete else [self._call(c) for c in self._parser.finish()]

    def take_whole(self, data: Mapping[str, Any]) -> None:
        if data.get("type") == "error":
            raise stream_error(data)
        usage = as_map(data.get("usage")) or {}
        total, cached = _input_usage(usage)
        self.usage = Usage(
            input_tokens=total,
            output_tokens=usage_int(usage.get("output_tokens")),
            cached_tokens=cached,
            requests=1,
        )
        for raw in as_list(data.get("content")):
            block = as_map(raw) or {}
            if block.get("type") == "text":
                self.text.append(as_str(block.get("text")))
            elif block.get("type") in ("thinking", "redacted_thinking"):
                self._thinking.append(dict(block))
                self.reasoning.append(as_str(block.get("thinking")))
        for call in parse_anthropic(data):
            self._call(call)
        reason = as_str(data.get("stop_reason"))
        self.stop = _STOPS.get(reason, reason)
        self.raw = list(self._thinking) or None
        self.complete = True
