"""Anthropic Messages: `tools` with `input_schema`, `tool_use` blocks, `tool_result` blocks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import ConfigurationError, Tool, ToolCall, ToolResult
from ._common import align, as_list, as_map, as_str, check_tools, new_id, result_text
from ._media import ANTHROPIC, Budget, Media, Piece, plan
from ._schema import anthropic_schema

__all__ = ["AnthropicStream", "anthropic_results", "anthropic_tools", "parse_anthropic"]


def anthropic_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The `tools` field of a Messages request, in the given order."""
    check_tools("anthropic", tools)
    out: list[dict[str, Any]] = []
    for t in tools:
        item: dict[str, Any] = {"name": t.name}
        if t.description:
            item["description"] = t.description
        item["input_schema"] = anthropic_schema(t.parameters, t.name)
        out.append(item)
    return out


def _call(block: Mapping[str, Any]) -> ToolCall:
    raw = block.get("input")
    mapping = as_map(raw)
    args: str | Mapping[str, Any] = mapping if mapping is not None else (as_str(raw) or "{}")
    return ToolCall(
        id=as_str(block.get("id")) or new_id("toolu_"),
        name=as_str(block.get("name")),
        arguments=args,
    )


def parse_anthropic(response: Mapping[str, Any]) -> list[ToolCall]:
    """The `tool_use` blocks of a Message (or of its `content` list), in order.

    Server tools (`server_tool_use`, `mcp_tool_use`) run at Anthropic and are not returned.
    """
    calls: list[ToolCall] = []
    for raw in as_list(response.get("content")):
        block = as_map(raw)
        if block is not None and block.get("type") == "tool_use":
            calls.append(_call(block))
    return calls


@dataclass(slots=True)
class _Open:
    block: dict[str, Any]
    parts: list[str] = field(default_factory=list[str])


class AnthropicStream:
    """Tool calls from a Messages stream.

    `content_block_start` opens a `tool_use` block, `input_json_delta` deltas carry its input
    as JSON text, and `content_block_stop` completes it: the call is handed over right then,
    while the model may still be writing later blocks.
    """

    def __init__(self) -> None:
        self._open: dict[int, _Open] = {}
        self.calls: list[ToolCall] = []

    def feed(self, event: Mapping[str, Any]) -> list[ToolCall]:
        """Take one stream event (its decoded `data`); return the calls it completed."""
        kind = event.get("type")
        index = event.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            block = as_map(event.get("content_block"))
            if block is not None and block.get("type") == "tool_use":
                self._open[index] = _Open(dict(block))
            return []
        if kind == "content_block_delta" and isinstance(index, int):
            slot = self._open.get(index)
            delta = as_map(event.get("delta")) or {}
            if slot is not None and delta.get("type") == "input_json_delta":
                slot.parts.append(as_str(delta.get("partial_json")))
            return []
        if kind == "content_block_stop" and isinstance(index, int):
            return self._close([index])
        if kind == "message_stop":
            return self.finish()
        return []

    def finish(self) -> list[ToolCall]:
        """The stream ended: return the calls still open."""
        return self._close(sorted(self._open))

    def _close(self, indexes: list[int]) -> list[ToolCall]:
        ready: list[ToolCall] = []
        for index in indexes:
            slot = self._open.pop(index, None)
            if slot is None:
                continue
            text = "".join(slot.parts)
            if text.strip():
                # The streamed JSON text is the input; the start block only holds `{}`.
                slot.block["input"] = text
            ready.append(_call(slot.block))
        self.calls.extend(ready)
        return ready


def _block(piece: Piece) -> dict[str, Any]:
    if isinstance(piece, str):
        return {"type": "text", "text": piece}
    block: dict[str, Any]
    if piece.kind == "image":
        source = {"type": "base64", "media_type": piece.mime, "data": piece.data}
        return {"type": "image", "source": source}
    if piece.kind == "pdf":
        source = {"type": "base64", "media_type": "application/pdf", "data": piece.data}
        block = {"type": "document", "source": source}
    else:  # an embedded text resource: a plain-text document
        source = {"type": "text", "media_type": "text/plain", "data": piece.data}
        block = {"type": "document", "source": source}
    if piece.name:
        block["title"] = piece.name
    return block


def _content(result: ToolResult, budget: Budget, locale: str) -> str | list[dict[str, Any]]:
    """A `tool_result`'s content: text, or text, image and document blocks in order."""
    pieces = plan(result, budget, locale)
    if pieces is None:
        return result_text(result, locale)
    if not any(isinstance(p, Media) for p in pieces):
        return "\n".join(p for p in pieces if isinstance(p, str)) or result_text(result, locale)
    return [_block(p) for p in pieces]


def anthropic_results(
    results: Sequence[ToolResult],
    *,
    calls: Sequence[ToolCall] | None = None,
    locale: str = "en",
) -> dict[str, Any]:
    """The one `user` message answering a turn: a `tool_result` block per call, in order.

    Anthropic wants every result of the turn in the next user message, before any other
    content (append text blocks after them if needed); `is_error` is true for every result
    that is not ok, including denied and unanswered (interrupted) calls.

    A result with content parts sends them as blocks, in order: text, images (JPEG, PNG, GIF,
    WebP) and documents (PDFs, and embedded text resources as plain-text documents with the
    resource URI as title). Audio, resource links and other blobs go as their text notes, and
    so does an attachment over the API's limits (see `_media.ANTHROPIC`), with a note saying so.
    """
    entries = align(results, calls, locale)
    if not entries:
        raise ConfigurationError(
            "no results to send: call anthropic_results only after a turn with tool_use blocks"
        )
    budget = Budget(ANTHROPIC)
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": e.call_id,
                "content": _content(e.result, budget, locale),
                "is_error": not e.result.ok,
            }
            for e in entries
        ],
    }
