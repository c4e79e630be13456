"""The shared values: stable error codes, frozen results, the fast constructors."""

from __future__ import annotations

import dataclasses

import pytest
from inline_snapshot import snapshot

from handrail import (
    AudioPart,
    Denial,
    ErrorCode,
    ImagePart,
    Interrupted,
    ResourceLinkPart,
    ResourcePart,
    TextPart,
    ToolCall,
    ToolResult,
    ValidationIssue,
    parts_text,
)
from handrail._contract import make_call, make_result


def test_error_codes_are_stable() -> None:
    # A code is added, never renamed: this list only ever grows.
    assert [c.value for c in ErrorCode] == snapshot(
        [
            "TOOL_NOT_FOUND",
            "TOOL_NOT_ACTIVATED",
            "INVALID_ARGS",
            "PERMISSION_DENIED",
            "INTERRUPTED",
            "TIMEOUT",
            "CANCELLED",
            "EXECUTION_ERROR",
            "OUTSIDE_READ_ROOTS",
            "OUTSIDE_WRITE_ROOTS",
            "FILE_NOT_FOUND",
            "FILE_TOO_LARGE",
            "BINARY_FILE",
            "NOT_A_FILE",
            "FILE_NOT_READ",
            "FILE_MODIFIED_SINCE_READ",
            "TEXT_NOT_FOUND",
            "TEXT_MULTIPLE_MATCHES",
            "NONZERO_EXIT",
            "URL_BLOCKED",
            "HTTP_ERROR",
            "SANDBOX_UNAVAILABLE",
            "REPEATED_CALL",
            "SESSION_LOST",
            "BACKEND_UNAVAILABLE",
        ]
    )


def test_results_are_frozen() -> None:
    r = ToolResult(ok=True, content="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.content = "y"  # type: ignore[misc]


def test_fast_result_equals_the_normal_constructor() -> None:
    issue = ValidationIssue(path="/a", expected="integer", received="string", message="m")
    denial = Denial(reason="no", source="rule", rule="x")
    fast = make_result(
        False,
        "text",
        "c1",
        "tool",
        0.5,
        error=ErrorCode.INVALID_ARGS,
        summary="s",
        issues=(issue,),
        denial=denial,
        metadata={"k": 1},
    )
    slow = ToolResult(
        ok=False,
        content="text",
        call_id="c1",
        tool_name="tool",
        duration=0.5,
        error=ErrorCode.INVALID_ARGS,
        summary="s",
        issues=(issue,),
        denial=denial,
        metadata={"k": 1},
    )
    assert fast == slow
    # every field is covered by the fast constructor (a new field must be added there too)
    assert {f.name for f in dataclasses.fields(ToolResult)} == {
        "ok",
        "content",
        "error",
        "summary",
        "diff",
        "issues",
        "denial",
        "duration",
        "metadata",
        "call_id",
        "tool_name",
        "parts",
        "structured",
    }


def test_fast_call_equals_the_normal_constructor() -> None:
    assert make_call("1", "add", "{}") == ToolCall(id="1", name="add", arguments="{}")


def test_interrupted_is_a_result() -> None:
    i = Interrupted(ok=False, content="waiting", error=ErrorCode.INTERRUPTED)
    assert isinstance(i, ToolResult)
    assert i.approval is None


def test_default_metadata_is_an_empty_mapping() -> None:
    r = ToolResult(ok=True, content="x")
    assert dict(r.metadata) == {}
    assert r.metadata == {}


def test_parts_text_is_the_text_view_of_every_part() -> None:
    parts = (
        TextPart(text="see below"),
        ImagePart.of(b"\x89PNG" + b"\0" * 6, "image/png"),
        AudioPart.of(b"RIFF", "audio/wav"),
        ResourcePart(uri="file:///a.md", mime_type="text/markdown", text="# a"),
        ResourcePart(uri="file:///b.bin", blob="AAAA"),
        ResourceLinkPart(uri="file:///c.csv", name="c.csv"),
    )
    assert parts_text(parts) == snapshot("""\
see below
[image: image/png, 10 bytes]
[audio: audio/wav, 4 bytes]
[resource: file:///a.md (text/markdown)]
# a
[resource: file:///b.bin (?), 3 bytes]
[resource link: c.csv <file:///c.csv>]\
""")
    assert parts_text(parts, "zh").splitlines()[1] == "[图片：image/png，10 字节]"
    # A success with parts and no text gets their text view as its content.
    result = ToolResult.success(parts=parts)
    assert (result.content, result.parts) == (parts_text(parts), parts)
