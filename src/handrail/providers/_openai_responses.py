"""OpenAI Responses: function `tools`, `function_call` items (whole and streamed), outputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import Tool, ToolCall, ToolResult
from ._common import (
    align,
    as_list,
    as_map,
    as_str,
    check_tools,
    new_id,
    openai_arguments,
    result_text,
)
from ._media import OPENAI, Budget, Media, Piece, data_url, file_name, mark_error, plan
from ._schema import openai_loose
from ._strict import openai_strict

__all__ = [
    "OpenAIResponsesStream",
    "openai_responses_results",
    "openai_responses_tools",
    "parse_openai_responses",
]


def openai_responses_tools(tools: Sequence[Tool], *, strict: bool = True) -> list[dict[str, Any]]:
    """The `tools` field of a Responses request, in the given order.

    `strict` is always written out: the Responses API defaults a function tool to
    `strict: true` ("Whether to enforce strict parameter validation. Default `true`."), so a
    schema strict mode cannot express must say `false`. See `openai_chat_tools` for the rest.
    """
    check_tools("openai_responses", tools)
    out: list[dict[str, Any]] = []
    for t in tools:
        params = openai_strict(t.parameters, t.name, "openai_responses") if strict else None
        item: dict[str, Any] = {"type": "function", "name": t.name}
        if t.description:
            item["description"] = t.description
        item["parameters"] = (
            params if params is not None else openai_loose(t.parameters, t.name, "openai_responses")
        )
        item["strict"] = params is not None
        out.append(item)
    return out


def _call(item: Mapping[str, Any], tools: Sequence[Tool] | None) -> ToolCall:
    name = as_str(item.get("name"))
    raw = item.get("arguments")
    mapping = as_map(raw)
    text = as_str(raw)
    args: str | Mapping[str, Any] = (
        mapping if mapping is not None else (text if text.strip() else "{}")
    )
    return ToolCall(
        # `call_id` is what `function_call_output` answers; `id` names the item itself.
        id=as_str(item.get("call_id")) or as_str(item.get("id")) or new_id("call_"),
        name=name,
        arguments=openai_arguments(name, args, tools),
    )


def parse_openai_responses(
    response: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Tool] | None = None,
) -> list[ToolCall]:
    """The `function_call` items of a Response (or of its `output` list), in order."""
    items = as_list(response.get("output")) if isinstance(response, Mapping) else list(response)
    calls: list[ToolCall] = []
    for raw in items:
        item = as_map(raw)
        if item is not None and item.get("type") == "function_call":
            calls.append(_call(item, tools))
    return calls


@dataclass(slots=True)
class _Open:
    item: dict[str, Any]
    parts: list[str] = field(default_factory=list[str])


class OpenAIResponsesStream:
    """Tool calls from a Responses stream.

    `response.output_item.added` opens a `function_call` item, `...function_call_arguments.delta`
    events fill its arguments, and `...function_call_arguments.done` completes it (its
    `arguments` are authoritative). `response.output_item.done` (or, at the very end,
    `response.completed`) hands over a call whose `done` event never came.
    """

    def __init__(self, *, tools: Sequence[Tool] | None = None) -> None:
        self._tools = tools
        self._open: dict[str, _Open] = {}
        self._by_index: dict[int, str] = {}
        self._done: set[str] = set()
        self.calls: list[ToolCall] = []

    def feed(self, event: Mapping[str, Any]) -> list[ToolCall]:
        """Take one stream event; return the calls it completed."""
        kind = event.get("type")
        if kind == "response.output_item.added":
            item = as_map(event.get("item"))
            if item is not None and item.get("type") == "function_call":
                key = as_str(item.get("id")) or as_str(item.get("call_id"))
                self._open[key] = _Open(dict(item))
                index = event.get("output_index")
                if isinstance(index, int):
                    self._by_index[index] = key
            return []
        if kind == "response.function_call_arguments.delta":
            slot = self._open.get(self._key(event))
            if slot is not None:
                slot.parts.append(as_str(event.get("delta")))
            return []
        if kind == "response.function_call_arguments.done":
            key = self._key(event)
            slot = self._open.get(key)
            if slot is None:
                return []
            if isinstance(event.get("arguments"), str):
                slot.item["arguments"] = event["arguments"]
            else:
                slot.item["arguments"] = "".join(slot.parts)
            return self._hand_over(key, slot.item)
        if kind == "response.output_item.done":
            item = as_map(event.get("item"))
            if item is not None and item.get("type") == "function_call":
                key = as_str(item.get("id")) or as_str(item.get("call_id"))
                return self._hand_over(key, item)
            return []
        if kind == "response.completed":
            response = as_map(event.get("response")) or {}
            ready: list[ToolCall] = []
            for raw in as_list(response.get("output")):
                item = as_map(raw)
                if item is not None and item.get("type") == "function_call":
                    key = as_str(item.get("id")) or as_str(item.get("call_id"))
                    ready.extend(self._hand_over(key, item))
            return ready + self.finish()
        return []

    def finish(self) -> list[ToolCall]:
        """The stream ended: return the calls still open (arguments as received)."""
        ready: list[ToolCall] = []
        for key, slot in list(self._open.items()):
            if "arguments" not in slot.item or not slot.item["arguments"]:
                slot.item["arguments"] = "".join(slot.parts)
            ready.extend(self._hand_over(key, slot.item))
        return ready

    def _key(self, event: Mapping[str, Any]) -> str:
        key = as_str(event.get("item_id"))
        if key:
            return key
        index = event.get("output_index")
        return self._by_index.get(index, "") if isinstance(index, int) else ""

    def _hand_over(self, key: str, item: Mapping[str, Any]) -> list[ToolCall]:
        if key in self._done:
            return []
        opened = self._open.pop(key, None)
        merged = {**(opened.item if opened is not None else {}), **item}
        self._done.add(key)
        call = _call(merged, self._tools)
        self.calls.append(call)
        return [call]


def _item(piece: Piece) -> dict[str, Any]:
    if isinstance(piece, str):
        return {"type": "input_text", "text": piece}
    if piece.kind == "image":
        return {"type": "input_image", "image_url": data_url(piece), "detail": "auto"}
    return {"type": "input_file", "filename": file_name(piece), "file_data": data_url(piece)}


def _output(result: ToolResult, budget: Budget, locale: str) -> str | list[dict[str, Any]]:
    """A `function_call_output`'s output: text, or input_text/input_image/input_file items."""
    pieces = plan(result, budget, locale)
    if pieces is None:
        return result_text(result, locale, mark_errors=True)
    pieces = mark_error(pieces, result, locale)
    if not any(isinstance(p, Media) for p in pieces):
        return "\n".join(p for p in pieces if isinstance(p, str))
    return [_item(p) for p in pieces]


def openai_responses_results(
    results: Sequence[ToolResult],
    *,
    calls: Sequence[ToolCall] | None = None,
    locale: str = "en",
) -> list[dict[str, Any]]:
    """One `function_call_output` input item per call, in request order.

    The Responses API has no error flag, so a failure's text starts with its error code.
    `results` may be a `Batch`.

    A result with content parts sends a list as its `output`, in order: `input_text`,
    `input_image` (PNG, JPEG, WebP, still GIF, as a `data:` URL) and `input_file` (PDFs, as a
    `data:` URL with a file name). Audio, resource links and other blobs go as their text
    notes, and so does an attachment over the API's limits (see `_media.OPENAI`), with a note
    saying so.
    """
    budget = Budget(OPENAI)
    return [
        {
            "type": "function_call_output",
            "call_id": e.call_id,
            "output": _output(e.result, budget, locale),
        }
        for e in align(results, calls, locale)
    ]
