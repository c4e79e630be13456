r"""Gemini: `GenerateContentResponse` chunks (SSE or a JSON array), whole responses, errors.

As the API does: events end in `\r\n\r\n`; thought parts (`"thought": true`) come first;
every `functionCall` arrives whole, all of a turn's calls in the last chunk; `finishReason`
is `STOP` for tool calls too; `usageMetadata` is on every chunk, complete on the last.
A bad key is a 400 `API_KEY_INVALID`, a missing one a 403 (Gemini never answers 401).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._render import Context, Event, dumps, pieces
from ._script import Reply

__all__ = ["GeminiRenderer", "gemini_array"]

_STOPS = {"end": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS"}

_STATUS: dict[int, tuple[str, str]] = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "Request had invalid authentication credentials."),
    403: ("PERMISSION_DENIED", "The caller does not have permission."),
    404: ("NOT_FOUND", "Requested entity was not found."),
    409: ("ABORTED", "The operation was aborted."),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    499: ("CANCELLED", "The operation was cancelled."),
    500: ("INTERNAL", "An internal error has occurred. Please retry or report it."),
    501: ("NOT_IMPLEMENTED", "Method not implemented."),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
    504: ("DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
}

_NO_KEY = (
    "Method doesn't allow unregistered callers (callers without established identity). "
    "Please use API Key or other form of API consumer identity to call this API."
)
_BAD_KEY = "API key not valid. Please pass a valid API key."


def _usage(reply: Reply, final: bool) -> dict[str, Any]:
    usage: dict[str, Any] = {"promptTokenCount": reply.input_tokens}
    if final:
        usage["candidatesTokenCount"] = reply.output_tokens - reply.reasoning_tokens
        usage["totalTokenCount"] = reply.input_tokens + reply.output_tokens
    else:
        usage["totalTokenCount"] = reply.input_tokens
    if reply.cached_tokens:  # proto3 JSON leaves zero counts out
        usage["cachedContentTokenCount"] = reply.cached_tokens
    usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": reply.input_tokens}]
    if final and reply.reasoning_tokens:
        usage["thoughtsTokenCount"] = reply.reasoning_tokens
    return usage


def _call_part(reply: Reply, index: int) -> dict[str, Any]:
    call = reply.tool_calls[index]
    function: dict[str, Any] = {"name": call.name, "args": call.arguments_object()}
    if call.id is not None:
        function["id"] = call.id
    return {"functionCall": function}


class GeminiRenderer:
    """`POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`."""

    provider = "gemini"
    line_end = "\r\n"
    stream_content_type = "text/event-stream"

    def _chunks(self, reply: Reply, ctx: Context) -> list[dict[str, Any]]:
        size = reply.chunk_size
        part_lists: list[list[dict[str, Any]]] = [
            [{"text": p, "thought": True}] for p in pieces(reply.reasoning, size)
        ]
        text_start = len(part_lists)
        part_lists += [[{"text": p}] for p in pieces(reply.text, size)]
        if reply.tool_calls:
            part_lists.append([_call_part(reply, i) for i in range(len(reply.tool_calls))])
        if not part_lists:
            part_lists.append([{"text": ""}])
        if reply.reasoning:
            # The signature rides on the first call, or on the first answer part.
            target = len(part_lists) - 1 if reply.tool_calls else text_start
            if target < len(part_lists):
                part_lists[target][0]["thoughtSignature"] = ctx.ids.signature()
        response_id = ctx.ids.make("", 23)
        chunks: list[dict[str, Any]] = []
        for n, parts in enumerate(part_lists):
            final = n == len(part_lists) - 1
            candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
            if final:
                candidate["finishReason"] = _STOPS.get(reply.stop_kind, reply.stop_kind)
            candidate["index"] = 0
            chunks.append(
                {
                    "candidates": [candidate],
                    "usageMetadata": _usage(reply, final),
                    "modelVersion": ctx.model,
                    "responseId": response_id,
                }
            )
        return chunks

    def events(self, reply: Reply, ctx: Context) -> list[Event]:
        """One `data:` event per chunk; the last one (with `finishReason`) is final."""
        chunks = self._chunks(reply, ctx)
        last = len(chunks) - 1
        return [Event(dumps(c, spaced=True), final=i == last) for i, c in enumerate(chunks)]

    def body(self, reply: Reply, ctx: Context) -> dict[str, Any]:
        """The whole response: the chunks' parts merged, adjacent text joined."""
        chunks = self._chunks(reply, ctx)
        parts: list[dict[str, Any]] = []
        for chunk in chunks:
            for part in chunk["candidates"][0]["content"]["parts"]:
                previous = parts[-1] if parts else None
                joinable = (
                    previous is not None
                    and "text" in part
                    and "text" in previous
                    and previous.get("thought") == part.get("thought")
                    and "thoughtSignature" not in part
                )
                if previous is not None and joinable:
                    previous["text"] += part["text"]
                else:
                    parts.append(dict(part))
        whole = chunks[-1]
        whole["candidates"][0]["content"]["parts"] = parts
        return whole

    def error(self, status: int, message: str) -> dict[str, Any]:
        """`{"error": {"code", "message", "status"}}`."""
        name, default = _STATUS.get(
            status, ("INTERNAL", _STATUS[500][1]) if status >= 500 else ("FAILED_PRECONDITION", "")
        )
        return {"error": {"code": status, "message": message or default, "status": name}}

    def auth_failure(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str
    ) -> tuple[int, dict[str, Any]] | None:
        """`x-goog-api-key` header or `key=` query: 403 without one, 400 for a wrong one."""
        given = headers.get("x-goog-api-key") or query.get("key")
        if given == key:
            return None
        if not given:
            return 403, self.error(403, _NO_KEY)
        body = self.error(400, _BAD_KEY)
        body["error"]["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ]
        return 400, body

    def request_id_header(self) -> str:
        """None here: Gemini's id is the body's `responseId`."""
        return ""


def gemini_array(events: list[Event]) -> list[str]:
    """`:streamGenerateContent` without `alt=sse`: one JSON array, a piece per event.

    The last piece closes the array, so it is the final marker.
    """
    bodies = [json.dumps(json.loads(e.data), ensure_ascii=False, indent=2) for e in events]
    out = [("[" if i == 0 else ",\r\n") + b for i, b in enumerate(bodies)]
    out[-1] += "\n]"
    return out
