"""OpenAI Chat Completions: `chat.completion.chunk` streams, `chat.completion` bodies, errors.

Reasoning goes out as DeepSeek's `reasoning_content` (OpenAI itself sends none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._render import Context, Event, dumps, obj, pieces
from ._script import Reply

__all__ = ["OpenAIChatRenderer", "openai_auth_failure", "openai_error"]

_STOPS = {"end": "stop", "tool_use": "tool_calls", "max_tokens": "length"}

# (type, code) per status, as the API sends them.
_ERRORS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_MESSAGES = {
    400: "Invalid request.",
    401: "Incorrect API key provided.",
    404: "The model does not exist or you do not have access to it.",
    429: "Rate limit reached for requests. Please try again later.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The engine is currently overloaded, please try again later.",
}


def openai_error(status: int, message: str) -> dict[str, Any]:
    """`{"error": {"message", "type", "param", "code"}}`, as both OpenAI APIs send it."""
    kind, code = _ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None)
    )
    return {
        "error": {
            "message": message or _MESSAGES.get(status, f"HTTP {status}"),
            "type": kind,
            "param": None,
            "code": code,
        }
    }


def openai_auth_failure(headers: Mapping[str, str], key: str) -> tuple[int, dict[str, Any]] | None:
    """401 unless `Authorization: Bearer <key>` is sent."""
    given = headers.get("authorization", "")
    if given == f"Bearer {key}":
        return None
    if not given.startswith("Bearer ") or not given[7:].strip():
        message = (
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
        )
        body = openai_error(401, message)
        body["error"]["code"] = None
        return 401, body
    shown = given[7:11] + "*" * 4 + given[-4:]
    return 401, openai_error(401, f"Incorrect API key provided: {shown}.")


def _usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reply.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


class OpenAIChatRenderer:
    """`POST /v1/chat/completions`."""

    provider = "openai_chat"
    line_end = "\n"
    stream_content_type = "text/event-stream; charset=utf-8"

    def _call_ids(self, reply: Reply, ctx: Context) -> list[str]:
        return [c.id if c.id is not None else ctx.ids.make("call_") for c in reply.tool_calls]

    def events(self, reply: Reply, ctx: Context) -> list[Event]:
        """Role, reasoning, text and tool-call deltas; the finish chunk; usage; `[DONE]`."""
        completion_id = ctx.ids.make("chatcmpl-", 29)
        fingerprint = ctx.ids.make("fp_", 10)
        options = obj(ctx.request.get("stream_options")) or {}
        with_usage = options.get("include_usage") is True
        out: list[Event] = []

        def chunk(delta: dict[str, Any], finish: str | None = None) -> None:
            body: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": ctx.created,
                "model": ctx.model,
                "system_fingerprint": fingerprint,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if with_usage:
                body["usage"] = None  # every chunk has it, null until the last one
            out.append(Event(dumps(body)))

        size = reply.chunk_size
        role_pending = True
        if reply.reasoning or reply.text or not reply.tool_calls:
            chunk({"role": "assistant", "content": "", "refusal": None})
            role_pending = False
        for part in pieces(reply.reasoning, size):
            chunk({"content": None, "reasoning_content": part})
        for part in pieces(reply.text, size):
            chunk({"content": part})
        for index, (call, call_id) in enumerate(
            zip(reply.tool_calls, self._call_ids(reply, ctx), strict=True)
        ):
            start: dict[str, Any] = {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
            if role_pending:
                start = {"role": "assistant", "content": None, **start, "refusal": None}
                role_pending = False
            chunk(start)
            for part in pieces(call.arguments_json(), size):
                chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        chunk({}, _STOPS.get(reply.stop_kind, reply.stop_kind))
        if with_usage:
            out.append(
                Event(
                    dumps(
                        {
                            "id": completion_id,
                            "object": "chat.completion.chunk",
                            "created": ctx.created,
                            "model": ctx.model,
                            "system_fingerprint": fingerprint,
                            "choices": [],
                            "usage": _usage(reply),
                        }
                    )
                )
            )
        out.append(Event("[DONE]", final=True))
        return out

    def body(self, reply: Reply, ctx: Context) -> dict[str, Any]:
        """A `chat.completion` with one choice and usage."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.text if reply.text or not reply.tool_calls else None,
            "refusal": None,
            "annotations": [],
        }
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for call, call_id in zip(reply.tool_calls, self._call_ids(reply, ctx), strict=True)
            ]
        return {
            "id": ctx.ids.make("chatcmpl-", 29),
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _STOPS.get(reply.stop_kind, reply.stop_kind),
                }
            ],
            "usage": _usage(reply),
            "service_tier": "default",
            "system_fingerprint": ctx.ids.make("fp_", 10),
        }

    def error(self, status: int, message: str) -> dict[str, Any]:
        """OpenAI's error object."""
        return openai_error(status, message)

    def auth_failure(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str
    ) -> tuple[int, dict[str, Any]] | None:
        """Bearer auth."""
        return openai_auth_failure(headers, key)

    def request_id_header(self) -> str:
        """OpenAI's request id header."""
        return "x-request-id"
