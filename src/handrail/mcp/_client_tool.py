"""An MCP server's tool as a handrail tool."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol

from .. import JsonSchemaTool, ToolContext, ToolResult

__all__ = ["McpTool", "ToolServer"]


class ToolServer(Protocol):
    """What a tool needs of its server: a name, and a way to call the tool on it."""

    @property
    def name(self) -> str:
        """The server's name, as configured."""
        ...

    async def call(self, tool: McpTool, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call `tool` with validated `args`; every outcome is a result or a `ToolFailure`."""
        ...

    def serving(self, ctx: ToolContext) -> AbstractContextManager[None]:
        """While `ctx`'s call runs, the server's own requests are answered on its behalf."""
        ...


class McpTool(JsonSchemaTool):
    """A tool of an MCP server; calls go over that server's shared connection."""

    def __init__(
        self,
        *,
        name: str,
        server: ToolServer,
        remote_name: str,
        description: str,
        parameters: Mapping[str, Any],
        annotations: Mapping[str, Any],
        title: str | None = None,
        timeout: float | None = None,
        output_schema: Mapping[str, Any] | None = None,
        task_required: bool = False,
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
        self.task_required = task_required
        """The server runs this tool only as an MCP task (`execution.taskSupport: required`)."""
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
            output_schema=output_schema,
        )

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        with self._server.serving(ctx):
            return await self._server.call(self, args, ctx)
