"""Content parts on the wire: which parts a provider takes inline, within its size limits.

A result with `parts` is planned into pieces, in order: text (text parts, and the note of every
part the provider cannot take) and `Media` (the parts it can). Each provider then renders the
pieces in its own blocks. A part over the provider's limit, or past what one turn may carry,
goes as its note with a sentence saying it was not attached, so a request is never refused for
its size (a refused result would be sent again, and refused again, on every later turn).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote, urlsplit

from .. import (
    AudioPart,
    ContentPart,
    ErrorCode,
    ImagePart,
    Interrupted,
    ResourcePart,
    TextPart,
    ToolResult,
)
from .._contract import decoded_size, part_note
from ._common import say

__all__ = [
    "ANTHROPIC",
    "GEMINI_BESIDE",
    "GEMINI_INSIDE",
    "OPENAI",
    "Accepts",
    "Budget",
    "Media",
    "Piece",
    "data_url",
    "file_name",
    "mark_error",
    "plan",
    "text_of",
]

MediaKind = Literal["image", "pdf", "audio", "text"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepts:
    """What one provider takes inline in a tool result, and how much of it."""

    images: frozenset[str]
    """Image MIME types sent as images."""
    pdf: bool = False
    """PDFs (a resource blob of `application/pdf`) sent as documents."""
    audio: frozenset[str] = frozenset()
    """Audio MIME types sent as audio."""
    text_documents: bool = False
    """Embedded text resources sent as documents (else as their text, under their note)."""
    max_image: int
    """Decoded bytes of one image."""
    max_file: int
    """Decoded bytes of one PDF or audio clip."""
    max_turn: int
    """Decoded bytes of everything attached to one turn's results together."""
    max_items: int
    """Attachments in one turn's results."""
    no_animated_gif: bool = False
    """Refuse animated GIFs (OpenAI takes only still ones)."""


MB = 1_000_000

# Anthropic Messages. Images: "image/jpeg", "image/png", "image/gif", "image/webp" (the API's
# Base64ImageSource.media_type). One image may be at most 5 MB, and the API measures its base64
# text ("image exceeds 5 MB maximum: 7004800 bytes > 5242880 bytes"), which is 3.75 MiB of
# image. PDFs: "Maximum request size 32 MB", for the whole request payload, base64 included,
# so all a turn attaches stays under 24 MB of bytes. "Up to 100 images per request".
ANTHROPIC = Accepts(
    images=frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"}),
    pdf=True,
    text_documents=True,
    max_image=5 * 1024 * 1024 * 3 // 4,
    max_file=32 * MB * 3 // 4,
    max_turn=32 * MB * 3 // 4,
    max_items=100,
)

# OpenAI (Responses `input_image` / `input_file`, and Chat Completions `image_url`). Images:
# "PNG, JPEG, WEBP, Non-animated GIF", "Up to 20MB per image", "Up to 50 MB image bytes per
# request", "Up to 500 individual images per request". PDFs: "up to 100 pages and 32MB of total
# content in a single request", across file inputs: the turn stays within 32 MB.
OPENAI = Accepts(
    images=frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"}),
    pdf=True,
    max_image=20 * MB,
    max_file=32 * MB,
    max_turn=32 * MB,
    max_items=500,
    no_animated_gif=True,
)

# Gemini. Inline data counts toward the request: "If your total request, including files and
# instructions, exceeds 20MB", use the File API, so a turn attaches at most 15 MB of bytes
# (20 MB of base64).
_GEMINI_MAX = 20 * MB * 3 // 4

# Beside the function responses, as ordinary `inlineData` parts of the same user content (every
# Gemini model): the input types Gemini documents for images ("PNG, JPEG, WEBP, HEIC, HEIF"),
# audio ("WAV, MP3, AIFF, AAC, OGG Vorbis, FLAC") and documents (PDF).
GEMINI_BESIDE = Accepts(
    images=frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}),
    pdf=True,
    audio=frozenset(
        {"audio/wav", "audio/mp3", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac"}
    ),
    max_image=_GEMINI_MAX,
    max_file=_GEMINI_MAX,
    max_turn=_GEMINI_MAX,
    max_items=3000,
)

# Inside `functionResponse.parts` ("Multimodal function responses", Gemini 3 models only):
# "Images: image/png, image/jpeg, image/webp; Documents: application/pdf, text/plain".
GEMINI_INSIDE = Accepts(
    images=frozenset({"image/png", "image/jpeg", "image/webp"}),
    pdf=True,
    max_image=_GEMINI_MAX,
    max_file=_GEMINI_MAX,
    max_turn=_GEMINI_MAX,
    max_items=3000,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Media:
    """A part the provider takes as it is."""

    kind: MediaKind
    mime: str
    data: str
    """Base64 (images, PDFs, audio), or the text of a text document."""
    name: str = ""
    """The resource's URI, for parts that are resources."""
    note: str = ""
    """The part as text (`part_note`), for formats that name what they attach."""


Piece = str | Media
"""Text (adjacent text already joined, one block per line), or an attachment."""


@dataclass(slots=True)
class Budget:
    """What the rest of one turn may still attach."""

    accepts: Accepts
    bytes_left: int = field(init=False)
    items_left: int = field(init=False)

    def __post_init__(self) -> None:
        self.bytes_left = self.accepts.max_turn
        self.items_left = self.accepts.max_items


def _megabytes(n: int) -> str:
    return f"{n / MB:.1f} MB"


def _animated_gif(data: str) -> bool:
    # A GIF with more than one graphic control block (one per frame) or the NETSCAPE2.0 loop
    # extension is animated. Undecodable data is treated as animated: not sent.
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return True
    return raw.count(b"\x21\xf9\x04") > 1 or b"NETSCAPE2.0" in raw


def _candidate(part: ContentPart, accepts: Accepts, note: str) -> Media | None:
    """The part as an attachment when the provider takes its kind (size not yet checked)."""
    if isinstance(part, ImagePart):
        if part.mime_type not in accepts.images:
            return None
        if accepts.no_animated_gif and part.mime_type == "image/gif" and _animated_gif(part.data):
            return None
        return Media(kind="image", mime=part.mime_type, data=part.data, note=note)
    if isinstance(part, AudioPart):
        if part.mime_type not in accepts.audio:
            return None
        return Media(kind="audio", mime=part.mime_type, data=part.data, note=note)
    if isinstance(part, ResourcePart):
        mime = part.mime_type or ""
        if part.text is not None:
            if not accepts.text_documents or not part.text:
                return None
            return Media(kind="text", mime="text/plain", data=part.text, name=part.uri, note=note)
        blob = part.blob or ""
        if not blob:
            return None
        kind: MediaKind | None = (
            "pdf"
            if mime == "application/pdf" and accepts.pdf
            else "image"
            if mime in accepts.images
            else "audio"
            if mime in accepts.audio
            else None
        )
        if kind is not None:
            return Media(kind=kind, mime=mime, data=blob, name=part.uri, note=note)
    return None


def _take(media: Media, budget: Budget, locale: str) -> Piece:
    """The attachment, or its note saying why it was not attached."""
    if media.kind == "text":
        return media  # text travels as text either way; only binary parts are capped
    accepts = budget.accepts
    size = decoded_size(media.data)
    limit = accepts.max_image if media.kind == "image" else accepts.max_file
    note = media.note
    if size > limit:
        return say(locale, "too_big", note=note, limit=_megabytes(limit))
    if budget.items_left <= 0:
        return say(locale, "over_count", note=note, limit=accepts.max_items)
    if size > budget.bytes_left:
        return say(locale, "over_budget", note=note, limit=_megabytes(accepts.max_turn))
    budget.bytes_left -= size
    budget.items_left -= 1
    return media


def plan(result: ToolResult, budget: Budget, locale: str) -> list[Piece] | None:
    """`result`'s parts as pieces for a provider, or None when plain text says it all.

    None for a result without parts, an interrupted call, and one whose parts the provider
    takes none of (its text view, `content`, is then exactly what is sent). Text pieces are
    never empty.
    """
    if not result.parts or isinstance(result, Interrupted):
        return None
    pieces: list[Piece] = []
    lines: list[str] = []
    changed = False

    def flush() -> None:
        text = "\n".join(line for line in lines if line)
        if text:
            pieces.append(text)
        lines.clear()

    for part in result.parts:
        if isinstance(part, TextPart):
            lines.append(part.text)
            continue
        note = part_note(part, locale)
        media = _candidate(part, budget.accepts, note)
        taken = _take(media, budget, locale) if media is not None else note
        if isinstance(taken, str):
            changed = changed or taken != note
            lines.append(taken)
            continue
        flush()
        pieces.append(taken)
        changed = True
    flush()
    return pieces if changed else None


def mark_error(pieces: list[Piece], result: ToolResult, locale: str) -> list[Piece]:
    """For formats with no error flag (OpenAI): a failure's text starts with its code."""
    if result.ok:
        return pieces
    code = result.error or ErrorCode.EXECUTION_ERROR
    if pieces and isinstance(pieces[0], str):
        return [say(locale, "error", code=code, content=pieces[0]), *pieces[1:]]
    return [say(locale, "error", code=code, content="").rstrip(), *pieces]


def text_of(pieces: list[Piece]) -> str:
    """The pieces as one text, attachments by their notes."""
    return "\n".join(p if isinstance(p, str) else p.note for p in pieces if p)


def data_url(media: Media) -> str:
    """`media` as a `data:` URL (what OpenAI takes for inline images and files)."""
    return f"data:{media.mime};base64,{media.data}"


def file_name(media: Media) -> str:
    """A file name for `media`: the last segment of its resource URI, else `document.pdf`."""
    path = unquote(urlsplit(media.name).path) if media.name else ""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name or "document.pdf"
