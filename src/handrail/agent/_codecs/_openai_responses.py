"""The OpenAI Responses API on the wire (`POST {base}/responses`, stateless: `store: false`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...providers import (
    OpenAIResponsesStream,
    openai_responses_results,
    openai_responses_tools,
    parse_openai_responses,
)
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


def _usage(raw: Mapping[str, Any]) -> Usage:
    details = as_map(raw.get("input_tokens_details")) or {}
    return Usage(
        input_tokens=usage_int(raw.get("input_tokens")),
        output_tokens=usage_int(raw.get("output_tokens")),
        cached_tokens=usage_int(details.get("cached_tokens")),
        requests=1,
    )


class OpenAIResponsesCodec:
    """Responses: `instructions` + `input` items, function tools, SSE with typed events."""

    provider = "openai_responses"
    default_base_url = "https://api.openai.com/v1"
    key_env = "OPENAI_API_KEY"

    def __init__(self) -> None:
        self._tools_payload = ToolsPayload(openai_responses_tools)

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        return base_url.rstrip("/") + "/responses"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        calls: tuple[Any, ...] = ()
        for m in request.messages:
            if isinstance(m, UserMessage):
                items.append({"role": "user", "content": m.text})
            elif isinstance(m, AssistantMessage):
                if m.text:
                    items.append({"role": "assistant", "content": m.text})
                items.extend(
                    {
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": arguments_text(c),
                    }
                    for c in m.calls
                )
                calls = m.calls
            elif calls:
                items.extend(
                    openai_responses_results(m.results, calls=calls, locale=request.locale)
                )
                calls = ()
        body: dict[str, Any] = {"model": request.model, "input": items, "store": False}
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = self._tools_payload(request.tools)
        if request.max_output_tokens is not None:
            body["max_output_tokens"] = request.max_output_tokens
        if stream:
            body["stream"] = True
        body.update(request.extra)
        return body

    def decoder(self, request: ModelRequest) -> Decoder:
        return _ResponsesDecoder(request)

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> Decoder:
        d = _ResponsesDecoder(request)
        d.take_response(data, whole=True)
        return d


class _ResponsesDecoder(Decoder):
    def __init__(self, request: ModelRequest) -> None:
        super().__init__("openai_responses", request.model)
        self._tools = request.tools
        self._parser = OpenAIResponsesStream(tools=request.tools)

    def feed(self, event: SseEvent) -> list[StreamItem]:
        data = load_event(event)
        kind = as_str(data.get("type")) or event.event
        out: list[StreamItem] = []
        if kind == "response.output_text.delta":
            text = as_str(data.get("delta"))
            if text:
                self.text.append(text)
                out.append(TextDelta(text=text))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            text = as_str(data.get("delta"))
            if text:
                self.reasoning.append(text)
                out.append(ReasoningDelta(text=text))
        elif kind in ("error", "response.failed"):
            response = as_map(data.get("response"))
            raise stream_error(response if response is not None else data)
        out.extend(self._call(c) for c in self._parser.feed(data))
        if kind in ("response.completed", "response.incomplete"):
            self.take_response(as_map(data.get("response")) or {}, whole=False)
        return out

    def take_response(self, response: Mapping[str, Any], *, whole: bool) -> None:
        if whole and "error" in response and response.get("error"):
            raise stream_error(response)
        usage = as_map(response.get("usage"))
        if usage is not None:
            self.usage = _usage(usage)
        if whole:
            for call in parse_openai_responses(response, tools=self._tools):
                self._call(call)
            for raw in as_list(response.get("output")):
                item = as_map(raw) or {}
                if item.get("type") == "reasoning":
                    for part in as_list(item.get("summary")):
                        self.reasoning.append(as_str((as_map(part) or {}).get("text")))
        if not self.text:
            # No deltas (non-streamed, or a server that only sends the final response).
            for raw in as_list(response.get("output")):
                item = as_map(raw) or {}
                if item.get("type") != "message":
                    continue
                for part in as_list(item.get("content")):
                    p = as_map(part) or {}
                    if p.get("type") == "output_text":
                        self.text.append(as_str(p.get("text")))
        status = as_str(response.get("status"))
        details = as_map(response.get("incomplete_details")) or {}
        if status == "incomplete" and as_str(details.get("reason")) == "max_output_tokens":
            self.stop = "max_tokens"
        elif status == "incomplete":
            self.stop = as_str(details.get("reason")) or "incomplete"
        self.complete = True

    def close(self, *, cut: bool) -> list[CallReady]:
        if not self.complete:
            return []
        return [self._call(c) for c in self._parser.finish()]
