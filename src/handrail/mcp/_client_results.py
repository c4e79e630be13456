"""An MCP call result as a `ToolResult`, every content block kept as a part.

Text-only results with nothing but text stay plain text (no parts), so the common case costs
nothing extra. Anything else keeps its blocks in order as `ContentPart`s, with their
annotations and `_meta`, so `handrail serve` can hand a client the same content the upstream
server produced; `content` is then the text view, for formats that take only text.

Invariant: a text-only result reads the same whether or not its parts are kept. Its `content`
is its texts joined by new lines either way, and every provider sends parts that are all text
as that `content` (`providers._media.plan`), so annotated text costs the model nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import (
    AudioPart,
    ContentPart,
    ErrorCode,
    ImagePart,
    ResourceLinkPart,
    ResourcePart,
    TextPart,
    ToolResult,
    parts_text,
)
from ._client_messages import say

if TYPE_CHECKING:
    import mcp_types
    from pydantic import BaseModel

__all__ = ["to_parts", "to_result"]


def to_result(
    result: mcp_types.CallToolResult, *, name: str, server: str, remote_name: str, locale: str
) -> ToolResult:
    """The result of the call of tool `name` (`remote_name` on `server`)."""
    parts = to_parts(result.content)
    text_only = all(isinstance(p, TextPart) for p in parts)
    text = (
        "\n".join(p.text for p in parts if isinstance(p, TextPart))
        if text_only
        else parts_text(parts, locale)
    )
    structured = result.structured_content
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, indent=2)
    metadata: dict[str, Any] = {"mcp_server": server, "mcp_tool": remote_name}
    if result.meta:
        metadata["mcp_meta"] = dict(result.meta)
    # Parts that are plain text and nothing more would repeat `content`: only the blocks'
    # annotations and `_meta` are worth carrying (for `serve` and transcripts).
    kept = () if text_only and not any(p.annotations or p.meta for p in parts) else parts
    if result.is_error:
        failure = ToolResult.failure(
            ErrorCode.EXECUTION_ERROR,
            text or say(locale, "no_details", tool=name),
            summary=f"{name}: {ErrorCode.EXECUTION_ERROR.value}",
            metadata=metadata,
        )
        if not kept and structured is None:
            return failure
        return ToolResult(
            ok=False,
            content=failure.content,
            error=failure.error,
            summary=failure.summary,
            metadata=metadata,
            parts=kept,
            structured=structured,
        )
    return ToolResult.success(text, metadata=metadata, parts=kept, structured=structured)


def to_parts(blocks: Sequence[mcp_types.ContentBlock]) -> tuple[ContentPart, ...]:
    """MCP content blocks as parts, in order (the union of block types is exhaustive)."""
    from mcp_types import (
        AudioContent,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    out: list[ContentPart] = []
    for block in blocks:
        common: dict[str, Any] = {
            "annotations": _annotations(block.annotations),
            "meta": dict(block.meta) if block.meta else None,
        }
        if isinstance(block, TextContent):
            out.append(TextPart(text=block.text, **common))
        elif isinstance(block, ImageContent):
            out.append(ImagePart(data=block.data, mime_type=block.mime_type, **common))
        elif isinstance(block, AudioContent):
            out.append(AudioPart(data=block.data, mime_type=block.mime_type, **common))
        elif isinstance(block, ResourceLink):
            out.append(
                ResourceLinkPart(
                    uri=str(block.uri),
                    name=block.name,
                    title=block.title,
                    description=block.description,
                    mime_type=block.mime_type,
                    size=block.size,
                    **common,
                )
            )
        else:
            res = block.resource
            if isinstance(res, TextResourceContents):
                part = ResourcePart(
                    uri=str(res.uri), mime_type=res.mime_type, text=res.text, **common
                )
            else:
                part = ResourcePart(
                    uri=str(res.uri), mime_type=res.mime_type, blob=res.blob, **common
                )
            out.append(part)
    return tuple(out)


def _annotations(value: BaseModel | None) -> Mapping[str, Any] | None:
    if value is None:
        return None
    dumped = value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped or None
