"""Gemini `generateContent` / `streamGenerateContent?alt=sse` on the wire.

The model's own parts (with their thought signatures) are echoed back unchanged when the
conversation goes to Gemini again: Gemini refuses a function-calling turn whose signatures
are missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from ...providers import GeminiStream, gemini_results, gemini_tools
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

_STOPS = {
    "STOP": "end",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "MALFORMED_FUNCTION_CALL": "malformed_call",
}


class GeminiCodec:
    """Gemini API: `contents` with `user` / `model` roles, `functionCall` parts, SSE chunks."""

    provider = "gemini"
    default_base_url = "https://generativelanguage.googleapis.com/v1beta"
    key_env = "GEMINI_API_KEY"

    def __init__(self) -> None:
        self._tools_payload = ToolsPayload(gemini_tools)

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{base_url.rstrip('/')}/{quote(name, safe='/')}:{method}"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        contents: list[dict[str, Any]] = []
        calls: tuple[Any, ...] = ()
        for m in request.messages:
            if isinstance(m, UserMessage):
                if m.text:
                    contents.append({"role": "user", "parts": [{"text": m.text}]})
            elif isinstance(m, AssistantMessage):
                parts: list[dict[str, Any]] = []
                if m.provider == "gemini" and as_list(m.raw):
                    parts = [dict(p) for p in map(as_map, as_list(m.raw)) if p is not None]
                else:
                    if m.text:
                        parts.append({"text": m.text})
                    for c in m.calls:
                        fc: dict[str, Any] = {"name": c.name, "args": arguments_object(c)}
                        if c.id and not c.id.startswith("handrail-gemini-"):
                            fc["id"] = c.id
                        parts.append({"functionCall": fc})
                if parts:
                    contents.append({"role": "model", "parts": parts})
                calls = m.calls
            elif calls:
                contents.append(gemini_results(m.results, calls=calls, locale=request.locale))
                calls = ()
        body: dict[str, Any] = {"contents": merge_roles(contents, "parts")}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = self._tools_payload(request.tools)
        if request.max_output_tokens is not None:
            body["generationConfig"] = {"maxOutputTokens": request.max_output_tokens}
        body.update(request.extra)
        return body

    def decoder(self, request: ModelRequest) -> Decoder:
        return _GeminiDecoder(request)

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> Decoder:
        d = _GeminiDecoder(request)
        d.take(data)
        d.complete = True
        return d


class _GeminiDecoder(Decoder):
    def __init__(self, request: ModelRequest) -> None:
        super().__init__("gemini", request.model)
        self._parser = GeminiStream()
        self._parts: list[dict[str, Any]] = []

    def feed(self, event: SseEvent) -> list[StreamItem]:
        return self.take(load_event(event))

    def take(self, chunk: Mapping[str, Any]) -> list[StreamItem]:
        if "error" in chunk:
            raise stream_error(chunk)
        out: list[StreamItem] = []
        usage = as_map(chunk.get("usageMetadata"))
        if usage is not None:
            self.usage = Usage(
                input_tokens=usage_int(usage.get("promptTokenCount")),
                output_tokens=usage_int(usage.get("candidatesTokenCount"))
                + usage_int(usage.get("thoughtsTokenCount")),
                cached_tokens=usage_int(usage.get("cachedContentTokenCount")),
                requests=1,
            )
        candidates = as_list(chunk.get("candidates"))
        candidate = (as_map(candidates[0]) if candidates else None) or {}
        content = as_map(candidate.get("content")) or {}
        for raw in as_list(content.get("parts")):
            part = as_map(raw)
            if part is None:
                continue
            self._keep(dict(part))
            text = as_str(part.get("text"))
            if text and part.get("thought") is True:
                self.reasoning.append(text)
                out.append(ReasoningDelta(text=text))
            elif text:
                self.text.append(text)
                out.append(TextDelta(text=text))
        out.extend(self._call(c) for c in self._parser.feed(chunk))
        reason = as_str(candidate.get("finishReason"))
        if reason:
            # STOP ends tool-calling turns too: `message()` tells the two apart by the calls.
            self.stop = _STOPS.get(reason, reason.lower())
            self.complete = True
        feedback = as_map(chunk.get("promptFeedback")) or {}
        if feedback.get("blockReason"):
            self.stop, self.complete = "refusal", True
        self.raw = self._parts or None
        return out

    def _keep(self, part: dict[str, Any]) -> None:
        # Text arrives in many small parts; one part per run of plain text is what goes back.
        prev = self._parts[-1] if self._parts else None
        plain = set(part) <= {"text", "thought"}
        if (
            prev is not None
            and plain
            and set(prev) <= {"text", "thought"}
            and "text" in prev
            and "text" in part
            and bool(prev.get("thought")) == bool(part.get("thought"))
        ):
            prev["text"] = as_str(prev["text"]) + as_str(part["text"])
            return
        self._parts.append(part)

    def close(self, *, cut: bool) -> list[CallReady]:
        return []
