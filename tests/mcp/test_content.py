"""Content fidelity both ways: every MCP content type through the client, and through
`handrail serve` to a real MCP client, against a real SDK server that produces them all."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from inline_snapshot import snapshot
from mcp.client.stdio import StdioServerParameters

from handrail import (
    AudioPart,
    ErrorCode,
    ImagePart,
    ResourceLinkPart,
    ResourcePart,
    Runtime,
    TextPart,
)
from handrail.mcp import McpServerConfig, McpTools
from mcp import Client

SERVERS = Path(__file__).parent / "servers"
sys.path.insert(0, str(SERVERS))
import content_server as upstream  # noqa: E402  # pyright: ignore[reportMissingImports]

WAIT = 60.0


def config(name: str = "content") -> McpServerConfig:
    return McpServerConfig(
        name=name, command=sys.executable, args=(str(SERVERS / "content_server.py"),)
    )


@pytest.fixture
async def content() -> AsyncIterator[McpTools]:
    async with McpTools([config()], root=SERVERS) as mcp:
        yield mcp


def runtime(root: Path, mcp: McpTools, **kw: Any) -> Runtime:
    kw.setdefault("mode", "bypass")
    return Runtime(mcp.registry(), root=root, **kw)


async def test_every_content_type_is_kept_in_order_with_its_bytes(
    tmp_path: Path, content: McpTools
) -> None:
    r = await runtime(tmp_path, content).call("mcp__content__everything", {})
    assert r.ok
    text, image, audio, doc, data, link = r.parts
    assert text == TextPart(text="a picture, a sound and two files", meta={"k": "v"})
    assert isinstance(image, ImagePart) and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == upstream.png()
    assert image.annotations == {"audience": ["user"], "priority": 0.5}
    assert isinstance(audio, AudioPart) and base64.b64decode(audio.data) == upstream.wav()
    assert doc == ResourcePart(
        uri="file:///notes/readme.md", mime_type="text/markdown", text="# hi"
    )
    assert isinstance(data, ResourcePart) and data.blob is not None
    assert base64.b64decode(data.blob) == upstream.blob_bytes(100)
    assert link == ResourceLinkPart(
        uri="file:///notes/big.csv",
        name="big.csv",
        title="Big table",
        description="A table too big to embed.",
        mime_type="text/csv",
        size=123456,
    )
    # The text view, for formats that take only text: nothing is silently dropped.
    assert r.content == snapshot("""\
a picture, a sound and two files
[image: image/png, 73 bytes]
[audio: audio/wav, 108 bytes]
[resource: file:///notes/readme.md (text/markdown)]
# hi
[resource: file:///notes/data.bin (application/octet-stream), 100 bytes]
[resource link: big.csv <file:///notes/big.csv>]\
""")


async def test_text_only_results_stay_plain_text(tmp_path: Path, content: McpTools) -> None:
    r = await runtime(tmp_path, content).call("mcp__content__echo", {"text": "hi"})
    assert (r.ok, r.content, r.parts, r.structured) == (True, "hi", (), None)


async def test_structured_content_is_kept_and_checked_against_the_output_schema(
    tmp_path: Path, content: McpTools
) -> None:
    tools = {t.name: t for t in content.tools}
    assert tools["mcp__content__weather"].output_schema == upstream.WEATHER_SCHEMA
    rt = runtime(tmp_path, content)
    good = await rt.call("mcp__content__weather", {"city": "Oslo"})
    assert (good.ok, good.structured, good.content) == (
        True,
        {"city": "Oslo", "temperature": 21.5},
        "Oslo: 21.5 C",
    )
    bad = await rt.call("mcp__content__bad_weather", {})
    assert (bad.ok, bad.error, bad.structured) == (False, ErrorCode.EXECUTION_ERROR, None)
    assert bad.content == snapshot(
        "MCP server `content` answered the call to `mcp__content__bad_weather` with structured "
        "content that does not match the tool's output schema ('warm' is not of type "
        "'number'). This is a fault of the server, not of your arguments; tell the user or use "
        "another way."
    )


async def test_an_error_keeps_its_content_parts(tmp_path: Path, content: McpTools) -> None:
    r = await runtime(tmp_path, content).call("mcp__content__failing_picture", {})
    assert (r.ok, r.error) == (False, ErrorCode.EXECUTION_ERROR)
    assert [type(p).__name__ for p in r.parts] == ["TextPart", "ImagePart"]
    assert r.content.startswith("the camera jammed\n[image: image/png")


async def test_a_tool_that_requires_tasks_is_listed(tmp_path: Path, content: McpTools) -> None:
    names = [t.name for t in content.tools]
    assert "mcp__content__long_job" in names and content.skipped == {}
    # This server answers a task request with a plain result: that result is the answer.
    r = await runtime(tmp_path, content).call("mcp__content__long_job", {})
    assert (r.ok, r.content) == (False, "long_job must run as a task")
    # Optional task support: called directly, like any tool.
    assert "mcp__content__maybe_task" in names


async def test_optional_task_tool_is_called_directly(tmp_path: Path, content: McpTools) -> None:
    r = await runtime(tmp_path, content).call("mcp__content__maybe_task", {})
    assert (r.ok, r.content) == (True, "done directly")


# -- through handrail serve --------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> StdioServerParameters:
    """`handrail serve` over an empty workspace, with the content server as a user MCP server."""
    root = tmp_path / "ws"
    root.mkdir()
    xdg = tmp_path / "xdg"
    (xdg / "handrail").mkdir(parents=True)
    servers = {
        "mcpServers": {
            "content": {"command": sys.executable, "args": [str(SERVERS / "content_server.py")]}
        }
    }
    (xdg / "handrail" / "mcp.json").write_text(json.dumps(servers))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "serve", "--root", str(root), "--mode", "bypass"],
        env={"XDG_CONFIG_HOME": str(xdg)},
        cwd=str(tmp_path),
    )


def upstream_params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SERVERS / "content_server.py")])


def blocks(result: Any) -> list[dict[str, Any]]:
    return [b.model_dump(by_alias=True, exclude_none=True, mode="json") for b in result.content]


async def test_serve_passes_every_content_type_through_unchanged(
    served: StdioServerParameters,
) -> None:
    calls = [
        ("everything", {}),
        ("picture", {}),
        ("blob", {"size": 4096}),
        ("weather", {"city": "Oslo"}),
        ("failing_picture", {}),
    ]
    with anyio.fail_after(WAIT):
        async with Client(upstream_params(), mode="legacy") as direct:
            await direct.list_tools()
            expected = [await direct.call_tool(n, a) for n, a in calls]
        async with Client(served, mode="legacy") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            got = [await client.call_tool(f"mcp__content__{n}", a) for n, a in calls]
    assert listed["mcp__content__weather"].output_schema == upstream.WEATHER_SCHEMA
    assert "mcp__content__long_job" in listed  # served as a plain tool, run upstream as a task
    for want, have in zip(expected, got, strict=True):
        assert blocks(have) == blocks(want)
        assert have.structured_content == want.structured_content
        assert have.is_error == want.is_error
