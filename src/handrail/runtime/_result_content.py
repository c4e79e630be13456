"""What a tool returns beyond text: content parts, and structured content.

`content_result` turns such a return value into a `ToolResult`; structured content is checked
against the tool's output schema. `fit_parts` keeps the parts within the text cap after shaping.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from pydantic import BaseModel

from .._contract import ContentPart, ErrorCode, ResourcePart, TextPart, ToolResult
from .._tool import Tool
from ._messages import say

__all__ = ["content_result", "fit_parts"]


def content_result(returned: Any, tool: Tool, locale: str) -> Any:
    """`value` as a `ToolResult` when it carries parts or structured content; else unchanged.

    A returned part, or a list mixing parts and strings, becomes a result with those parts.
    With an output schema, a returned mapping or Pydantic model becomes the structured content
    (and its JSON the text), and every successful result must match the schema: a tool that
    breaks its own schema gets EXECUTION_ERROR rather than handing a client bad data.
    """
    value: Any = returned
    if isinstance(returned, ContentPart):
        value = ToolResult.success(parts=(returned,))
    elif isinstance(returned, list | tuple):
        items = cast(Sequence[Any], returned)
        if _has_part(items):
            parts = tuple(p if isinstance(p, ContentPart) else TextPart(text=str(p)) for p in items)
            value = ToolResult.success(parts=parts)
    check = tool.output_check
    if check is None:
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, Mapping):
        data = dict(cast(Mapping[str, Any], value))
        text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
        value = ToolResult.success(text, structured=data)
    if isinstance(value, ToolResult):
        if not value.ok:
            return value
        if value.structured is None:
            return _broken(tool, locale, say(locale, "no_structured"), value)
        problems = check.problems(value.structured)
        if problems:
            return _broken(tool, locale, "; ".join(problems), value)
        return value
    return _broken(tool, locale, say(locale, "no_structured"), None)


def _has_part(items: Sequence[Any]) -> bool:
    return bool(items) and any(isinstance(i, ContentPart) for i in items)


def _broken(tool: Tool, locale: str, detail: str, base: ToolResult | None) -> ToolResult:
    text = say(locale, "bad_structured", name=tool.name, detail=detail)
    failure = ToolResult.failure(ErrorCode.EXECUTION_ERROR, text)
    if base is None:
        return failure
    # The tool's own metadata stays (for programs); the content it did produce is not passed on.
    return replace(failure, metadata=base.metadata)


def fit_parts(shaped: ToolResult, before: Any) -> ToolResult:
    """Keep `parts` within the tool's text cap.

    When shaping cut the text, the text parts (and embedded text resources) give way to the cut
    text, ahead of the other parts.
    """
    if not shaped.parts or not isinstance(before, ToolResult) or shaped.content == before.content:
        return shaped
    rest = tuple(
        p
        for p in shaped.parts
        if not isinstance(p, TextPart) and not (isinstance(p, ResourcePart) and p.text is not None)
    )
    return replace(shaped, parts=(TextPart(text=shaped.content), *rest))
