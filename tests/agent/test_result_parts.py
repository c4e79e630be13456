"""Images a tool returns, through the real agent loop: on the wire, in transcripts, compacted.

A Python tool returns `["caption", ImagePart]`; the scripted model server (real HTTP) records
what the agent sent and refuses what the real provider would refuse.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from handrail import (
    AudioPart,
    ImagePart,
    Registry,
    ResourceLinkPart,
    ResourcePart,
    Runtime,
    TextPart,
    ToolCall,
    ToolResult,
    tool,
)
from handrail.agent import Agent, AssistantMessage, ToolResults, UserMessage, load_session
from handrail.agent._compaction import ATTACHMENT_TOKENS, message_tokens, prune_results
from handrail.agent._conversation import result_from_json, result_to_json
from handrail.testing import ModelServer, Reply, ToolUse

PROVIDERS = ["openai_chat", "openai_responses", "anthropic", "gemini"]


def png(side: int = 2) -> bytes:
    """A real PNG of `side` x `side` red pixels, built with the stdlib."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * side for _ in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    idat = zlib.compress(rows)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


PNG = png()
PNG_B64 = base64.b64encode(PNG).decode("ascii")


@tool(read_only=True)
def screenshot(page: str) -> list[object]:
    """Take a screenshot of a page."""
    return [f"Screenshot of {page}:", ImagePart.of(PNG, "image/png")]


@tool(read_only=True)
def measure(page: str) -> ToolResult:
    """Measure a page: a screenshot and its size."""
    parts = (TextPart(text=f"{page} is 2x2"), ImagePart.of(PNG, "image/png"))
    return ToolResult.success(parts=parts, structured={"width": 2, "height": 2})


@tool(read_only=True)
def photo() -> list[object]:
    """A photo too large for Anthropic to take inline."""
    # 4 MB of image is 5.3 MB of base64: over the 5 MB Anthropic takes for one image.
    return ["The photo:", ImagePart.of(b"\x89PNG\r\n\x1a\n" + os.urandom(4_000_000), "image/png")]


def runtime(root: Path) -> Runtime:
    return Runtime(Registry([screenshot, measure, photo]), root=root, mode="default")


async def run_once(agent: Agent, prompt: str) -> Any:
    async with asyncio.timeout(30):
        return await agent.run(prompt)


def sent_result(provider: str, body: dict[str, Any]) -> Any:
    """Where the provider carries the tool's result in request `body`."""
    if provider == "anthropic":
        message = body["messages"][-1]
        return next(b["content"] for b in message["content"] if b["type"] == "tool_result")
    if provider == "openai_responses":
        item = next(i for i in body["input"] if i.get("type") == "function_call_output")
        return item["output"]
    if provider == "openai_chat":
        return next(m for m in body["messages"] if m["role"] == "tool")["content"]
    return body["contents"][-1]["parts"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_image_a_tool_returns_reaches_the_model_in_its_providers_form(
    provider: str, tmp_path: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("screenshot", {"page": "login"}, id="call_1")]),
        Reply(text="The page is red."),
    )
    rt = runtime(tmp_path)
    agent = Agent(client(provider), rt)
    result = await run_once(agent, "What colour is the login page?")
    await agent.aclose()
    await rt.aclose()
    assert result.subtype == "success", result.error
    assert server.problems == []
    sent = sent_result(provider, server.requests[1].body)
    note = f"[image: image/png, {len(PNG)} bytes]"
    if provider == "anthropic":
        assert sent == [
            {"type": "text", "text": "Screenshot of login:"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
            },
        ]
    elif provider == "openai_responses":
        assert sent == [
            {"type": "input_text", "text": "Screenshot of login:"},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{PNG_B64}",
                "detail": "auto",
            },
        ]
    elif provider == "openai_chat":
        # A tool message takes text only: the model reads the note, and no image is sent.
        assert sent == f"Screenshot of login:\n{note}"
        assert PNG_B64 not in json.dumps(server.requests[1].body)
    else:
        response = {"output": f"Screenshot of login:\n{note}"}
        assert sent == [
            {"functionResponse": {"name": "screenshot", "id": "call_1", "response": response}},
            {"text": "From the result of `screenshot`:"},
            {"inlineData": {"mimeType": "image/png", "data": PNG_B64}},
        ]


async def test_an_image_over_the_providers_limit_goes_as_a_note_and_the_run_goes_on(
    tmp_path: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("photo", {})]),
        Reply(text="It was too large to see."),
    )
    rt = runtime(tmp_path)
    agent = Agent(client("anthropic"), rt)
    result = await run_once(agent, "Look at the photo.")
    await agent.aclose()
    await rt.aclose()
    assert result.subtype == "success", result.error
    assert server.problems == []
    sent = sent_result("anthropic", server.requests[1].body)
    assert isinstance(sent, str)
    assert sent.startswith("The photo:\n[image: image/png, 4000008 bytes] (not attached: larger ")
    assert len(server.requests[1].raw) < 100_000


async def test_a_saved_session_keeps_the_image_and_a_resumed_one_sends_it_again(
    tmp_path: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("measure", {"page": "login"})]),
        Reply(text="It is 2x2 and red."),
    )
    rt = runtime(tmp_path)
    first = Agent(client("anthropic"), rt)
    await run_once(first, "Measure the login page.")
    await first.aclose()
    await rt.aclose()
    path = first.transcript_path
    assert path is not None
    saved = load_session(path)
    [results] = [m for m in saved.messages if isinstance(m, ToolResults)]
    kept = results.results[0]
    assert kept.parts == (TextPart(text="login is 2x2"), ImagePart.of(PNG, "image/png"))
    assert kept.structured == {"width": 2, "height": 2}
    # A new process resumes the session: the model is sent the image it saw before.
    rt2 = runtime(tmp_path)
    second = Agent(client("anthropic"), rt2, transcript=saved.path)
    second.restore(saved.messages, saved.state)
    server.push(Reply(text="Still red."))
    result = await run_once(second, "And now?")
    await second.aclose()
    await rt2.aclose()
    assert result.subtype == "success", result.error
    assert server.problems == []
    assert sent_result("anthropic", {"messages": server.requests[2].body["messages"][:3]}) == [
        {"type": "text", "text": "login is 2x2"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ]


def test_compaction_stubs_an_old_image_result_and_drops_its_parts() -> None:
    image = ImagePart.of(PNG, "image/png")
    old = replace(
        ToolResult.success(parts=(TextPart(text="shot"), image), structured={"w": 2}),
        call_id="c1",
        tool_name="screenshot",
    )
    messages = [
        UserMessage(text="Look."),
        AssistantMessage(calls=(ToolCall(id="c1", name="screenshot"),)),
        ToolResults(results=(old,)),
        UserMessage(text="x" * 4000),
    ]
    # The image is counted as what a provider bills for it, not by its base64.
    assert message_tokens(messages[2]) >= ATTACHMENT_TOKENS
    out, pruned, freed = prune_results(messages, protect=100, locale="en")
    assert isinstance(out[2], ToolResults)
    [stubbed] = out[2].results
    assert pruned == 1 and freed == message_tokens(messages[2]) - message_tokens(out[2])
    assert freed > ATTACHMENT_TOKENS // 2
    assert stubbed.parts == () and stubbed.structured is None
    assert stubbed.content.startswith("[Output removed to save context")
    assert stubbed.call_id == "c1"


def test_every_part_type_survives_a_transcript_round_trip() -> None:
    parts = (
        TextPart(text="caption", annotations={"audience": ["user"]}),
        ImagePart.of(PNG, "image/png"),
        AudioPart.of(b"RIFF", "audio/wav"),
        ResourcePart(uri="file:///a.md", mime_type="text/markdown", text="# A", meta={"k": 1}),
        ResourcePart(uri="file:///a.pdf", mime_type="application/pdf", blob="JVBERg=="),
        ResourceLinkPart(uri="file:///b.log", name="b.log", title="B", size=12),
    )
    result = replace(
        ToolResult.success(parts=parts, structured={"rows": [1, 2]}), call_id="c1", tool_name="t"
    )
    data = json.loads(json.dumps(result_to_json(result)))
    assert result_from_json(data) == result
    # A transcript from a newer version, or a damaged one, loses only what it cannot read.
    data["parts"] = [{"type": "video", "data": "AA=="}, {"type": "image"}, "junk", *data["parts"]]
    assert result_from_json(data).parts == parts
    # A text-only result is stored as before: no parts, no structured content.
    assert set(result_to_json(ToolResult.success("x"))) == {"call_id", "tool_name", "ok", "content"}
