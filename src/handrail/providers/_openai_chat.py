"""OpenAI Chat Completions: `tools`, `tool_calls` (whole and streamed), `role: tool` messages.

Also the format of most OpenAI-compatible servers (DeepSeek, vLLM, llama.cpp, Ollama).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import ErrorCode, Tool, ToolCall, ToolResult
from ._common import (
    align,
    as_list,
    as_map,
    as_str,
    check_tools,
    new_id,
    openai_arguments,
    result_text,
    say,
)
from ._media import OPENAI, Accepts, Budget, Media, data_url, plan, text_of
from ._schema import openai_loose
from ._strict import openai_strict

__all__ = [
    "OpenAIChatStream",
    "openai_chat_results",
    "openai_chat_tools",
    "parse_openai_chat",
]


def openai_chat_tools(tools: Sequence[Tool], *, strict: bool = True) -> list[dict[str, Any]]:
    """The `tools` field of a Chat Completions request, in the given order.

    With `strict` (the default), each tool whose schema strict mode can express is sent with
    `strict: true` (optional properties as required-and-nullable; pass the same tools to the
    parsers so a `null` means "not given" again); any other tool is sent with `strict: false`.
    OpenAI notes that parallel function calls may not match a strict schema, so arguments
    are validated against the tool's own schema in every case.
    """
    check_tools("openai_chat", tools)
    out: list[dict[str, Any]] = []
    for t in tools:
        params = openai_strict(t.parameters, t.name, "openai_chat") if strict else None
        function: dict[str, Any] = {"name": t.name}
        if t.description:
            function["description"] = t.description
        function["parameters"] = (
            params if params is not None else openai_loose(t.parameters, t.name, "openai_chat")
        )
        function["strict"] = params is not None
        out.append({"type": "function", "function": function})
    return out


def _arguments(raw: object) -> str | Mapping[str, Any]:
    # Some compatible servers send an object, or "" for a call without arguments.
    mapping = as_map(raw)
    if mapping is not None:
        return mapping
    text = as_str(raw)
    return text if text.strip() else "{}"


def parse_openai_chat(
    response: Mapping[str, Any], *, tools: Sequence[Tool] | None = None
) -> list[ToolCall]:
    """The tool calls of a Chat Completions response (or of its `message`), in order.

    Takes the whole response (`choices[0].message` is read) or the assistant message itself.
    Pass the tools sent with the request so strict-mode `null`s become "not given" again.
    """
    message = response
    choices = as_list(response.get("choices"))
    if choices:
        message = as_map((as_map(choices[0]) or {}).get("message")) or {}
    calls: list[ToolCall] = []
    for raw in as_list(message.get("tool_calls")):
        tc = as_map(raw)
        if tc is None or tc.get("type", "function") != "function":
            continue  # custom (free-form) tools are not handrail tools
        fn = as_map(tc.get("function")) or {}
        name = as_str(fn.get("name"))
        calls.append(
            ToolCall(
                id=as_str(tc.get("id")) or new_id("call_"),
                name=name,
                arguments=openai_arguments(name, _arguments(fn.get("arguments")), tools),
            )
        )
    return calls


@dataclass(slots=True)
class _Open:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list[str])
    mapping: Mapping[str, Any] | None = None


class OpenAIChatStream:
    """Tool calls from a Chat Completions stream (`choices[0].delta.tool_calls`).

    Feed each decoded chunk. Deltas are grouped by `index`; a call is complete when a later
    call starts (the API streams calls one after another) or when the choice has a
    `finish_reason`. A delta without an index continues the last call unless it carries a new
    id (some compatible servers omit the index).
    """

    def __init__(self, *, tools: Sequence[Tool] | None = None) -> None:
        self._tools = tools
        self._open: dict[int, _Open] = {}
        self._order: list[int] = []
        self._done: set[int] = set()
        self.calls: list[ToolCall] = []

    def feed(self, event: Mapping[str, Any]) -> list[ToolCall]:
        """Take one `chat.completion.chunk`; return the calls it completed."""
        ready: list[ToolCall] = []
        for raw_choice in as_list(event.get("choices")):
            choice = as_map(raw_choice) or {}
            if choice.get("index", 0) != 0:
                continue  # n > 1: only the first choice drives tools
            delta = as_map(choice.get("delta")) or {}
            for raw in as_list(delta.get("tool_calls")):
                d = as_map(raw)
                if d is not None:
                    ready.extend(self._delta(d))
            if choice.get("finish_reason"):
                ready.extend(self._close(len(self._order)))
        return ready

    def finish(self) -> list[ToolCall]:
        """The stream ended: return the calls still open."""
        return self._close(len(self._order))

    def _delta(self, d: Mapping[str, Any]) -> list[ToolCall]:
        index = d.get("index")
        call_id = as_str(d.get("id"))
        if not isinstance(index, int):
            last = self._order[-1] if self._order else None
            if last is None or (call_id and call_id != self._open[last].id):
                index = (last + 1) if last is not None else 0
            else:
                index = last
        ready: list[ToolCall] = []
        slot = self._open.get(index)
        if slot is None:
            if index in self._done:
                return []  # a late fragment of a call already handed over
            # A new call starts: every earlier one is complete.
            ready = self._close(len(self._order))
            slot = self._open[index] = _Open()
            self._order.append(index)
        slot.id = slot.id or call_id
        fn = as_map(d.get("function")) or {}
        slot.name = slot.name or as_str(fn.get("name"))
        args = fn.get("arguments")
        if isinstance(args, str):
            slot.parts.append(args)
        elif as_map(args) is not None:
            slot.mapping = as_map(args)
        return ready

    def _close(self, upto: int) -> list[ToolCall]:
        ready: list[ToolCall] = []
        for index in self._order[:upto]:
            slot = self._open.pop(index, None)
            if slot is None:
                continue
            self._done.add(index)
            raw: Any = slot.mapping if slot.mapping is not None else "".join(slot.parts)
            call = ToolCall(
                id=slot.id or new_id("call_"),
                name=slot.name,
                arguments=openai_arguments(slot.name, _arguments(raw), self._tools),
            )
            ready.append(call)
        self._order = [i for i in self._order if i in self._open]
        self.calls.extend(ready)
        return ready


# Chat Completions takes images only in user messages ("image_url" parts); PDFs as "file"
# parts are OpenAI's own, and most compatible servers refuse them, so only images go along.
_CHAT_IMAGES = Accepts(
    images=OPENAI.images,
    max_image=OPENAI.max_image,
    max_file=0,
    max_turn=OPENAI.max_turn,
    max_items=OPENAI.max_items,
    no_animated_gif=True,
)


def openai_chat_results(
    results: Sequence[ToolResult],
    *,
    calls: Sequence[ToolCall] | None = None,
    locale: str = "en",
    images: bool = False,
) -> list[dict[str, Any]]:
    """One `role: tool` message per call, in request order, to append after the assistant's.

    Chat Completions has no error flag, so a failure's text starts with its error code.
    `results` may be a `Batch`; see `align` for how calls without a result are answered.

    A tool message takes text only, so a result with content parts sends its text view, each
    image, audio clip or resource as a one-line note. With `images=True` the images (PNG, JPEG,
    WebP, still GIF, within OpenAI's limits) follow in one more message, a `user` message of
    `image_url` parts, each group headed by the call it came from: the way to show a vision
    model on a Chat Completions server what a tool returned. It is off by default because that
    message speaks with the user's role: turn it on only for tools whose images you trust (its
    first line tells the model they come from tools, not from the user).
    """
    entries = align(results, calls, locale)
    messages: list[dict[str, Any]] = []
    budget = Budget(_CHAT_IMAGES)
    attached: list[dict[str, Any]] = []
    for e in entries:
        text = result_text(e.result, locale, mark_errors=True)
        pieces = plan(e.result, budget, locale) if images else None
        if pieces is not None:
            found = [p for p in pieces if isinstance(p, Media)]
            view = text_of(pieces) or say(locale, "empty")
            if e.result.ok:
                text = view
            else:
                code = e.result.error or ErrorCode.EXECUTION_ERROR
                text = say(locale, "error", code=code, content=view)
            if found:
                head = say(locale, "attached_call", name=e.name, id=e.call_id)
                attached.append({"type": "text", "text": head})
                attached.extend(
                    {"type": "image_url", "image_url": {"url": data_url(m), "detail": "auto"}}
                    for m in found
                )
        messages.append({"role": "tool", "tool_call_id": e.call_id, "content": text})
    if attached:
        intro = {"type": "text", "text": say(locale, "chat_images")}
        messages.append({"role": "user", "content": [intro, *attached]})
    return messages
