"""Results richer than text from Python tools: content parts and structured content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    ConfigurationError,
    ErrorCode,
    ImagePart,
    Runtime,
    TextPart,
    ToolResult,
    tool,
)

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}


class Count(BaseModel):
    n: int


@tool(read_only=True, output_schema=SCHEMA)
def count(text: str) -> Any:
    """Count characters."""
    if text == "model":
        return Count(n=5)
    if text == "wrong":
        return {"n": "five"}
    if text == "none":
        return "no structure here"
    if text == "failure":
        return ToolResult.failure(ErrorCode.FILE_NOT_FOUND, "nothing to count")
    return {"n": len(text)}


@tool(read_only=True)
def snapshot_screen() -> list[Any]:
    """A screenshot with a caption."""
    return ["the screen:", ImagePart.of(b"\x89PNG\r\n\x1a\n", "image/png")]


@tool(read_only=True, max_result_chars=200)
def long_caption() -> list[Any]:
    """A long caption and an image."""
    return ["x" * 1000, ImagePart.of(b"img", "image/png")]


def rt(tmp_path: Path) -> Runtime:
    return Runtime([count, snapshot_screen, long_caption], root=tmp_path)


async def test_a_returned_mapping_or_model_becomes_checked_structured_content(
    tmp_path: Path,
) -> None:
    r = await rt(tmp_path).call("count", {"text": "abc"})
    assert (r.ok, r.structured, r.content) == (True, {"n": 3}, '{\n  "n": 3\n}')
    m = await rt(tmp_path).call("count", {"text": "model"})
    assert m.structured == {"n": 5}


async def test_breaking_the_output_schema_is_an_execution_error_not_bad_data(
    tmp_path: Path,
) -> None:
    r = await rt(tmp_path).call("count", {"text": "wrong"})
    assert (r.ok, r.error, r.structured) == (False, ErrorCode.EXECUTION_ERROR, None)
    assert r.content == snapshot(
        '`count` declares an output schema, but its result does not match it (at /n: "five" '
        'is not of type "integer"). This is a fault of the tool, not of your arguments; do not '
        "retry the same call, tell the user or use another way."
    )
    none = await rt(tmp_path).call("count", {"text": "none"})
    assert (none.error, "no structured content" in none.content) == (
        ErrorCode.EXECUTION_ERROR,
        True,
    )
    # A failure the tool chose keeps its own code: there is nothing to check.
    failed = await rt(tmp_path).call("count", {"text": "failure"})
    assert failed.error is ErrorCode.FILE_NOT_FOUND


async def test_returned_parts_keep_their_order_and_get_a_text_view(tmp_path: Path) -> None:
    r = await rt(tmp_path).call("snapshot_screen", {})
    assert r.ok
    assert r.parts[0] == TextPart(text="the screen:")
    assert isinstance(r.parts[1], ImagePart)
    assert r.content == "the screen:\n[image: image/png, 8 bytes]"


async def test_a_cut_text_view_replaces_the_text_parts_and_keeps_the_image(
    tmp_path: Path,
) -> None:
    r = await rt(tmp_path).call("long_caption", {})
    assert r.ok and len(r.content) < 1000
    assert [type(p).__name__ for p in r.parts] == ["TextPart", "ImagePart"]
    first = r.parts[0]
    assert isinstance(first, TextPart) and first.text == r.content


def test_an_output_schema_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="must describe an object"):

        @tool(output_schema={"type": "string"})
        def bad() -> str:
            """Bad."""
            return ""
