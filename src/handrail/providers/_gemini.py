"""Gemini: `functionDeclarations`, `functionCall` parts, `functionResponse` parts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .. import ConfigurationError, Tool, ToolCall, ToolResult
from ._common import align, as_list, as_map, as_str, check_tools, new_id, result_text, say
from ._media import GEMINI_BESIDE, GEMINI_INSIDE, Budget, Media, plan, text_of
from ._schema import gemini_schema

__all__ = ["GeminiStream", "gemini_results", "gemini_tools", "parse_gemini"]

SYNTHETIC_ID = "handrail-gemini-"
"""Prefix of the ids handrail gives calls Gemini sent without one (never echoed back)."""


def gemini_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The `tools` field of a generateContent request: `[{"functionDeclarations": [...]}]`.

    Empty when there are no tools (Gemini refuses an empty declaration list).
    """
    check_tools("gemini", tools)
    declarations: list[dict[str, Any]] = []
    for t in tools:
        item: dict[str, Any] = {"name": t.name}
        if t.description:
            item["description"] = t.description
        params = gemini_schema(t.parameters, t.name)
        if params is not None:
            item["parameters"] = params
        declarations.append(item)
    return [{"functionDeclarations": declarations}] if declarations else []


def _parts(response: Mapping[str, Any]) -> list[Any]:
    candidates = as_list(response.get("candidates"))
    content = response
    if candidates:
        content = as_map((as_map(candidates[0]) or {}).get("content")) or {}
    return as_list(content.get("parts"))


def _calls(parts: list[Any]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for raw in parts:
        part = as_map(raw) or {}
        fc = as_map(part.get("functionCall")) or as_map(part.get("function_call"))
        if fc is None:
            continue
        args = as_map(fc.get("args"))
        calls.append(
            ToolCall(
                id=as_str(fc.get("id")) or new_id(SYNTHETIC_ID),
                name=as_str(fc.get("name")),
                arguments=args if args is not None else {},
            )
        )
    return calls


def parse_gemini(response: Mapping[str, Any]) -> list[ToolCall]:
    """The `functionCall` parts of a response (`candidates[0].content`) or of a content.

    Gemini may leave `functionCall.id` out; such calls get an id starting with
    `SYNTHETIC_ID`, which `gemini_results` does not send back.
    """
    return _calls(_parts(response))


class GeminiStream:
    """Tool calls from a `streamGenerateContent` stream.

    Gemini sends each `functionCall` part whole, so every call is handed over in the chunk that
    carries it.
    """

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    def feed(self, event: Mapping[str, Any]) -> list[ToolCall]:
        """Take one streamed `GenerateContentResponse`; return the calls it carries."""
        ready = _calls(_parts(event))
        self.calls.extend(ready)
        return ready

    def finish(self) -> list[ToolCall]:
        """The stream ended (nothing can be open: calls arrive whole)."""
        return []


def _inline(media: Media) -> dict[str, Any]:
    return {"inlineData": {"mimeType": media.mime, "data": media.data}}


def gemini_results(
    results: Sequence[ToolResult],
    *,
    calls: Sequence[ToolCall] | None = None,
    locale: str = "en",
    media: Literal["beside", "inside", "text"] = "beside",
) -> dict[str, Any]:
    """The one `user` content answering a turn: a `functionResponse` part per call, in order.

    The response holds `{"output": text}`, or `{"error": text}` for a result that is not ok
    ("Use 'output' key to specify function output and 'error' key to specify error details").
    The `name` is the one the model called; the `id` is echoed when Gemini sent one.

    A result with content parts sends its text view (each image, clip or resource as a note)
    as the text, and its images, audio and PDFs as `inlineData`, within Gemini's request limit
    (see `_media`; anything over it stays a note, which says so). Where they go is `media`:

    - `"beside"` (the default, every model): after the function responses, as ordinary parts
      of the same content, each group headed by the call it came from ("From the result of
      `read_file`:").
    - `"inside"`: in the function response's own `parts` ("multimodal function responses",
      Gemini 3 models only; older models refuse the request): PNG, JPEG, WebP and PDF.
    - `"text"`: nowhere; the notes only.
    """
    entries = align(results, calls, locale)
    if not entries:
        raise ConfigurationError(
            "no results to send: call gemini_results only after a turn with functionCall parts"
        )
    accepts = GEMINI_INSIDE if media == "inside" else GEMINI_BESIDE
    budget = Budget(accepts)
    parts: list[dict[str, Any]] = []
    beside: list[dict[str, Any]] = []
    for e in entries:
        key = "output" if e.result.ok else "error"
        fr: dict[str, Any] = {"name": e.name}
        if e.call_id and not e.call_id.startswith(SYNTHETIC_ID):
            fr["id"] = e.call_id
        pieces = plan(e.result, budget, locale) if media != "text" else None
        if pieces is None:
            fr["response"] = {key: result_text(e.result, locale)}
            parts.append({"functionResponse": fr})
            continue
        fr["response"] = {key: text_of(pieces) or say(locale, "empty")}
        found = [_inline(p) for p in pieces if isinstance(p, Media)]
        if found and media == "inside":
            fr["parts"] = found
        elif found:
            beside.append({"text": say(locale, "attached", name=e.name)})
            beside.extend(found)
        parts.append({"functionResponse": fr})
    return {"role": "user", "parts": [*parts, *beside]}
