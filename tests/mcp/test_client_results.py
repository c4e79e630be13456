"""Annotations and `_meta` of text-only MCP results, against the official "everything" server.

server-everything's `get-annotated-message` answers with one annotated text block (and, when
asked, an annotated image). The handrail client keeps those annotations as parts, the model
reads the same plain text as before, and `handrail serve` hands a client behind it the blocks
the official client gets from server-everything directly.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from inline_snapshot import snapshot
from mcp.client.stdio import StdioServerParameters

from handrail import Runtime, TextPart
from handrail.mcp import McpServerConfig, McpTools
from handrail.providers import PROVIDERS, result_messages
from mcp import Client

WAIT = 60.0
"""Seconds any single wait may take (node starts, npm peers): a bound, never a threshold."""
TOOL = "get-annotated-message"
CALLS: list[dict[str, Any]] = [
    {"messageType": "success"},
    {"messageType": "error"},
    {"messageType": "debug", "includeImage": True},
]


def blocks(result: Any) -> list[dict[str, Any]]:
    return [b.model_dump(by_alias=True, exclude_none=True, mode="json") for b in result.content]


async def test_a_text_only_result_keeps_its_annotations(tmp_path: Path, mcp_peers: Any) -> None:
    node, *args = mcp_peers.everything
    config = McpServerConfig(name="everything", command=node, args=tuple(args))
    with anyio.fail_after(WAIT):
        async with McpTools([config], root=tmp_path) as mcp:
            rt = Runtime(mcp.registry(), root=tmp_path, mode="bypass")
            try:
                r = await rt.call(f"mcp__everything__{TOOL}", {"messageType": "success"})
            finally:
                await rt.aclose()
    assert (r.ok, r.content, r.structured) == (True, "Operation completed successfully", None)
    assert r.parts == (
        TextPart(
            text="Operation completed successfully",
            annotations={"priority": 0.7, "audience": ["user"]},
        ),
    )
    # The model reads exactly what it read before the parts were kept: the plain text.
    plain = replace(r, parts=())
    for provider in PROVIDERS:
        assert result_messages(provider, [r]) == result_messages(provider, [plain]), provider


def served(tmp_path: Path, everything: list[str]) -> StdioServerParameters:
    """`handrail serve` over an empty workspace, server-everything as a user MCP server."""
    root = tmp_path / "ws"
    root.mkdir()
    xdg = tmp_path / "xdg"
    (xdg / "handrail").mkdir(parents=True)
    node, *args = everything
    servers = {"mcpServers": {"everything": {"command": node, "args": args}}}
    (xdg / "handrail" / "mcp.json").write_text(json.dumps(servers))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "serve", "--root", str(root), "--mode", "bypass"],
        env={"XDG_CONFIG_HOME": str(xdg)},
        cwd=str(tmp_path),
    )


@pytest.mark.parametrize("arguments", CALLS, ids=[json.dumps(a) for a in CALLS])
async def test_serve_passes_annotations_on_as_server_everything_sent_them(
    tmp_path: Path, mcp_peers: Any, arguments: dict[str, Any]
) -> None:
    node, *args = mcp_peers.everything
    direct_params = StdioServerParameters(command=node, args=args)
    with anyio.fail_after(WAIT):
        async with Client(direct_params, mode="legacy") as direct:
            want = await direct.call_tool(TOOL, arguments)
        async with Client(served(tmp_path, mcp_peers.everything), mode="legacy") as client:
            have = await client.call_tool(f"mcp__everything__{TOOL}", arguments)
    assert any("annotations" in b for b in blocks(want))
    assert blocks(have) == blocks(want)
    assert (have.is_error, have.structured_content) == (want.is_error, want.structured_content)


async def test_what_the_official_client_gets_from_server_everything(mcp_peers: Any) -> None:
    """The reference the comparison above holds handrail to (a change upstream shows here)."""
    node, *args = mcp_peers.everything
    with anyio.fail_after(WAIT):
        async with Client(StdioServerParameters(command=node, args=args), mode="legacy") as c:
            got = blocks(await c.call_tool(TOOL, {"messageType": "error"}))
    assert got == snapshot(
        [
            {
                "type": "text",
                "text": "Error: Operation failed",
                "annotations": {"audience": ["user", "assistant"], "priority": 1.0},
            }
        ]
    )
