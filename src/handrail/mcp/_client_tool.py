"""An MCP server's tool as a handrail tool, and an MCP call result as a `ToolResult`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import ErrorCode, JsonSchemaTool, ToolContext, ToolResult
from ._client_messages import say

if TYPE_CHECKING:
    import mcp_types

    from ._client_connection import RemoteServer

__all__ = ["McpTool", "content_text", "to_result"]


class McpTool(JsonSchemaTool):
    """A tool of an MCP server; calls go over that server's shared connection."""

    def __init__(
        self,
        *,
        name: str,
        server: RemoteServer,
        remote_name: str,
        description: str,
        parameters: Mapping[str, Any],
        annotations: Mapping[str, Any],
        title: str | None = None,
        timeout: float | None = None,
    ) -> None:
        self.server = server.name
        """The name of the server (as configured) this tool belongs to."""
        self.remote_name = remote_name
        """The tool's own name on the server, used on the wire."""
        self.title = title
        """The human-readable title the server gave, if any."""
        self.annotations: Mapping[str, Any] = dict(annotations)
        """The server's annotations as sent (`readOnlyHint`, `destructiveHint`, ...)."""
        self.open_world = annotations.get("openWorldHint") is not False
        """The tool may reach beyond a closed domain (the web, other systems); MCP's default."""
        self._server = server
        read_only = annotations.get("readOnlyHint") is True
        super().__init__(
            name=name,
            description=description,
            parameters=parameters,
            handler=self._call,
            read_only=read_only,
            concurrency_safe=read_only,
            destructive=not read_only and annotations.get("destructiveHint") is not False,
            idempotent=read_only or annotations.get("idempotentHint") is True,
            timeout=timeout,
        )

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._server.call(self, args, ctx)


# -- results -----------------------------------------------------------------------------------


def to_result(result: mcp_types.CallToolResult, tool: McpTool, locale: str) -> ToolResult:
    """An MCP result as a ToolResult: text joined, other content summarised a line each."""
    text = content_text(result.content, locale)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, indent=2)
    metadata: dict[str, Any] = {"mcp_server": tool.server, "mcp_tool": tool.remote_name}
    if result.structured_content is not None:
        metadata["structured_content"] = result.structured_content
    if result.is_error:
        return ToolResult.failure(
            ErrorCode.EXECUTION_ERROR,
            text or say(locale, "no_details", tool=tool.name),
            summary=f"{tool.name}: {ErrorCode.EXECUTION_ERROR.value}",
            metadata=metadata,
        )
    return ToolResult.success(text, metadata=metadata)


def content_text(blocks: Sequence[mcp_types.ContentBlock], locale: str) -> str:
    """MCP content as text: text blocks as they are, anything else as a one-line summary."""
    from mcp_types import (
        AudioContent,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    lines: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            lines.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            key = "image" if isinstance(block, ImageContent) else "audio"
            size = say(locale, "bytes", n=_decoded_size(block.data))
            lines.append(say(locale, key, mime=block.mime_type, size=size))
        elif isinstance(block, ResourceLink):
            lines.append(say(locale, "link", name=block.name, uri=block.uri))
        else:  # an embedded resource: the union above is exhaustive
            res = block.resource
            mime = res.mime_type or "?"
            if isinstance(res, TextResourceContents):
                chars = len(res.text)
                lines.append(say(locale, "resource_text", uri=res.uri, mime=mime, chars=chars))
            else:
                size = say(locale, "bytes", n=_decoded_size(res.blob))
                lines.append(say(locale, "resource_blob", uri=res.uri, mime=mime, size=size))
    return "\n".join(lines)


def _decoded_size(data: str) -> int:
    return len(data.rstrip("=")) * 3 // 4
