"""What a provider refuses inside tool results and their attachments.

A tool result may be more than a string: Anthropic's `tool_result` takes text, image and
document blocks, OpenAI Responses' `function_call_output` takes input_text, input_image and
input_file items, Gemini's `functionResponse` takes media in its `parts`, and Chat Completions'
tool messages take text parts only. Each check returns the problems found as sentences; every
rule is one the provider documents (its request types, its accepted media types) or enforces
(base64 that does not decode is refused).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Any

from ._render import arr, obj, text

__all__ = ["CONTENT_CHECKS"]

# Anthropic `Base64ImageSource.media_type`; OpenAI "PNG, JPEG, WEBP, Non-animated GIF";
# Gemini multimodal function responses "image/png, image/jpeg, image/webp; application/pdf,
# text/plain".
ANTHROPIC_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
OPENAI_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
GEMINI_RESPONSE_MEDIA = frozenset(
    {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
)

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,(.*)$", re.DOTALL)


def _decodes(data: object) -> bool:
    if not isinstance(data, str) or not data:
        return False
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _data_url(value: object, at: str, allowed: frozenset[str] | None) -> list[str]:
    """Problems of a `data:` URL (a plain URL is not checked: the provider fetches it)."""
    url = text(value)
    if not url:
        return [f"{at}: no URL"]
    if not url.startswith("data:"):
        return []
    match = _DATA_URL.match(url)
    if match is None:
        return [f"{at}: a data URL must be data:<media type>;base64,<data>"]
    mime, data = match.groups()
    problems: list[str] = []
    if allowed is not None and mime not in allowed:
        problems.append(f"{at}: media type {mime} is not one of {', '.join(sorted(allowed))}")
    if not _decodes(data):
        problems.append(f"{at}: the base64 data does not decode")
    return problems


# -- OpenAI Chat Completions -----------------------------------------------------------------


def _chat_user_parts(content: object, at: str) -> list[str]:
    problems: list[str] = []
    for j, raw in enumerate(arr(content)):
        part = obj(raw) or {}
        if part.get("type") == "image_url":
            image = obj(part.get("image_url")) or {}
            problems += _data_url(image.get("url"), f"{at}.content[{j}]", OPENAI_IMAGES)
    return problems


def check_openai_chat_content(body: dict[str, Any]) -> list[str]:
    """Tool messages hold a string or text parts; user images are sound data URLs."""
    problems: list[str] = []
    for i, raw in enumerate(arr(body.get("messages"))):
        message = obj(raw) or {}
        at = f"messages[{i}]"
        role = message.get("role")
        content = message.get("content")
        if role == "tool" and not isinstance(content, str):
            parts = arr(content)
            if not isinstance(content, list):
                problems.append(f"{at}: a tool message's content must be a string or text parts")
                continue
            for j, part in enumerate(parts):
                kind = text((obj(part) or {}).get("type")) or "untyped"
                if kind != "text" or not isinstance((obj(part) or {}).get("text"), str):
                    problems.append(
                        f"{at}.content[{j}]: a tool message takes text parts only, not {kind}"
                    )
        elif role == "user":
            problems += _chat_user_parts(content, at)
    return problems


# -- OpenAI Responses ------------------------------------------------------------------------


def _responses_output_item(item: dict[str, Any], at: str) -> list[str]:
    kind = text(item.get("type"))
    if kind == "input_text":
        return [] if isinstance(item.get("text"), str) else [f"{at}: input_text without text"]
    if kind == "input_image":
        if item.get("file_id"):
            return []
        problems = _data_url(item.get("image_url"), at, OPENAI_IMAGES)
        detail = item.get("detail")
        if detail is not None and detail not in ("low", "high", "auto", "original"):
            problems.append(f"{at}: detail must be low, high, auto or original")
        return problems
    if kind == "input_file":
        if item.get("file_id") or item.get("file_url"):
            return []
        if "file_data" not in item:
            return [f"{at}: input_file needs file_data, file_id or file_url"]
        return _data_url(item.get("file_data"), at, None)
    return [f"{at}: a function_call_output item must be input_text, input_image or input_file"]


def check_openai_responses_content(body: dict[str, Any]) -> list[str]:
    """A `function_call_output`'s output is a string or a list of input items."""
    problems: list[str] = []
    items = body.get("input")
    for i, raw in enumerate(arr(items)):
        item = obj(raw) or {}
        if item.get("type") != "function_call_output":
            continue
        output = item.get("output")
        at = f"input[{i}].output"
        if isinstance(output, str):
            continue
        parts = arr(output)
        if not isinstance(output, list):
            problems.append(f"{at} must be a string or a list of input items")
            continue
        for j, part in enumerate(parts):
            problems += _responses_output_item(obj(part) or {}, f"{at}[{j}]")
    return problems


# -- Anthropic -------------------------------------------------------------------------------


def _anthropic_block(block: dict[str, Any], at: str) -> list[str]:
    kind = text(block.get("type"))
    source = obj(block.get("source")) or {}
    source_type = text(source.get("type"))
    if kind == "text":
        if not text(block.get("text")):
            return [f"{at}: text content blocks must be non-empty"]
        return []
    if kind == "image":
        if source_type == "url":
            return [] if text(source.get("url")) else [f"{at}: an image url source without url"]
        if source_type != "base64":
            return [f"{at}: an image source must be base64 or url"]
        problems: list[str] = []
        mime = text(source.get("media_type"))
        if mime not in ANTHROPIC_IMAGES:
            allowed = ", ".join(sorted(ANTHROPIC_IMAGES))
            problems.append(f"{at}: image media_type {mime or 'none'} is not one of {allowed}")
        if not _decodes(source.get("data")):
            problems.append(f"{at}: the image's base64 data does not decode")
        return problems
    if kind == "document":
        if source_type == "base64":
            problems = []
            if source.get("media_type") != "application/pdf":
                problems.append(f"{at}: a base64 document must be application/pdf")
            if not _decodes(source.get("data")):
                problems.append(f"{at}: the document's base64 data does not decode")
            return problems
        if source_type == "text":
            if source.get("media_type") != "text/plain" or not isinstance(source.get("data"), str):
                return [f"{at}: a text document needs media_type text/plain and data"]
            return []
        if source_type in ("url", "content", "file"):
            return []
        return [f"{at}: a document source must be base64, text, url, content or file"]
    if kind == "search_result":
        return []
    return [f"{at}: a tool_result holds text, image, document or search_result blocks, not {kind}"]


def check_anthropic_content(body: dict[str, Any]) -> list[str]:
    """A `tool_result`'s content is a string or a list of text, image and document blocks."""
    problems: list[str] = []
    for i, raw in enumerate(arr(body.get("messages"))):
        for k, block_raw in enumerate(arr((obj(raw) or {}).get("content"))):
            block = obj(block_raw) or {}
            if block.get("type") != "tool_result":
                continue
            content = block.get("content")
            at = f"messages[{i}].content[{k}].content"
            if content is None or isinstance(content, str):
                continue
            blocks = arr(content)
            if not isinstance(content, list):
                problems.append(f"{at} must be a string or a list of blocks")
                continue
            for j, inner in enumerate(blocks):
                problems += _anthropic_block(obj(inner) or {}, f"{at}[{j}]")
    return problems


# -- Gemini ----------------------------------------------------------------------------------


def _gemini_inline(blob: dict[str, Any], at: str, allowed: frozenset[str] | None) -> list[str]:
    problems: list[str] = []
    mime = text(blob.get("mimeType"))
    if not mime:
        problems.append(f"{at}: inlineData without mimeType")
    elif allowed is not None and mime not in allowed:
        problems.append(f"{at}: mimeType {mime} is not one of {', '.join(sorted(allowed))}")
    if not _decodes(blob.get("data")):
        problems.append(f"{at}: the inlineData's base64 data does not decode")
    return problems


def _gemini_response(fr: dict[str, Any], at: str) -> list[str]:
    problems: list[str] = []
    if "response" in fr and obj(fr.get("response")) is None:
        problems.append(f"{at}.response must be a JSON object")
    for j, raw in enumerate(arr(fr.get("parts"))):
        part = obj(raw) or {}
        blob = obj(part.get("inlineData"))
        if blob is not None:
            problems += _gemini_inline(blob, f"{at}.parts[{j}]", GEMINI_RESPONSE_MEDIA)
        elif obj(part.get("fileData")) is None:
            problems.append(f"{at}.parts[{j}]: a part must hold inlineData or fileData")
    return problems


def check_gemini_content(body: dict[str, Any]) -> list[str]:
    """Function responses hold an object and sound media parts; inline data decodes."""
    problems: list[str] = []
    for i, raw in enumerate(arr(body.get("contents"))):
        for j, part_raw in enumerate(arr((obj(raw) or {}).get("parts"))):
            part = obj(part_raw) or {}
            at = f"contents[{i}].parts[{j}]"
            fr = obj(part.get("functionResponse"))
            if fr is not None:
                problems += _gemini_response(fr, f"{at}.functionResponse")
            blob = obj(part.get("inlineData"))
            if blob is not None:
                problems += _gemini_inline(blob, at, None)
    return problems


CONTENT_CHECKS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "openai_chat": check_openai_chat_content,
    "openai_responses": check_openai_responses_content,
    "anthropic": check_anthropic_content,
    "gemini": check_gemini_content,
}
