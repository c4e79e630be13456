"""Anthropic Messages: named stream events (`message_start` ... `message_stop`), messages, errors.

Blocks come as the API sends them: a `thinking` block (its `signature_delta` just before the
block stops), a `text` block, then one `tool_use` block per call whose input streams as
`input_json_delta` fragments (the first one empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._render import Context, Event, Ids, dumps, pieces
from ._script import Reply

__all__ = ["AnthropicRenderer"]

_STOPS = {"end": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}

_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: (
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
    ),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}

_REQUEST_IDS = Ids(seed=529)


def _stop(reply: Reply) -> str:
    return _STOPS.get(reply.stop_kind, reply.stop_kind)


def _usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens - reply.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": reply.cached_tokens,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


class AnthropicRenderer:
    """`POST /v1/messages`."""

    provider = "anthropic"
    line_end = "\n"
    stream_content_type = "text/event-stream; charset=utf-8"

    def _ids(self, reply: Reply, ctx: Context) -> list[str]:
        return [
            c.id if c.id is not None else ctx.ids.make("toolu_01", 22) for c in reply.tool_calls
        ]

    def _message(self, reply: Reply, ctx: Context) -> dict[str, Any]:
        return {
            "id": ctx.ids.make("msg_01", 22),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
        }

    def events(self, reply: Reply, ctx: Context) -> list[Event]:
        """`message_start`, `ping`, the blocks, `message_delta`, `message_stop`."""
        out: list[Event] = []

        def emit(kind: str, final: bool = False, **fields: Any) -> None:
            out.append(Event(dumps({"type": kind, **fields}), name=kind, final=final))

        message = self._message(reply, ctx)
        message["usage"] = _usage(reply, min(1, reply.output_tokens))
        emit("message_start", message=message)
        emit("ping")
        size, index = reply.chunk_size, 0

        def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
            nonlocal index
            emit("content_block_start", index=index, content_block=start)
            for delta in deltas:
                emit("content_block_delta", index=index, delta=delta)
            emit("content_block_stop", index=index)
            index += 1

        if reply.reasoning:
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in pieces(reply.reasoning, size)
            ]
            deltas.append({"type": "signature_delta", "signature": ctx.ids.signature()})
            block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        if reply.text:
            deltas = [{"type": "text_delta", "text": p} for p in pieces(reply.text, size)]
            block({"type": "text", "text": ""}, deltas)
        for call, call_id in zip(reply.tool_calls, self._ids(reply, ctx), strict=True):
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(call.arguments_json(), size)
            ]
            block({"type": "tool_use", "id": call_id, "name": call.name, "input": {}}, deltas)
        usage = _usage(reply, reply.output_tokens)
        del usage["service_tier"]
        emit(
            "message_delta",
            delta={"stop_reason": _stop(reply), "stop_sequence": None},
            usage=usage,
        )
        emit("message_stop", final=True)
        return out

    def body(self, reply: Reply, ctx: Context) -> dict[str, Any]:
        """The whole `message`."""
        content: list[dict[str, Any]] = []
        if reply.reasoning:
            content.append(
                {"type": "thinking", "thinking": reply.reasoning, "signature": ctx.ids.signature()}
            )
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        for call, call_id in zip(reply.tool_calls, self._ids(reply, ctx), strict=True):
            content.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": call.name,
                    "input": call.arguments_object(),
                }
            )
        message = self._message(reply, ctx)
        message["content"] = content
        message["stop_reason"] = _stop(reply)
        message["usage"] = _usage(reply, reply.output_tokens)
        return message

    def error(self, status: int, message: str) -> dict[str, Any]:
        """`{"type": "error", "error": {"type", "message"}, "request_id"}`."""
        kind, default = _ERRORS.get(
            status,
            ("api_error", "Internal server error")
            if status >= 500
            else ("invalid_request_error", "Invalid request."),
        )
        return {
            "type": "error",
            "error": {"type": kind, "message": message or default},
            "request_id": _REQUEST_IDS.make("req_011", 21),
        }

    def auth_failure(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str
    ) -> tuple[int, dict[str, Any]] | None:
        """`x-api-key` auth."""
        given = headers.get("x-api-key")
        if given == key:
            return None
        if not given:
            return 401, self.error(401, "x-api-key header is required")
        return 401, self.error(401, "invalid x-api-key")

    def request_id_header(self) -> str:
        """Anthropic's request id header."""
        return "request-id"
