"""OpenAI Responses: semantic stream events with `sequence_number`, `response` objects.

Output items come in the order the API uses: a `reasoning` item (its summary streamed), a
`message` with one `output_text` part, then one `function_call` item per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._render import Context, Event, dumps, pieces
from ._render_openai_chat import openai_auth_failure, openai_error
from ._script import Reply

__all__ = ["OpenAIResponsesRenderer"]


def _usage(reply: Reply) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": reply.cached_tokens},
        "output_tokens": reply.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def _ending(reply: Reply) -> tuple[str, dict[str, Any] | None]:
    """The response `status` and `incomplete_details`."""
    kind = reply.stop_kind
    if kind in ("end", "tool_use"):
        return "completed", None
    reason = "max_output_tokens" if kind == "max_tokens" else kind
    return "incomplete", {"reason": reason}


class _Render:
    """One response's ids and objects, shared by the streamed and the whole form."""

    def __init__(self, reply: Reply, ctx: Context) -> None:
        self.reply = reply
        self.ctx = ctx
        self.response_id = ctx.ids.make("resp_", 48)
        self.reasoning_id = ctx.ids.make("rs_", 48) if reply.reasoning else ""
        self.message_id = ctx.ids.make("msg_", 48) if reply.text else ""
        self.calls = [
            (ctx.ids.make("fc_", 48), call.id if call.id is not None else ctx.ids.make("call_"))
            for call in reply.tool_calls
        ]

    def response(self, status: str, output: list[dict[str, Any]], done: bool) -> dict[str, Any]:
        request = self.ctx.request
        _, incomplete = _ending(self.reply)
        return {
            "id": self.response_id,
            "object": "response",
            "created_at": self.ctx.created,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": incomplete if done else None,
            "instructions": request.get("instructions"),
            "max_output_tokens": request.get("max_output_tokens"),
            "model": self.ctx.model,
            "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls", True),
            "previous_response_id": request.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "store": request.get("store", True),
            "temperature": request.get("temperature", 1.0),
            "text": {"format": {"type": "text"}},
            "tool_choice": request.get("tool_choice", "auto"),
            "tools": request.get("tools", []),
            "top_p": request.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": _usage(self.reply) if done else None,
            "user": None,
            "metadata": request.get("metadata", {}),
        }

    def item_status(self) -> str:
        return "incomplete" if _ending(self.reply)[0] == "incomplete" else "completed"

    def reasoning_item(self, summary: str | None) -> dict[str, Any]:
        parts = [] if summary is None else [{"type": "summary_text", "text": summary}]
        return {"id": self.reasoning_id, "type": "reasoning", "summary": parts}

    def message_item(self, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.message_id,
            "type": "message",
            "status": status,
            "content": content,
            "role": "assistant",
        }

    def call_item(self, index: int, status: str, arguments: str) -> dict[str, Any]:
        item_id, call_id = self.calls[index]
        return {
            "id": item_id,
            "type": "function_call",
            "status": status,
            "arguments": arguments,
            "call_id": call_id,
            "name": self.reply.tool_calls[index].name,
        }

    def output(self) -> list[dict[str, Any]]:
        reply, status = self.reply, self.item_status()
        items: list[dict[str, Any]] = []
        if reply.reasoning:
            items.append(self.reasoning_item(reply.reasoning))
        if reply.text:
            items.append(self.message_item(status, [_text_part(reply.text)]))
        for index, call in enumerate(reply.tool_calls):
            items.append(self.call_item(index, status, call.arguments_json()))
        return items


def _text_part(value: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": value}


class OpenAIResponsesRenderer:
    """`POST /v1/responses`."""

    provider = "openai_responses"
    line_end = "\n"
    stream_content_type = "text/event-stream; charset=utf-8"

    def events(self, reply: Reply, ctx: Context) -> list[Event]:
        """`response.created` ... `response.completed` (or `response.incomplete`)."""
        r = _Render(reply, ctx)
        out: list[Event] = []

        def emit(kind: str, final: bool = False, **fields: Any) -> None:
            data = {"type": kind, "sequence_number": len(out), **fields}
            out.append(Event(dumps(data), name=kind, final=final))

        emit("response.created", response=r.response("in_progress", [], False))
        emit("response.in_progress", response=r.response("in_progress", [], False))
        size, index = reply.chunk_size, 0
        if reply.reasoning:
            at: dict[str, Any] = {"item_id": r.reasoning_id, "output_index": index}
            emit("response.output_item.added", output_index=index, item=r.reasoning_item(None))
            part = {"type": "summary_text", "text": ""}
            emit("response.reasoning_summary_part.added", **at, summary_index=0, part=part)
            for piece in pieces(reply.reasoning, size):
                emit("response.reasoning_summary_text.delta", **at, summary_index=0, delta=piece)
            emit(
                "response.reasoning_summary_text.done", **at, summary_index=0, text=reply.reasoning
            )
            part = {"type": "summary_text", "text": reply.reasoning}
            emit("response.reasoning_summary_part.done", **at, summary_index=0, part=part)
            emit(
                "response.output_item.done",
                output_index=index,
                item=r.reasoning_item(reply.reasoning),
            )
            index += 1
        if reply.text:
            at = {"item_id": r.message_id, "output_index": index, "content_index": 0}
            item = r.message_item("in_progress", [])
            emit("response.output_item.added", output_index=index, item=item)
            emit("response.content_part.added", **at, part=_text_part(""))
            for piece in pieces(reply.text, size):
                emit("response.output_text.delta", **at, delta=piece, logprobs=[])
            emit("response.output_text.done", **at, text=reply.text, logprobs=[])
            emit("response.content_part.done", **at, part=_text_part(reply.text))
            item = r.message_item(r.item_status(), [_text_part(reply.text)])
            emit("response.output_item.done", output_index=index, item=item)
            index += 1
        for n, call in enumerate(reply.tool_calls):
            arguments = call.arguments_json()
            at = {"item_id": r.calls[n][0], "output_index": index}
            emit(
                "response.output_item.added",
                output_index=index,
                item=r.call_item(n, "in_progress", ""),
            )
            for piece in pieces(arguments, size):
                emit("response.function_call_arguments.delta", **at, delta=piece)
            emit("response.function_call_arguments.done", **at, name=call.name, arguments=arguments)
            item = r.call_item(n, r.item_status(), arguments)
            emit("response.output_item.done", output_index=index, item=item)
            index += 1
        status, _ = _ending(reply)
        final = "response.completed" if status == "completed" else "response.incomplete"
        emit(final, final=True, response=r.response(status, r.output(), True))
        return out

    def body(self, reply: Reply, ctx: Context) -> dict[str, Any]:
        """The whole `response` object."""
        r = _Render(reply, ctx)
        return r.response(_ending(reply)[0], r.output(), True)

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
