"""server-everything as a real peer of handrail's MCP client, compared with the official client.

The reference "everything" server (npm `@modelcontextprotocol/server-everything`, pinned in
`tests/mcp/peers`) runs twice over stdio: once under handrail's client (`McpTools`, every call
through `Runtime.call`) and once under the official `mcp` `Client`. Every tool is called with
the same arguments in both, and handrail's `ToolResult` must hold exactly the blocks the
official client got: text, images (data and MIME type), embedded text and blob resources,
resource links, structured content, annotations, `_meta` and `isError`, in order.

A `ToolResult`'s blocks are its `parts` (as `handrail serve` would send them on) or, for a
plain text result, its text as one block. The one thing that differs between the two server
processes is the clock: the resources `get-resource-reference` embeds say when they were
made, so that time is masked on both sides before comparing.

Left out (others are building these now, issue 26): the tools that need the client's
elicitation (`trigger-elicitation-request`, `trigger-url-elicitation`), sampling
(`trigger-sampling-request`), roots (`get-roots-list`) or tasks (`simulate-research-query`,
which requires them; `trigger-sampling-request-async` and `trigger-elicitation-request-async`,
which send task-augmented requests to the client). A test fails when the server lists a tool
that is neither compared nor named here.

`get-env` shows what the server process was given: a canary planted in the test's own
environment (`HANDRAIL_TEST_SECRET_TOKEN`) must not reach it, while the same variable named
in the server's configuration does (so the check can see it when it is there).
"""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client

from handrail import ErrorCode, Runtime, ToolResult
from handrail._contract import part_to_json
from handrail.mcp import McpServerConfig, McpTools
from mcp import Client

from .conftest import Peers

WAIT = 120.0
"""Seconds one client's whole session may take (node starts, every tool): a bound only."""
SERVER = "ev"
PREFIX = f"mcp__{SERVER}__"
SECRET = "HANDRAIL_TEST_SECRET_TOKEN"
GZIPPED = "data:text/plain;base64," + base64.b64encode(b"handrail\n" * 40).decode()

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "echo": ("echo", {"message": "hello from handrail ✓"}),
    "annotated-success": ("get-annotated-message", {"messageType": "success"}),
    "annotated-error": ("get-annotated-message", {"messageType": "error"}),
    "annotated-debug-image": (
        "get-annotated-message",
        {"messageType": "debug", "includeImage": True},
    ),
    "env": ("get-env", {}),
    "resource-links": ("get-resource-links", {"count": 4}),
    "embedded-text": ("get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
    "embedded-blob": ("get-resource-reference", {"resourceType": "Blob", "resourceId": 3}),
    "server-error": ("get-resource-reference", {"resourceType": "Text", "resourceId": 0}),
    "structured": ("get-structured-content", {"location": "Chicago"}),
    "sum": ("get-sum", {"a": 2, "b": 40.5}),
    "tiny-image": ("get-tiny-image", {}),
    "gzip-resource": (
        "gzip-file-as-resource",
        {"name": "notes.txt.gz", "data": GZIPPED, "outputType": "resource"},
    ),
    "gzip-link": (
        "gzip-file-as-resource",
        {"name": "more.txt.gz", "data": GZIPPED, "outputType": "resourceLink"},
    ),
    "gzip-refused": ("gzip-file-as-resource", {"name": "x.gz", "data": "file:///etc/hostname"}),
    "logging-on": ("toggle-simulated-logging", {}),
    "logging-off": ("toggle-simulated-logging", {}),  # its timer would keep the server up
    "updates-on": ("toggle-subscriber-updates", {}),
    "updates-off": ("toggle-subscriber-updates", {}),
    "long-running": ("trigger-long-running-operation", {"duration": 0.2, "steps": 2}),
}
LEFT_OUT = {
    "get-roots-list": "roots",
    "trigger-elicitation-request": "elicitation",
    "trigger-url-elicitation": "elicitation",
    "trigger-sampling-request": "sampling",
    "simulate-research-query": "tasks",
    "trigger-sampling-request-async": "sampling and tasks",
    "trigger-elicitation-request-async": "elicitation and tasks",
}

_CLOCK = re.compile(r"created at .+$")
_DEMO = "demo://resource/dynamic/"
"""The resources whose text says when they were made."""


def _unclocked(text: str) -> str:
    return _CLOCK.sub("created at <time>", text)


def _mask_time(block: dict[str, Any]) -> dict[str, Any]:
    """The block with the creation time of a demo resource masked (text and blob alike)."""
    resource: dict[str, Any] | None = block.get("resource")
    if block.get("type") != "resource" or resource is None:
        return block
    if not str(resource.get("uri", "")).startswith(_DEMO):
        return block
    masked = dict(resource)
    if "text" in masked:
        masked["text"] = _unclocked(masked["text"])
    if "blob" in masked:
        plain = base64.b64decode(masked["blob"]).decode()
        masked["blob"] = base64.b64encode(_unclocked(plain).encode()).decode()
    return {**block, "resource": masked}


def official_view(result: Any) -> dict[str, Any]:
    """What the official client got, as JSON."""
    blocks = [b.model_dump(by_alias=True, exclude_none=True, mode="json") for b in result.content]
    return {
        "isError": result.is_error,
        "blocks": [_mask_time(b) for b in blocks],
        "structuredContent": result.structured_content,
        "_meta": result.meta,
    }


def handrail_view(result: ToolResult) -> dict[str, Any]:
    """What handrail's result holds, as the same JSON."""
    blocks = (
        [part_to_json(p) for p in result.parts]
        if result.parts
        else [{"type": "text", "text": result.content}]
    )
    return {
        "isError": not result.ok,
        "blocks": [_mask_time(b) for b in blocks],
        "structuredContent": dict(result.structured) if result.structured is not None else None,
        "_meta": result.metadata.get("mcp_meta"),
    }


async def _official(peers: Peers) -> dict[str, dict[str, Any]]:
    node, *args = peers.everything
    seen: dict[str, dict[str, Any]] = {}
    async with Client(stdio_client(StdioServerParameters(command=node, args=args))) as client:
        for key, (name, arguments) in CALLS.items():
            seen[key] = official_view(await client.call_tool(name, arguments))
    return seen


async def _handrail(peers: Peers, root: Path) -> tuple[dict[str, ToolResult], list[str]]:
    node, *args = peers.everything
    config = McpServerConfig(name=SERVER, command=node, args=tuple(args))
    got: dict[str, ToolResult] = {}
    async with McpTools([config], root=root) as mcp:
        names = {t.remote_name: t.name for t in mcp.tools}
        listed = [*names, *(key.split("/", 1)[1] for key in mcp.skipped)]
        rt = Runtime(mcp.registry(), root=root, mode="bypass", load_settings=False)
        try:
            for key, (name, arguments) in CALLS.items():
                got[key] = await rt.call(names[name], arguments)
        finally:
            await rt.aclose()
    return got, listed


class Compared:
    """Both clients' results for every call in `CALLS`, and the tools handrail was offered."""

    def __init__(
        self,
        official: dict[str, dict[str, Any]],
        handrail: dict[str, ToolResult],
        listed: list[str],
        canary: str,
    ) -> None:
        self.official = official
        self.handrail = handrail
        self.listed = listed
        self.canary = canary


@pytest.fixture(scope="module")
def compared(mcp_peers: Peers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compared]:
    """One session of each client, the canary planted in this process's environment."""
    root = tmp_path_factory.mktemp("everything")
    canary = f"canary-{uuid.uuid4().hex}"

    async def both() -> Compared:
        with anyio.fail_after(WAIT):
            official = await _official(mcp_peers)
            handrail, listed = await _handrail(mcp_peers, root)
        return Compared(official, handrail, listed, canary)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SECRET, canary)
        yield anyio.run(both)


@pytest.mark.parametrize("key", list(CALLS))
def test_handrail_keeps_every_block_the_official_client_gets(key: str, compared: Compared) -> None:
    got = compared.handrail[key]
    assert got.error in (None, ErrorCode.EXECUTION_ERROR), got.content  # the call reached it
    assert handrail_view(got) == compared.official[key]


def test_the_comparison_covers_every_kind_of_content(compared: Compared) -> None:
    """A guard on `CALLS`: the official results hold each thing the comparison claims to check."""
    views = compared.official.values()
    blocks = [b for v in views for b in v["blocks"]]
    assert {b["type"] for b in blocks} >= {"text", "image", "resource", "resource_link"}
    resources = [b["resource"] for b in blocks if b["type"] == "resource"]
    assert any("text" in r for r in resources) and any("blob" in r for r in resources)
    annotated = [b for b in blocks if "annotations" in b]
    assert {b["type"] for b in annotated} >= {"text", "image"}
    assert any(len(v["blocks"]) == 1 and "annotations" in v["blocks"][0] for v in views)
    assert any(v["structuredContent"] is not None for v in views)
    assert any(v["isError"] for v in views)


def test_every_tool_offered_is_compared_or_named_as_left_out(compared: Compared) -> None:
    offered = set(compared.listed)
    called = {name for name, _ in CALLS.values()}
    assert offered - called - set(LEFT_OUT) == set(), "a tool nobody compares"
    assert called <= offered, "a compared tool handrail was not offered"


def test_get_env_does_not_see_the_parents_secrets(compared: Compared) -> None:
    assert os.environ[SECRET] == compared.canary  # the parent has it while the servers run
    got = compared.handrail["env"]
    env = json.loads(got.content)
    assert SECRET not in env
    assert compared.canary not in got.content
    assert set(env) >= {"PATH", "HOME"}  # the server did report its environment


async def test_a_variable_named_in_the_config_does_reach_the_server(
    mcp_peers: Peers, tmp_path: Path
) -> None:
    """The control: `get-env` would show the canary if handrail passed it."""
    canary = f"canary-{uuid.uuid4().hex}"
    node, *args = mcp_peers.everything
    config = McpServerConfig(name=SERVER, command=node, args=tuple(args), env={SECRET: canary})
    with anyio.fail_after(WAIT):
        async with McpTools([config], root=tmp_path) as mcp:
            rt = Runtime(mcp.registry(), root=tmp_path, mode="bypass", load_settings=False)
            try:
                got = await rt.call(PREFIX + "get-env", {})
            finally:
                await rt.aclose()
    assert json.loads(got.content)[SECRET] == canary
