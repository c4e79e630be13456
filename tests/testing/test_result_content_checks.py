"""Tool results as lists: what each provider takes is answered, what it refuses is a 400."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from handrail.testing import Reply

IMAGE = base64.b64encode(b"\x89PNG\r\n\x1a\n....").decode("ascii")
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode("ascii")
NOT_BASE64 = "not base64!"


def chat(content: Any, *after: dict[str, Any]) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}
    return {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": "Look."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": content},
            *after,
        ],
    }


def chat_image(url: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}


def responses(output: Any) -> dict[str, Any]:
    return {
        "model": "gpt-test",
        "input": [
            {"role": "user", "content": "Look."},
            {"type": "function_call", "call_id": "call_1", "name": "shot", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": output},
        ],
    }


def anthropic(content: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "Look."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}],
            },
        ],
    }


def image_block(media_type: str = "image/png", data: str = IMAGE) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def gemini(response: Any = None, parts: Any = None, *beside: dict[str, Any]) -> dict[str, Any]:
    fr: dict[str, Any] = {"name": "shot", "response": response or {"output": "ok"}}
    if parts is not None:
        fr["parts"] = parts
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "Look."}]},
            {"role": "model", "parts": [{"functionCall": {"name": "shot", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": fr}, *beside]},
        ]
    }


def inline(mime: str = "image/png", data: str = IMAGE) -> dict[str, Any]:
    return {"inlineData": {"mimeType": mime, "data": data}}


VALID = [
    ("openai_chat", chat([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])),
    ("openai_chat", chat("caption", chat_image(f"data:image/png;base64,{IMAGE}"))),
    ("openai_chat", chat("caption", chat_image("https://example.com/a.png"))),
    (
        "openai_responses",
        responses(
            [
                {"type": "input_text", "text": "caption"},
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{IMAGE}",
                    "detail": "auto",
                },
                {
                    "type": "input_file",
                    "filename": "a.pdf",
                    "file_data": f"data:application/pdf;base64,{PDF}",
                },
            ]
        ),
    ),
    (
        "anthropic",
        anthropic(
            [
                {"type": "text", "text": "caption"},
                image_block("image/webp"),
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                },
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "notes"},
                    "title": "file:///notes.md",
                },
            ]
        ),
    ),
    ("gemini", gemini(None, [inline(), inline("application/pdf", PDF)])),
    ("gemini", gemini(None, None, {"text": "From the result:"}, inline("audio/wav"))),
]

BROKEN = [
    (
        "openai_chat",
        chat([{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]),
        "a tool message takes text parts only, not image_url",
    ),
    ("openai_chat", chat({"text": "x"}), "must be a string or text parts"),
    (
        "openai_chat",
        chat("caption", chat_image("data:image/bmp;base64,Qk0=")),
        "media type image/bmp is not one of",
    ),
    (
        "openai_chat",
        chat("caption", chat_image(f"data:image/png;base64,{NOT_BASE64}")),
        "base64 data does not decode",
    ),
    ("openai_responses", responses({"text": "x"}), "must be a string or a list"),
    (
        "openai_responses",
        responses([{"type": "image", "data": IMAGE}]),
        "must be input_text, input_image or input_file",
    ),
    (
        "openai_responses",
        responses([{"type": "input_image", "image_url": "data:image/png,raw"}]),
        "data:<media type>;base64,<data>",
    ),
    (
        "openai_responses",
        responses(
            [
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{IMAGE}",
                    "detail": "max",
                }
            ]
        ),
        "detail must be",
    ),
    (
        "openai_responses",
        responses([{"type": "input_file", "filename": "a.pdf"}]),
        "needs file_data, file_id or file_url",
    ),
    ("anthropic", anthropic([image_block("image/bmp")]), "media_type image/bmp is not one of"),
    ("anthropic", anthropic([image_block(data=NOT_BASE64)]), "base64 data does not decode"),
    ("anthropic", anthropic([{"type": "text", "text": ""}]), "must be non-empty"),
    (
        "anthropic",
        anthropic([{"type": "image_url", "image_url": {"url": "x"}}]),
        "text, image, document or search_result blocks, not image_url",
    ),
    (
        "anthropic",
        anthropic(
            [
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "text/csv", "data": PDF},
                }
            ]
        ),
        "must be application/pdf",
    ),
    ("gemini", gemini(None, [inline("audio/wav")]), "mimeType audio/wav is not one of"),
    ("gemini", gemini(None, [{"text": "x"}]), "must hold inlineData or fileData"),
    ("gemini", gemini("just text"), "response must be a JSON object"),
    ("gemini", gemini(None, None, inline(data=NOT_BASE64)), "base64 data does not decode"),
]


@pytest.mark.parametrize(("provider", "body"), VALID)
def test_list_form_results_each_provider_takes_are_answered(
    serve: Any, provider: str, body: dict[str, Any]
) -> None:
    server, ask = serve(Reply(text="I see it."))
    answer = ask(provider, body=body)
    assert answer.status == 200, server.problems
    assert server.problems == []


@pytest.mark.parametrize(("provider", "body", "says"), BROKEN)
def test_results_a_provider_refuses_are_a_400_and_a_problem(
    serve: Any, provider: str, body: dict[str, Any], says: str
) -> None:
    server, ask = serve(Reply(text="unused"))
    answer = ask(provider, body=body)
    assert answer.status == 400
    problems = server.problems
    assert any(says in p for p in problems), problems
    assert len(server.remaining) == 1
