"""Results with content parts on every provider's wire: what each takes, what becomes a note.

Payloads are snapshots (what the model receives is product surface); every one of them also
passes the scripted model server's checks, which refuse what the real provider refuses.
"""

from __future__ import annotations

import base64
import struct
import zlib
from dataclasses import replace
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import (
    AudioPart,
    ErrorCode,
    ImagePart,
    ResourceLinkPart,
    ResourcePart,
    TextPart,
    ToolCall,
    ToolResult,
)
from handrail.providers import (
    anthropic_results,
    gemini_results,
    openai_chat_results,
    openai_responses_results,
    result_messages,
)
from handrail.testing._checks import check


def png(width: int = 1, height: int = 1) -> bytes:
    """A real PNG (red pixels), built with the stdlib."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG = png()
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
STILL_GIF = b"GIF89a\x01\x00\x01\x00\x00\x00\x00!\xf9\x04\x00\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
ANIMATED_GIF = (
    STILL_GIF[:-1]
    + b"!\xf9\x04\x00\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


EVERY_PART = (
    TextPart(text="Screenshot of the login page:"),
    ImagePart.of(PNG, "image/png"),
    AudioPart.of(b"RIFF\x24\x00\x00\x00WAVE", "audio/wav"),
    ResourcePart(uri="file:///ws/notes.md", mime_type="text/markdown", text="# Notes\nship it"),
    ResourcePart(uri="file:///ws/docs/spec.pdf", mime_type="application/pdf", blob=b64(PDF)),
    ResourcePart(uri="file:///ws/core.bin", mime_type="application/octet-stream", blob="AAEC"),
    ResourceLinkPart(uri="file:///ws/big.log", name="big.log", mime_type="text/plain"),
)


def rich(call_id: str = "call_1", parts: tuple[Any, ...] = EVERY_PART, **kw: Any) -> ToolResult:
    return replace(ToolResult.success(parts=parts), call_id=call_id, tool_name="inspect", **kw)


def failed(call_id: str = "call_1") -> ToolResult:
    result = rich(call_id, parts=(TextPart(text="render failed"), ImagePart.of(PNG, "image/png")))
    return replace(result, ok=False, error=ErrorCode.EXECUTION_ERROR)


# The history each payload is checked in: one assistant turn that made the call.
def checked(provider: str, payload: list[dict[str, Any]], *call_ids: str) -> list[str]:
    ids = call_ids or ("call_1",)
    if provider == "anthropic":
        calls = [{"type": "tool_use", "id": i, "name": "inspect", "input": {}} for i in ids]
        body: dict[str, Any] = {
            "model": "m",
            "max_tokens": 10,
            "messages": [
                {"role": "user", "content": "Look."},
                {"role": "assistant", "content": calls},
                *payload,
            ],
        }
    elif provider == "openai_responses":
        calls = [
            {"type": "function_call", "call_id": i, "name": "inspect", "arguments": "{}"}
            for i in ids
        ]
        body = {"model": "m", "input": [{"role": "user", "content": "Look."}, *calls, *payload]}
    elif provider == "openai_chat":
        tool_calls = [
            {"id": i, "type": "function", "function": {"name": "inspect", "arguments": "{}"}}
            for i in ids
        ]
        body = {
            "model": "m",
            "messages": [
                {"role": "user", "content": "Look."},
                {"role": "assistant", "tool_calls": tool_calls},
                *payload,
            ],
        }
    else:
        calls = [{"functionCall": {"id": i, "name": "inspect", "args": {}}} for i in ids]
        body = {
            "contents": [
                {"role": "user", "parts": [{"text": "Look."}]},
                {"role": "model", "parts": calls},
                *payload,
            ]
        }
    return check(provider, body)


# -- every part type, per provider -----------------------------------------------------------


def test_anthropic_sends_text_images_and_documents_in_order() -> None:
    message = anthropic_results([rich()])
    assert message == snapshot(
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [
                        {"type": "text", "text": "Screenshot of the login page:"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                            },
                        },
                        {"type": "text", "text": "[audio: audio/wav, 12 bytes]"},
                        {
                            "type": "document",
                            "source": {
                                "type": "text",
                                "media_type": "text/plain",
                                "data": """\
# Notes
ship it\
""",
                            },
                            "title": "file:///ws/notes.md",
                        },
                        {
                            "type": "document",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": "JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK",
                            },
                            "title": "file:///ws/docs/spec.pdf",
                        },
                        {
                            "type": "text",
                            "text": """\
[resource: file:///ws/core.bin (application/octet-stream), 3 bytes]
[resource link: big.log <file:///ws/big.log>]\
""",
                        },
                    ],
                    "is_error": False,
                }
            ],
        }
    )
    assert checked("anthropic", [message]) == []


def test_openai_responses_sends_input_text_image_and_file_items() -> None:
    items = openai_responses_results([rich()])
    assert items == snapshot(
        [
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": [
                    {"type": "input_text", "text": "Screenshot of the login page:"},
                    {
                        "type": "input_image",
                        "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                        "detail": "auto",
                    },
                    {
                        "type": "input_text",
                        "text": """\
[audio: audio/wav, 12 bytes]
[resource: file:///ws/notes.md (text/markdown)]
# Notes
ship it\
""",
                    },
                    {
                        "type": "input_file",
                        "filename": "spec.pdf",
                        "file_data": "data:application/pdf;base64,JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK",
                    },
                    {
                        "type": "input_text",
                        "text": """\
[resource: file:///ws/core.bin (application/octet-stream), 3 bytes]
[resource link: big.log <file:///ws/big.log>]\
""",
                    },
                ],
            }
        ]
    )
    assert checked("openai_responses", items) == []


def test_openai_chat_sends_the_text_view_with_notes() -> None:
    messages = openai_chat_results([rich()])
    assert messages == snapshot(
        [
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": """\
Screenshot of the login page:
[image: image/png, 69 bytes]
[audio: audio/wav, 12 bytes]
[resource: file:///ws/notes.md (text/markdown)]
# Notes
ship it
[resource: file:///ws/docs/spec.pdf (application/pdf), 45 bytes]
[resource: file:///ws/core.bin (application/octet-stream), 3 bytes]
[resource link: big.log <file:///ws/big.log>]\
""",
            }
        ]
    )
    assert messages[0]["content"] == rich().content
    assert checked("openai_chat", messages) == []


def test_openai_chat_can_show_images_in_a_following_user_message() -> None:
    second = rich("call_2", parts=(ImagePart.of(PNG, "image/png"),))
    messages = openai_chat_results([rich(), second], images=True)
    assert messages == snapshot(
        [
            {
                "role": "tool",
                "tool_call_id": "call_1",
                "content": """\
Screenshot of the login page:
[image: image/png, 69 bytes]
[audio: audio/wav, 12 bytes]
[resource: file:///ws/notes.md (text/markdown)]
# Notes
ship it
[resource: file:///ws/docs/spec.pdf (application/pdf), 45 bytes]
[resource: file:///ws/core.bin (application/octet-stream), 3 bytes]
[resource link: big.log <file:///ws/big.log>]\
""",
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "[image: image/png, 69 bytes]"},
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "The images below come from the results of the tool calls above, not from the user.",
                    },
                    {"type": "text", "text": "From the result of `inspect` (call call_1):"},
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                            "detail": "auto",
                        },
                    },
                    {"type": "text", "text": "From the result of `inspect` (call call_2):"},
                    {
                        "type": "image_url",
                        "image_url": {
                            "url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                            "detail": "auto",
                        },
                    },
                ],
            },
        ]
    )
    assert checked("openai_chat", messages, "call_1", "call_2") == []


def test_gemini_sends_media_beside_the_function_responses() -> None:
    content = gemini_results([rich()])
    assert content == snapshot(
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "inspect",
                        "id": "call_1",
                        "response": {
                            "output": """\
Screenshot of the login page:
[image: image/png, 69 bytes]
[audio: audio/wav, 12 bytes]
[resource: file:///ws/notes.md (text/markdown)]
# Notes
ship it
[resource: file:///ws/docs/spec.pdf (application/pdf), 45 bytes]
[resource: file:///ws/core.bin (application/octet-stream), 3 bytes]
[resource link: big.log <file:///ws/big.log>]\
"""
                        },
                    }
                },
                {"text": "From the result of `inspect`:"},
                {
                    "inlineData": {
                        "mimeType": "image/png",
                        "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                    }
                },
                {"inlineData": {"mimeType": "audio/wav", "data": "UklGRiQAAABXQVZF"}},
                {
                    "inlineData": {
                        "mimeType": "application/pdf",
                        "data": "JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK",
                    }
                },
            ],
        }
    )
    assert checked("gemini", [content]) == []


def test_gemini_3_can_take_media_inside_the_function_response() -> None:
    content = gemini_results([rich()], media="inside")
    assert content == snapshot(
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "inspect",
                        "id": "call_1",
                        "response": {
                            "output": """\
Screenshot of the login page:
[image: image/png, 69 bytes]
[audio: audio/wav, 12 bytes]
[resource: file:///ws/notes.md (text/markdown)]
# Notes
ship it
[resource: file:///ws/docs/spec.pdf (application/pdf), 45 bytes]
[resource: file:///ws/core.bin (application/octet-stream), 3 bytes]
[resource link: big.log <file:///ws/big.log>]\
"""
                        },
                        "parts": [
                            {
                                "inlineData": {
                                    "mimeType": "image/png",
                                    "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                                }
                            },
                            {
                                "inlineData": {
                                    "mimeType": "application/pdf",
                                    "data": "JVBERi0xLjQKMSAwIG9iajw8Pj5lbmRvYmoKdHJhaWxlcjw8Pj4KJSVFT0YK",
                                }
                            },
                        ],
                    }
                }
            ],
        }
    )
    assert checked("gemini", [content]) == []


def test_gemini_media_text_sends_the_notes_only() -> None:
    content = gemini_results([rich()], media="text")
    assert content["parts"] == [
        {
            "functionResponse": {
                "name": "inspect",
                "id": "call_1",
                "response": {"output": rich().content},
            }
        }
    ]


# -- failures, text only, locale -------------------------------------------------------------


def test_a_failure_with_parts_keeps_its_flag_or_its_code() -> None:
    assert anthropic_results([failed()])["content"][0] == snapshot(
        {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": [
                {"type": "text", "text": "render failed"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                    },
                },
            ],
            "is_error": True,
        }
    )
    assert openai_responses_results([failed()])[0]["output"] == snapshot(
        [
            {"type": "input_text", "text": "Error (EXECUTION_ERROR): render failed"},
            {
                "type": "input_image",
                "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                "detail": "auto",
            },
        ]
    )
    assert gemini_results([failed()])["parts"][0] == snapshot(
        {
            "functionResponse": {
                "name": "inspect",
                "id": "call_1",
                "response": {
                    "error": """\
render failed
[image: image/png, 69 bytes]\
"""
                },
            }
        }
    )
    assert openai_chat_results([failed()])[0]["content"] == snapshot("""\
Error (EXECUTION_ERROR): render failed
[image: image/png, 69 bytes]\
""")


def test_a_failure_whose_parts_have_no_text_still_starts_with_its_code() -> None:
    result = replace(
        rich(parts=(ImagePart.of(PNG, "image/png"),)), ok=False, error=ErrorCode.TIMEOUT
    )
    output = openai_responses_results([result])[0]["output"]
    assert output[0] == {"type": "input_text", "text": "Error (TIMEOUT):"}
    assert output[1]["type"] == "input_image"


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_text_only_results_are_sent_exactly_as_before(provider: str) -> None:
    plain = ToolResult(ok=True, content="just text", call_id="call_1", tool_name="inspect")
    as_parts = rich(parts=(TextPart(text="just text"),))
    assert result_messages(provider, [as_parts]) == result_messages(provider, [plain])
    # A part no provider here can take (a resource link) leaves the text view as it is.
    linked = rich(parts=(ResourceLinkPart(uri="file:///a", name="a"),))
    sent = str(result_messages(provider, [linked]))
    assert linked.content in sent and "not attached" not in sent


def test_notes_follow_the_locale() -> None:
    too_big = ImagePart(data="A" * (5 * 1024 * 1024 + 4), mime_type="image/png")
    result = rich(parts=(TextPart(text="截图:"), too_big))
    assert anthropic_results([result], locale="zh")["content"][0]["content"] == snapshot("""\
截图:
[图片：image/png，3932163 字节](未附上:超过该模型单个附件 3.9 MB 的上限)\
""")


# -- limits ----------------------------------------------------------------------------------


def test_an_image_over_anthropics_5_mb_of_base64_goes_as_a_note() -> None:
    # The API measures the base64 text: 5 MiB of it is the most one image may have.
    at_limit = ImagePart(data="A" * (5 * 1024 * 1024), mime_type="image/png")
    over = ImagePart(data="A" * (5 * 1024 * 1024 + 4), mime_type="image/png")
    content = anthropic_results([rich(parts=(at_limit, over))])["content"][0]["content"]
    assert [b["type"] for b in content] == ["image", "text"]
    assert content[1]["text"] == snapshot(
        "[image: image/png, 3932163 bytes] (not attached: larger than the 3.9 MB this model takes for one attachment)"
    )


def test_a_turn_attaches_no_more_than_one_request_may_carry() -> None:
    # Gemini: 20 MB of request, so 15 MB of bytes in one turn; each image is under the cap for
    # one, the third one is over what is left.
    image = ImagePart(data="A" * (6_000_000 * 4 // 3), mime_type="image/png")
    results = [rich(f"call_{i}", parts=(image,)) for i in (1, 2, 3)]
    content = gemini_results(results)
    inline = [p for p in content["parts"] if "inlineData" in p]
    assert len(inline) == 2
    assert content["parts"][2]["functionResponse"]["response"]["output"] == snapshot(
        "[image: image/png, 6000000 bytes] (not attached: this turn's attachments already reach the 15.0 MB this model takes in one request)"
    )


def test_openai_refuses_animated_gifs_so_they_go_as_notes() -> None:
    parts = (ImagePart.of(STILL_GIF, "image/gif"), ImagePart.of(ANIMATED_GIF, "image/gif"))
    output = openai_responses_results([rich(parts=parts)])[0]["output"]
    assert [item["type"] for item in output] == ["input_image", "input_text"]
    assert output[1]["text"] == f"[image: image/gif, {len(ANIMATED_GIF)} bytes]"
    # Anthropic takes GIFs as they are.
    content = anthropic_results([rich(parts=parts)])["content"][0]["content"]
    assert [b["type"] for b in content] == ["image", "image"]


def test_an_unsupported_image_type_goes_as_a_note() -> None:
    bmp = ImagePart.of(b"BM\x00\x00", "image/bmp")
    assert (
        anthropic_results([rich(parts=(bmp,))])["content"][0]["content"]
        == "[image: image/bmp, 4 bytes]"
    )


def test_an_interrupted_or_unanswered_call_is_unchanged_by_parts() -> None:
    calls = [ToolCall(id="call_1", name="inspect"), ToolCall(id="call_2", name="inspect")]
    message = anthropic_results([rich()], calls=calls)
    assert message["content"][1]["content"].startswith("Not run: no result was recorded")
    assert checked("anthropic", [message], "call_1", "call_2") == []


def test_a_turn_attaches_no_more_images_than_one_request_may_carry() -> None:
    # Anthropic takes up to 100 images in a request: the 101st of a turn goes as a note.
    image = ImagePart.of(PNG, "image/png")
    results = [rich(f"call_{i}", parts=(image,)) for i in range(101)]
    blocks = anthropic_results(results)["content"]
    assert all(isinstance(b["content"], list) for b in blocks[:100])
    assert blocks[100]["content"] == snapshot(
        "[image: image/png, 69 bytes] (not attached: this turn already has the 100 attachments this model takes in one request)"
    )


def test_the_sentences_around_attachments_follow_the_locale() -> None:
    result = rich(parts=(ImagePart.of(PNG, "image/png"),))
    chat = openai_chat_results([result], locale="zh", images=True)[1]["content"]
    assert [p["text"] for p in chat if p["type"] == "text"] == snapshot(
        ["以下图片来自上方工具调用的结果,而不是来自用户。", "来自 `inspect` 的结果(调用 call_1):"]
    )
    gemini = gemini_results([result], locale="zh")["parts"][1]
    assert gemini == snapshot({"text": "来自 `inspect` 的结果:"})
