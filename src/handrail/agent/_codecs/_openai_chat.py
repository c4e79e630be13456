"""Chat Completions on the wire (OpenAI, DeepSeek, vLLM, llama.cpp, Ollama, OpenRouter, ...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ...providers import OpenAIChatStream, openai_chat_results, openai_chat_tools, parse_openai_chat
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
    arguments_text,
    load_event,
    stream_error,
    usage_int,
)

_STOPS = {
    "stop": "end",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _usage(raw: Mapping[str, Any]) -> Usage:
    details = as_map(raw.get("prompt_tokens_details")) or {}
    cached = usage_int(details.get("cached_tokens")) or usage_int(
        raw.get("prompt_cache_hit_tokens")
    )
    return Usage(
        input_tokens=usage_int(raw.get("prompt_tokens")),
        output_tokens=usage_int(raw.get("completion_tokens")),
        cached_tokens=cached,
        requests=1,
    )


class OpenAIChatCodec:
    """`POST {base}/chat/completions`, streamed with `stream_options.include_usage`."""

    provider = "openai_chat"
    default_base_url = "https://api.openai.com/v1"
    key_env = "OPENAI_API_KEY"

    def __init__(self, base_url: str = default_base_url) -> None:
        # OpenAI's own API wants max_completion_tokens (reasoning models refuse max_tokens);
        # the compatible servers (vLLM, llama.cpp, Ollama, DeepSeek) know max_tokens.
        host = urlsplit(base_url).hostname or ""
        self._max_tokens = "max_completion_tokens" if host.endswith("openai.com") else "max_tokens"
        self._tools_payload = ToolsPayload(openai_chat_tools)

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        calls: tuple[Any, ...] = ()
        # DeepSeek's thinking mode wants the reasoning of the current task's tool-calling turns
        # back (and refuses it from earlier tasks): echoed after the last prompt only.
        last_prompt = max(
            (i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)), default=-1
        )
        for index, m in enumerate(request.messages):
            if isinstance(m, UserMessage):
                messages.append({"role": "user", "content": m.text})
            elif isinstance(m, AssistantMessage):
                item: dict[str, Any] = {"role": "assistant", "content": m.text or None}
                echoed = as_map(m.raw) if m.provider == "openai_chat" else None
                if m.calls and index > last_prompt and echoed and "reasoning_content" in echoed:
                    item["reasoning_content"] = as_str(echoed["reasoning_content"])
                if m.calls:
                    item["tool_calls"] = [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": arguments_text(c)},
                        }
                        for c in m.calls
                    ]
                elif not m.text:
                    item["content"] = ""
                messages.append(item)
                calls = m.calls
            elif calls:
                messages.extend(openai_chat_results(m.results, calls=calls, locale=request.locale))
                calls = ()
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.tools:
            body["tools"] = self._tools_payload(request.tools)
        if request.max_output_tokens is not None:
            body[self._max_tokens] = request.max_output_tokens
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(request.extra)
        return body

    def decoder(self, request: ModelRequest) -> Decoder:
        return _ChatDecoder(request)

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> Decoder:
        d = _ChatDecoder(request)
        d.take_whole(data)
        return d


class _ChatDecoder(Decoder):
    def __init__(self, request: ModelRequest) -> None:
        super().__init__("openai_chat", request.model)
        self._tools = request.tools
        self._parser = OpenAIChatStream(tools=request.tools)
        self._native_reasoning = False
        self._finished = False

    def feed(self, event: SseEvent) -> list[StreamItem]:
        if event.data.strip() == "[DONE]":
            self.complete = True
            return []
        chunk = load_event(event)
        if "error" in chunk:
            raise stream_error(chunk)
        out: list[StreamItem] = []
        usage = as_map(chunk.get("usage"))
        if usage is not None:
            self.usage = _usage(usage)
        choices = as_list(chunk.get("choices"))
        choice = as_map(choices[0]) if choices else None
        if choice is not None:
            delta = as_map(choice.get("delta")) or {}
            native = as_str(delta.get("reasoning_content"))
            reasoning = native or as_str(delta.get("reasoning"))
            if reasoning:
                self.reasoning.append(reasoning)
                out.append(ReasoningDelta(text=reasoning))
            if native:
                self._native_reasoning = True
            text = as_str(delta.get("content"))
            if text:
                self.text.append(text)
                out.append(TextDelta(text=text))
            reason = choice.get("finish_reason")
            if reason:
                self.stop = _STOPS.get(str(reason), str(reason))
                self._finished = True
        out.extend(self._call(c) for c in self._parser.feed(chunk))
        return out

    def close(self, *, cut: bool) -> list[CallReady]:
        # Servers that end without [DONE] still said finish_reason: that is a whole answer.
        self.complete = self.complete or self._finished
        if not self.complete:
            return []
        return [self._call(c) for c in self._parser.finish()]

    def message(self) -> AssistantMessage:
        """The response; DeepSeek-style `reasoning_content` is kept to be echoed back."""
        if self._native_reasoning:
            self.raw = {"reasoning_content": "".join(self.reasoning)}
        return super().message()

    def take_whole(self, data: Mapping[str, Any]) -> None:
        if "error" in data and "choices" not in data:
            raise stream_error(data)
        usage = as_map(data.get("usage"))
        if usage is not None:
            self.usage = _usage(usage)
        choices = as_list(data.get("choices"))
        choice: Mapping[str, Any] = (as_map(choices[0]) if choices else None) or {}
        message = as_map(choice.get("message")) or {}
        self.text.append(as_str(message.get("content")))
        native = as_str(message.get("reasoning_content"))
        self.reasoning.append(native or as_str(message.get("reasoning")))
        self._native_reasoning = bool(native)
        for call in parse_openai_chat(message, tools=self._tools):
            self._call(call)
        reason = as_str(choice.get("finish_reason"))
        self.stop = _STOPS.get(reason, reason)
        self.complete = True
